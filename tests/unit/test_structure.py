"""The shape of ``src/stuntset`` as its imports show it: no import cycle anywhere, each part
importing only what the package map (docs/design.md) says it may, and the fake CLI processes
importing nothing but their runtime.

The graph is read from the source (``ast``), not from an interpreter's ``sys.modules``, so a
lazy import inside a function counts exactly like one at the top of the module: a circle
that is only closed at call time is still a circle for the reader, and the next person to
hoist the import gets an ``ImportError`` for it.

What counts as an edge from module ``a`` to module ``b`` of the package:

* ``import b`` / ``from b import x`` / ``from a_package import b`` anywhere in ``a``: at
  module level, in a function, in a class, in ``try`` or ``if`` blocks;
* and the body of ``if TYPE_CHECKING:``, for both checks. Those imports never run, so they
  cannot make an import order fail; but a circle they close is still two modules that
  each need the other to be read (a turn annotating the session that plays it, the session
  holding the turn), so ``src`` has none even counting them: a callee names a face of its
  caller (a protocol in a module below both: ``doubles/cli/claude/_process/faces.py``,
  ``codex/_process/app_state.py``, ``providers/codex/_run.RunHost``) or the state it reads
  has an owner of its own (``explain/row.Start``). For the "may import" rules too: a type
  from a higher layer is a dependency on it.

A module's implicit import of its parent packages (``import a.b.c`` runs ``a/__init__`` and
``a/b/__init__``) is not an edge: it is not written in ``a``, and ``__init__`` modules are
checked for their own imports like any other.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

import stuntset

SRC = Path(stuntset.__file__).parent


# --- the graph ------------------------------------------------------------------------------


def module_names(root: Path) -> dict[str, Path]:
    """``{dotted name: file}`` for every module of the package at ``root``."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> Iterable[str]:
    """The dotted names ``node`` imports (for ``from m import x``: ``m.x`` and ``m``; the
    caller keeps the longest one that is a module)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        anchor = parts[: len(parts) - node.level + 1]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    for alias in node.names:
        yield f"{base}.{alias.name}"


def imports_of(
    name: str, path: Path, modules: Mapping[str, Path], *, type_checking: bool
) -> set[str]:
    """The package's modules that module ``name`` (file ``path``) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def resolve(dotted: str) -> None:
        while dotted and dotted not in modules:
            dotted = dotted.rpartition(".")[0]
        if dotted and dotted != name:
            found.add(dotted)

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                if type_checking:
                    for statement in child.body:
                        visit_statement(statement)
                for statement in child.orelse:
                    visit_statement(statement)
            else:
                visit_statement(child)

    def visit_statement(node: ast.AST) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            for dotted in _imported(node, package):
                resolve(dotted)
        visit(node)

    visit(ast.parse(path.read_text("utf-8"), str(path)))
    return found


def import_graph(root: Path, *, type_checking: bool = False) -> dict[str, set[str]]:
    """``{module: modules of the same package it imports}`` for the package at ``root``."""
    modules = module_names(root)
    return {
        name: imports_of(name, path, modules, type_checking=type_checking)
        for name, path in modules.items()
    }


@functools.cache
def src_graph(*, type_checking: bool) -> dict[str, set[str]]:
    """The import graph of ``src/stuntset`` (read once per kind for the whole module)."""
    return import_graph(SRC, type_checking=type_checking)


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """One import circle per strongly connected component with more than one module (or a
    module importing itself), as a path ``[a, b, …, a]``; sorted, so messages are stable."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(start: str) -> None:  # Tarjan's algorithm, iteratively
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph.get(node, ()):
                        components.append(component)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return sorted(_circle(component, graph) for component in components)


def _circle(component: set[str], graph: Mapping[str, set[str]]) -> list[str]:
    """A shortest circle through the component's first module (breadth first)."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph.get(node, ())):
                if target == start:
                    return [*paths[node], start]
                if target in component and target not in paths:
                    paths[target] = [*paths[node], target]
                    following.append(target)
        frontier = following
    raise AssertionError(f"no circle through {start}")  # pragma: no cover


def cycle_report(found: list[list[str]]) -> str:
    return "import cycles: " + "; ".join(" -> ".join(circle) for circle in found)


# --- no cycle -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("type_checking", [False, True])
def test_src_has_no_import_cycle(type_checking: bool) -> None:
    found = cycles(src_graph(type_checking=type_checking))
    assert not found, cycle_report(found)


def write_package(root: Path, files: Mapping[str, str]) -> Path:
    package = root / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    return package


def test_the_cycle_check_names_a_cycle_closed_inside_a_function(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "a.py": "from pkg.b import thing\n",
            "b.py": "thing = 1\ndef later():\n    from pkg import a\n",
            "c.py": "import pkg.a\n",  # on no circle
        },
    )
    found = cycles(import_graph(package))
    assert cycle_report(found) == "import cycles: pkg.a -> pkg.b -> pkg.a"


def test_the_cycle_check_follows_relative_imports_and_subpackages(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "sub/__init__.py": "",
            "sub/x.py": "from . import y\n",
            "sub/y.py": "from ..z import f\n",
            "z.py": "def f():\n    from .sub.x import g\n",
        },
    )
    assert cycles(import_graph(package)) == [["pkg.sub.x", "pkg.sub.y", "pkg.z", "pkg.sub.x"]]


def test_a_circle_closed_under_type_checking_is_named_in_the_checker_s_graph(
    tmp_path: Path,
) -> None:
    package = write_package(
        tmp_path,
        {
            "run.py": "def play():\n    from pkg.turn import Turn\n",
            "turn.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from pkg.run import Session\n",
        },
    )
    assert cycles(import_graph(package)) == []
    assert import_graph(package, type_checking=True)["pkg.turn"] == {"pkg.run"}
    found = cycles(import_graph(package, type_checking=True))
    assert cycle_report(found) == "import cycles: pkg.run -> pkg.turn -> pkg.run"


# --- the package map's "may import" rules ----------------------------------------------------

#: The foundation: vocabulary every layer may use (each also has its own rule below).
FOUNDATION = frozenset(
    {"errors", "events", "ids", "clock", "seams", "script", "scenarios", "contract", "waiting"}
)

#: What each part of ``src/stuntset`` may import from the rest of it (a part is a top-level
#: module, a top-level package, or ``doubles.<name>``), besides itself. docs/design.md shows
#: the same map; this is the one that is checked.
MAY_IMPORT: dict[str, frozenset[str]] = {
    # foundation: the vocabulary, bottom first
    "errors": frozenset(),
    "events": frozenset(),
    "ids": frozenset(),
    "clock": frozenset({"errors"}),
    "seams": frozenset({"clock", "ids"}),
    "script": frozenset({"errors"}),
    "scenarios": frozenset({"errors", "script"}),
    "contract": frozenset({"errors", "events"}),
    "waiting": frozenset({"errors", "events"}),
    "stub": frozenset({"errors"}),
    "_bind": frozenset({"errors"}),
    "_demo_rows": frozenset(),
    # the resources a test may leak (processes, descriptors, streams), read from the OS, and
    # the leak check over them: the doubles record their streams in the first
    "_resources": frozenset(),
    "_leak_check": frozenset({"_resources", "errors", "waiting"}),
    # uvicorn on a thread, stopping without a poll tick: the loopback servers of the model
    # double, the cassettes and the MCP double, and the daemon
    "_uvicorn_server": frozenset(),
    # the model wires: codecs, framing, read-back and request views, behind one registry
    "wires": frozenset({"errors", "ids", "script"}),
    # adapters: a wire's stream → events; the session log: events → views
    "providers": FOUNDATION,
    "log": frozenset({"errors", "events"}),
    "driver": FOUNDATION | {"providers"},
    # the doubles: script → wire (never the adapters, the log or each other)
    "doubles.model": FOUNDATION | {"_bind", "_resources", "_uvicorn_server", "wires"},
    "doubles.cli": FOUNDATION,
    "doubles.mcp": FOUNDATION | {"_bind", "_resources", "_uvicorn_server"},
    # why a red test is red: the doubles' journals read into a timeline, traces, the
    # deadline, and the mismatch window the cassettes and checks show
    "explain": FOUNDATION | {"wires", "doubles.model", "doubles.cli"},
    # built on the doubles and the log
    "cassettes": FOUNDATION
    | {"wires", "_bind", "_uvicorn_server", "doubles.model", "doubles.cli", "log", "explain"},
    "runtime": FOUNDATION | {"providers", "log", "_uvicorn_server"},
    # the checks read everything below them
    "checks": FOUNDATION
    | {"wires", "providers", "log", "driver", "doubles.model", "doubles.cli", "cassettes"}
    | {"runtime"}
    | {"_leak_check", "_resources", "explain"},
    # the fuzzer's strategies: scripts for the doubles, judged by the checks (hypothesis extra)
    "strategies": FOUNDATION | {"wires", "doubles.model", "doubles.cli", "checks"},
    # evals run agents against the doubles and grade them with the checks
    "evals": FOUNDATION | {"providers", "driver", "doubles.model", "checks", "_plugin_support"},
    # the web console shows the doubles' journals, the daemon's sessions and the cassettes
    "console": FOUNDATION
    | {"wires", "doubles.model", "cassettes", "runtime", "providers", "log", "_bind"},
    # the browser snapshot tier (snapshot files are compared as cassette snapshots are)
    "browser": FOUNDATION | {"cassettes"},
    # drift plays the catalog through the real binaries and the fakes, through the adapters
    "drift": FOUNDATION | {"providers", "driver", "doubles.model", "doubles.cli", "checks"},
}

#: Entry points: the commands (``cli`` parses, ``commands`` holds their bodies), the plugin
#: and the public namespace. They may import anything; only they (and the glue modules below)
#: may import each other's helpers.
ENTRY_POINTS = frozenset(
    {
        "stuntset",
        "cli",
        "commands",
        "pytest_plugin",
        "_demo",
        "_cli_output",
        "_plugin_support",
        "scenarios_reference",
    }
)

#: A package's ``_pytest`` and ``_demo`` modules are its fixture and demo glue: besides what
#: their package may import, they may use these helpers. (Its command's body is not here: it is
#: a module of ``stuntset.commands``, above every package it mounts.)
GLUE_MODULES = frozenset({"_pytest", "_demo"})
GLUE_HELPERS = frozenset({"_cli_output", "_plugin_support", "_demo_rows", "_bind"}) | FOUNDATION


def part_of(module: str) -> str:
    """The part of the map a module belongs to (``stuntset.doubles.cli.claude._demo`` →
    ``doubles.cli``)."""
    parts = module.split(".")[1:]
    if not parts:
        return "stuntset"
    if parts[0] == "doubles" and len(parts) > 1:
        return f"doubles.{parts[1]}"
    return parts[0]


def rule_breaks(
    graph: Mapping[str, set[str]],
    may_import: Mapping[str, frozenset[str]],
    entry_points: frozenset[str] = frozenset(),
) -> list[str]:
    """Every import that the rules do not allow, as ``"a imports b (part x may not import
    part y)"``; a part with no rule is reported once."""
    breaks = []
    for module, imported in sorted(graph.items()):
        part = part_of(module)
        if part in entry_points or part == "doubles":
            continue
        if part not in may_import:
            breaks.append(f"{module}: part {part!r} has no rule in the package map")
            continue
        allowed = may_import[part]
        if module.rpartition(".")[2] in GLUE_MODULES and module.count(".") > 1:
            allowed = allowed | GLUE_HELPERS
        for target in sorted(imported):
            other = part_of(target)
            if other != part and other not in allowed:
                breaks.append(f"{module} imports {target} ({part} may not import {other})")
    return breaks


@pytest.mark.slow
def test_every_import_in_src_follows_the_package_map() -> None:
    breaks = rule_breaks(src_graph(type_checking=True), MAY_IMPORT, ENTRY_POINTS)
    assert breaks == []


def test_the_package_map_check_names_an_import_it_forbids(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "events.py": "",
            "log/__init__.py": "from pkg import events\n",
            "providers/__init__.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from pkg.log import x\n",
            "providers/_demo.py": "from pkg import _demo_rows\n",  # glue may use the demo rows
            "_demo_rows.py": "",
            "extra.py": "",
        },
    )
    rules = {
        "events": frozenset(),
        "log": frozenset({"events"}),
        "providers": frozenset({"events"}),
        "_demo_rows": frozenset(),
    }
    found = rule_breaks(import_graph(package, type_checking=True), rules, frozenset({"stuntset"}))
    assert found == [
        "pkg.extra: part 'extra' has no rule in the package map",
        "pkg.providers imports pkg.log (providers may not import log)",
    ]


def test_every_part_of_src_is_on_the_map() -> None:
    parts = {part_of(module) for module in module_names(SRC)}
    assert parts - set(MAY_IMPORT) - ENTRY_POINTS - {"doubles"} == set()


def test_no_part_below_the_entry_points_imports_one() -> None:
    """The demo is collected from below: no layer imports ``stuntset._demo`` (or another
    entry point); they are absent from every rule."""
    for part, allowed in MAY_IMPORT.items():
        assert not allowed & ENTRY_POINTS - GLUE_HELPERS, part


def command_bodies_in_packages(root: Path) -> list[str]:
    """Modules named ``_cli`` inside a package: a command body kept below what it mounts."""
    return sorted(m for m in module_names(root) if m.endswith("._cli") and m.count(".") > 1)


def test_command_bodies_live_in_stuntset_commands() -> None:
    """No package keeps its command's body (``_cli.py``): those import upward (a ``serve
    --console`` mounts the console); ``stuntset.commands`` holds them, above every part."""
    assert "stuntset.commands.serve" in module_names(SRC)
    assert command_bodies_in_packages(SRC) == []


def test_the_command_body_check_names_a_package_s_cli_module(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {"_cli.py": "", "log/__init__.py": "", "log/_cli.py": "", "commands/log.py": ""},
    )
    assert command_bodies_in_packages(package) == ["pkg.log._cli"]


# --- the fake CLI processes ------------------------------------------------------------------

FAKE_PROCESS = ("stuntset.doubles.cli._runtime", "stuntset.doubles.cli._replay_run")


def fake_process_breaks(graph: Mapping[str, set[str]]) -> list[str]:
    """Imports of fake-process code (``_runtime``, ``_replay_run``, any ``._process``
    package) other than the runtime and modules of its own ``_process`` package."""
    breaks = []
    for module in sorted(m for m in graph if m in FAKE_PROCESS or "._process" in m):
        own = module.rpartition("._process")[0] + "._process" if "._process" in module else module
        for target in sorted(graph[module]):
            if target != FAKE_PROCESS[0] and not target.startswith(own + "."):
                breaks.append(f"{module} (fake process) imports {target}")
    return breaks


@pytest.mark.parametrize("type_checking", [False, True])
def test_the_fake_processes_import_only_the_runtime_and_their_own_program(
    type_checking: bool,
) -> None:
    """Code that runs in a fake CLI process imports, of stuntset, only the shared runtime and
    modules of its own ``_process`` package (the launcher maps the packages above in bare)."""
    graph = src_graph(type_checking=type_checking)
    assert "stuntset.doubles.cli.claude._process.run" in graph
    assert fake_process_breaks(graph) == []


def test_the_fake_process_check_names_a_forbidden_import() -> None:
    graph = {
        "stuntset.doubles.cli.claude._process.run": {
            "stuntset.doubles.cli._runtime",
            "stuntset.doubles.cli.claude._process.turn",
            "stuntset.doubles.cli.claude",  # the test-process side: not in the fake process
            "stuntset.doubles.cli.codex._process.common",  # another program
        },
        "stuntset.doubles.cli._runtime": {"stuntset.script"},
    }
    assert fake_process_breaks(graph) == [
        "stuntset.doubles.cli._runtime (fake process) imports stuntset.script",
        "stuntset.doubles.cli.claude._process.run (fake process) imports "
        "stuntset.doubles.cli.claude",
        "stuntset.doubles.cli.claude._process.run (fake process) imports "
        "stuntset.doubles.cli.codex._process.common",
    ]


# --- a model wire is named only in stuntset.wires ---------------------------------------------


def wire_marks() -> frozenset[str]:
    """What names a model wire: its names (and older names), its API paths and endpoints, the
    Gemini method suffixes its pattern routes by."""
    from stuntset.wires import WIRES

    marks = {name for wire in WIRES for name in (wire.name, *wire.aliases)}
    marks |= {path for wire in WIRES for path in (*wire.paths, wire.endpoint) if path}
    marks |= {f":{wire.pattern.rpartition(':')[2]}" for wire in WIRES if wire.pattern}
    return frozenset(marks | {":streamGenerateContent", "gemini"})


#: Parts that read a wire only through the registry: not even its paths appear in them.
ASK_THE_REGISTRY = frozenset({"cassettes", "checks"})


def wire_naming_breaks(
    root: Path, marks: frozenset[str], strict_parts: frozenset[str] = ASK_THE_REGISTRY
) -> list[str]:
    """Every string literal outside ``<root>/wires/`` that names a wire: one equal to a wire
    name anywhere (a per-wire table or branch, ``"gemini"`` or ``"openai-chat"``), and in
    ``strict_parts`` also one equal to a wire's path or endpoint, or ending with its method."""
    names = {mark for mark in marks if not mark.startswith(("/", ":"))}
    breaks: list[tuple[str, int, str]] = []
    for module, path in sorted(module_names(root).items()):
        part = part_of(module)
        if part == "wires":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            text = node.value
            named = text in names or (
                part in strict_parts
                and (text in marks or text.endswith(tuple(m for m in marks if m[0] == ":")))
            )
            if named:
                breaks.append(
                    (module, node.lineno, f"{module}:{node.lineno} names a wire: {text!r}")
                )
    return [line for _, _, line in sorted(breaks)]


def test_no_part_outside_stuntset_wires_names_a_wire() -> None:
    """A wire's name, paths and routes live in its module of ``stuntset.wires``; the double,
    the cassettes, the checks, docs and banners iterate the registry (docs/design.md,
    "Adding a wire"). Plain ``grep -rn '"gemini"' src/stuntset --include=*.py`` shows the
    same: matches only under ``stuntset/wires/`` — and the fake ``gemini`` CLI's own name where
    the fake CLIs are listed (``FAKE_CLI_NAME``): a program, not the model wire."""
    assert not_the_fake_cli(wire_naming_breaks(SRC, wire_marks())) == []


def not_the_fake_cli(breaks: list[str], where: tuple[str, ...] | None = None) -> list[str]:
    """``breaks`` without the fake gemini CLI naming itself where it may (``FAKE_CLI_NAME``)."""
    allowed = FAKE_CLI_NAME if where is None else where
    return [b for b in breaks if not (b.startswith(allowed) and b.endswith("'gemini'"))]


def test_the_fake_cli_allowance_hides_only_its_own_name_in_its_own_modules(
    tmp_path: Path,
) -> None:
    package = write_package(
        tmp_path,
        {
            "doubles/cli/__init__.py": 'PROGRAMS = ("claude", "gemini")\nBAD = "openai-chat"\n',
            "checks/__init__.py": 'TABLE = {"gemini": 1}\n',
        },
    )
    marks = frozenset({"gemini", "openai-chat"})
    breaks = wire_naming_breaks(package, marks)
    assert not_the_fake_cli(breaks, ("pkg.doubles.cli:",)) == [
        "pkg.checks:1 names a wire: 'gemini'",
        "pkg.doubles.cli:2 names a wire: 'openai-chat'",
    ]


#: Where the fake ``gemini`` CLI is named as a program (``install_cli("gemini")``, its package,
#: the ``fake_gemini`` fixture, the drift adapter and its column): the word is also the model
#: wire's name.
FAKE_CLI_NAME = tuple(
    f"{module}:"
    for module in (
        "stuntset.cli",
        "stuntset.doubles.cli",
        "stuntset.doubles.cli._neutral",  # the catalog's tools as each fake CLI's own
        "stuntset.doubles.cli.gemini",
        "stuntset.drift.gemini_cli",
        "stuntset.drift.native",
        "stuntset.drift.report",
        "stuntset.drift.runners",
        "stuntset.pytest_plugin",
    )
)


def test_the_wire_naming_check_names_a_table_outside_the_registry(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "wires/__init__.py": 'NAME = "gemini"\n',  # the registry may
            "checks/__init__.py": 'TABLE = {"gemini": 1}\nPATH = "/v1/messages"\n',
            "cassettes/read.py": 'def of(p):\n    return p.endswith(":generateContent")\n',
            "doubles/model/app.py": 'GOOD = "/v1/messages"\nBAD = "openai-chat"\n',
            "console/view.py": '"""Docs may say gemini, openai-chat."""\n',
        },
    )
    marks = frozenset({"gemini", "openai-chat", "/v1/messages", ":generateContent"})
    assert wire_naming_breaks(package, marks) == [
        "pkg.cassettes.read:2 names a wire: ':generateContent'",
        "pkg.checks:1 names a wire: 'gemini'",
        "pkg.checks:2 names a wire: '/v1/messages'",
        "pkg.doubles.model.app:2 names a wire: 'openai-chat'",
    ]


# --- one listening socket ---------------------------------------------------------------------

#: Where a listening socket may be made: ``_bind.listening_socket`` (every loopback server of
#: the doubles and the cassettes, and the commands' port checks), and the daemon's own
#: loopback-only listener (its messages name the daemon's options).
SOCKET_MAKERS = frozenset({"stuntset._bind", "stuntset.runtime.daemon"})


@functools.cache
def nodes_of(root: Path) -> dict[str, list[ast.AST]]:
    """``{module: every node of its syntax tree}`` for the package at ``root`` (walked once
    for all the checks that read every node)."""
    return {
        module: list(ast.walk(ast.parse(path.read_text("utf-8"), str(path))))
        for module, path in sorted(module_names(root).items())
    }


def socket_maker_breaks(root: Path, makers: frozenset[str]) -> list[str]:
    """Every module outside ``makers`` that sets ``TCP_NODELAY`` itself (a listener of its
    own, beside the shared one)."""
    breaks = []
    for module, nodes in nodes_of(root).items():
        if module in makers:
            continue
        for node in nodes:
            if isinstance(node, ast.Attribute) and node.attr == "TCP_NODELAY":
                breaks.append(f"{module}:{node.lineno} makes its own listening socket")
    return breaks


@pytest.mark.slow
def test_every_listening_socket_comes_from_one_function() -> None:
    """The cassettes' loopback servers, the model double's and the MCP double's listen on
    ``stuntset._bind.listening_socket`` (no copy of it with its own messages)."""
    assert socket_maker_breaks(SRC, SOCKET_MAKERS) == []


def test_the_socket_check_names_a_copy_of_the_listener(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "_bind.py": "import socket\nOPT = socket.TCP_NODELAY\n",
            "cassettes/_loopback.py": "import socket\n\n\ndef _bound():\n"
            "    s = socket.socket()\n    s.setsockopt(6, socket.TCP_NODELAY, 1)\n",
        },
    )
    assert socket_maker_breaks(package, frozenset({"pkg._bind"})) == [
        "pkg.cassettes._loopback:6 makes its own listening socket"
    ]


# --- one error hierarchy ----------------------------------------------------------------------


def error_class_breaks(root: Path, error_names: frozenset[str]) -> list[str]:
    """Every class outside ``<root>/errors.py`` that derives from one of ``error_names`` (the
    hierarchy's classes): a stuntset error defined beside its raiser instead of in the tree."""
    breaks = []
    for module, nodes in nodes_of(root).items():
        if module.rpartition(".")[2] == "errors":
            continue
        for node in nodes:
            if not isinstance(node, ast.ClassDef):
                continue
            bases = {
                base.id if isinstance(base, ast.Name) else base.attr
                for base in node.bases
                if isinstance(base, ast.Name | ast.Attribute)
            }
            if bases & error_names:
                breaks.append(f"{module}:{node.lineno} defines {node.name}, a stuntset error")
    return breaks


@pytest.mark.slow
def test_every_stuntset_error_is_defined_in_errors_py() -> None:
    """The hierarchy is one tree in ``stuntset.errors`` (drawn in its docstring); a module
    raises its errors, it does not define them."""
    from stuntset import errors

    names = frozenset(
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, errors.StuntsetError)
    )
    assert {"StuntsetError", "UsageError", "HarnessFailure", "ScriptError"} <= names
    assert error_class_breaks(SRC, names) == []


def test_the_error_check_names_an_error_defined_elsewhere(tmp_path: Path) -> None:
    package = write_package(
        tmp_path,
        {
            "errors.py": "class UsageError(ValueError):\n    pass\n",
            "log/sqlite.py": "from pkg import errors\n\n\nclass Locked(errors.UsageError):\n"
            "    pass\n\n\nclass _Retry(Exception):\n    pass\n",
            "cli.py": "from pkg.errors import UsageError\nclass Bad(UsageError): ...\n",
        },
    )
    assert error_class_breaks(package, frozenset({"UsageError"})) == [
        "pkg.cli:2 defines Bad, a stuntset error",
        "pkg.log.sqlite:4 defines Locked, a stuntset error",
    ]


# --- another part's private modules ------------------------------------------------------------

#: The catalogue of current violations (docs/design.md, "Layout conventions"): imports of a
#: private module of another part, each left for a reason or for later. A new one fails
#: until it imports the part's face (or the piece moves to where both can reach it).
KNOWN_PRIVATE_IMPORTS = frozenset(
    {
        # the cassettes' demo drives the fake claude through its minimal client
        "stuntset.cassettes._demo -> stuntset.doubles.cli.claude._client",
        # cassette replay through the fake CLIs: their installer and replay process
        "stuntset.cassettes.cli_replay -> stuntset.doubles.cli._install",
        "stuntset.cassettes.diff -> stuntset.doubles.cli._replay_run",
        "stuntset.explain.sources -> stuntset.doubles.cli._install",
        # a cassette read as a script: the script file loader's internals
        "stuntset.cassettes.to_script -> stuntset.script._load",
        # the fake CLIs' plan compilers: the step classes' module (for the renderers' types)
        "stuntset.doubles.cli.claude -> stuntset.script._steps",
        "stuntset.doubles.cli.codex -> stuntset.script._steps",
        "stuntset.doubles.cli.gemini -> stuntset.script._steps",
        # drift plays the conformance scenarios and reads codex items as the adapter does
        "stuntset.drift.claude_session -> stuntset.checks._conformance_play",
        "stuntset.drift.runners -> stuntset.checks._conformance_play",
        "stuntset.drift.report -> stuntset.checks._grid",
        "stuntset.drift.codex_exec -> stuntset.providers._codex_turn_items",
        "stuntset.drift.codex_exec -> stuntset.providers._crash_kinds",
        "stuntset.drift.gemini_cli -> stuntset.providers._crash_kinds",
        # drift plays the catalog's neutral tools as the fake CLIs play them: their one table
        "stuntset.drift.gemini_cli -> stuntset.doubles.cli._neutral",
        "stuntset.drift.native -> stuntset.doubles.cli._neutral",
    }
)


def private_import_breaks(
    graph: Mapping[str, set[str]], entry_points: frozenset[str] = frozenset()
) -> list[str]:
    """Every import of another part's private module (a name under the part that starts with
    ``_``), as ``"a -> b"``; entry points, and the top-level helper modules that are parts of
    their own (``_bind``, ``_resources``…), are exempt."""
    breaks = []
    for module, imported in sorted(graph.items()):
        part = part_of(module)
        if part in entry_points:
            continue
        for target in sorted(imported):
            other = part_of(target)
            inner = target.split(".")[1:]
            if other == part or other in entry_points or inner[0].startswith("_"):
                continue
            if any(name.startswith("_") for name in inner):
                breaks.append(f"{module} -> {target}")
    return breaks


@pytest.mark.slow
def test_no_part_imports_another_part_s_private_module() -> None:
    breaks = set(private_import_breaks(src_graph(type_checking=True), ENTRY_POINTS))
    assert breaks - KNOWN_PRIVATE_IMPORTS == set()
    assert KNOWN_PRIVATE_IMPORTS - breaks == set()  # a fixed one leaves the catalogue


def test_the_private_import_check_names_a_private_module_of_another_part() -> None:
    graph = {
        "stuntset.cassettes.record": {
            "stuntset.doubles.model._server",  # another part's private module
            "stuntset.doubles.model",  # its face
            "stuntset.cassettes._loopback",  # its own
            "stuntset._bind",  # a top-level helper, a part of its own
        },
        "stuntset.commands.serve": {"stuntset.doubles.model._lane"},  # an entry point
    }
    assert private_import_breaks(graph, frozenset({"commands"})) == [
        "stuntset.cassettes.record -> stuntset.doubles.model._server"
    ]
