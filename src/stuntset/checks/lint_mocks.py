"""Fakes over mocks: find patches of a project's own modules in its tests.

``find_mock_patches(paths, packages=...)`` parses each Python file (``ast``, nothing is
imported or run) and reports every ``patch("pkg.mod.attr")``, ``patch.object(obj, "attr")``,
``patch.dict("pkg.mod.X")`` and ``patch.multiple("pkg.mod")`` — as ``mock.patch``,
``unittest.mock.patch``, a bare imported ``patch``, or pytest-mock's ``mocker.patch`` — and
every pytest ``monkeypatch.setattr(module, "name", …)``, ``monkeypatch.setattr("pkg.mod.name",
…)``, ``delattr`` and ``setitem`` / ``delitem`` (on the ``monkeypatch`` fixture, a
``MonkeyPatch()`` or a ``monkeypatch.context()``), whose target lies in one of ``packages``
(the project's own top-level packages; by default those found beside the scanned paths:
directories with ``__init__.py`` in the project root or its ``src/``). Objects are resolved
through the file's imports (``from myapp import service`` → ``myapp.service``).

A patch kept on purpose says why on its line (or the line above):
``# lint-mocks: allow <reason>``; an allow comment without a reason is not honoured.

A committed baseline lets an existing suite adopt the rule: ``write_baseline`` writes the
first one (and refuses to overwrite it), ``check_against_baseline`` fails on findings the
baseline does not list and on entries that no longer occur, so the baseline can only shrink
(``shrink_baseline`` rewrites it without the fixed ones; it never adds). Entries are
``path::target::fingerprint`` lines (no line numbers, so unrelated edits do not churn it),
once per occurrence. The fingerprint hashes the patch's own source and the function it is
in, so a changed patch, or one moved to another test, cannot borrow an old allowance.
Entries written before fingerprints (``path::target``) still match, and ``--shrink-baseline``
rewrites them with their fingerprints.
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import re
import stat
import tokenize
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from stuntset.errors import UsageError

__all__ = [
    "ALLOW",
    "BaselineCheck",
    "MockPatch",
    "check_against_baseline",
    "find_mock_patches",
    "own_packages",
    "read_baseline",
    "shrink_baseline",
    "write_baseline",
]

_PATCHERS = {"patch", "object", "dict", "multiple"}
_MONKEYPATCHERS = {"setattr", "delattr", "setitem", "delitem"}
#: The allow comment: ``# lint-mocks: allow <reason>`` (the reason is required).
ALLOW = re.compile(r"#\s*lint-mocks:\s*allow\b[\s:—–-]*(?P<reason>.*)$")
_FINGERPRINT = re.compile(r"[0-9a-f]{10}")
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache"}


@dataclass(frozen=True, order=True)
class MockPatch:
    """One patch of an own module: where (``path``, ``line``) and what (``target``)."""

    path: str
    line: int
    target: str
    call: str
    fingerprint: str = ""
    #: an allow comment that was not honoured (it gives no reason), by its line
    unreasoned_allow: int = 0

    @property
    def key(self) -> str:
        return f"{self.path}::{self.target}::{self.fingerprint}"

    @property
    def legacy_key(self) -> str:
        """The entry a baseline written before fingerprints has for this patch."""
        return f"{self.path}::{self.target}"

    def describe(self) -> str:
        said = (
            f"{self.path}:{self.line}: {self.call} patches {self.target!r}, the project's own "
            f"code: test it through a fake at the boundary instead (a stuntset double, or a "
            f"small working in-memory implementation passed in)"
        )
        if self.unreasoned_allow:
            said += (
                f"; the allow comment on line {self.unreasoned_allow} gives no reason, so it "
                f"is not honoured: write `# lint-mocks: allow <why this patch stays>`"
            )
        return said


def own_packages(root: str | os.PathLike[str]) -> list[str]:
    """Top-level packages and modules of the project at ``root`` (its ``src/`` too)."""
    names: set[str] = set()
    base = Path(root)
    for folder in (base, base / "src"):
        if not folder.is_dir():
            continue
        for entry in folder.iterdir():
            if entry.name in _SKIP_DIRS or entry.name.startswith(".") or entry.name == "tests":
                continue
            if entry.is_dir() and (entry / "__init__.py").is_file():
                names.add(entry.name)
            elif folder.name == "src" and entry.suffix == ".py":
                names.add(entry.stem)
    return sorted(names)


def _python_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            yield path
        elif path.is_dir():
            for directory, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
                for name in sorted(files):
                    if name.endswith(".py"):
                        yield _regular(Path(directory) / name)
        elif path.exists():  # a FIFO would block the read forever
            raise UsageError(f"{path}: not a regular file or a directory to scan")
        else:
            raise UsageError(f"{path}: no such file or directory to scan")


def _regular(path: Path) -> Path:
    """``path`` if it is a regular file (a symlink to one is); else a ``UsageError``: a FIFO
    named ``*.py`` would block the scan forever."""
    try:
        mode = path.stat().st_mode
    except OSError as error:
        raise UsageError(f"{path}: cannot read it ({error.strerror})") from None
    if not stat.S_ISREG(mode):
        raise UsageError(f"{path}: not a regular file (a FIFO or a device); cannot scan it")
    return path


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    return None


class _Imports(ast.NodeVisitor):
    """Local names → the dotted module paths they were imported as."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.names[alias.asname] = alias.name
            else:
                top = alias.name.split(".")[0]
                self.names[top] = top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return
        for alias in node.names:
            self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"


def _is_patcher(function: str, imports: dict[str, str]) -> str | None:
    """The patcher kind (``patch``, ``object``...) if ``function`` is one of mock's patchers."""
    parts = function.split(".")
    head = imports.get(parts[0], parts[0])
    resolved = ".".join([head, *parts[1:]])
    if parts[0] == "mocker":  # pytest-mock's fixture
        resolved = "unittest.mock." + ".".join(parts[1:])
    for prefix in ("unittest.mock.", "mock."):
        if resolved.startswith(prefix):
            rest = resolved[len(prefix) :].split(".")
            if rest[0] == "patch" and len(rest) == 1:
                return "patch"
            if rest[0] == "patch" and len(rest) == 2 and rest[1] in _PATCHERS:
                return rest[1]
    return None


def _comments(source: bytes) -> dict[int, str]:
    """The file's comments by line (``tokenize``; a file it cannot read has none)."""
    found: dict[int, str] = {}
    try:
        for token in tokenize.tokenize(io.BytesIO(source).readline):
            if token.type == tokenize.COMMENT:
                found[token.start[0]] = token.string
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        pass
    return found


def _allowance(node: ast.AST, comments: dict[int, str], lines: list[bytes]) -> tuple[bool, int]:
    """``(allowed, line of an allow comment without a reason)`` for the patch at ``node``: an
    allow comment on one of its lines, or alone on the line above it."""
    first = getattr(node, "lineno", 0)
    last = getattr(node, "end_lineno", None) or first
    candidates = list(range(first, last + 1))
    above = first - 1
    if above >= 1 and above <= len(lines) and lines[above - 1].lstrip().startswith(b"#"):
        candidates.insert(0, above)
    unreasoned = 0
    for number in candidates:
        match = ALLOW.search(comments.get(number, ""))
        if match is None:
            continue
        if match.group("reason").strip():
            return True, 0
        unreasoned = number
    return False, unreasoned


def _fingerprint(scope: str, node: ast.AST) -> str:
    text = f"{scope}\n{ast.unparse(node)}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:10]


def _monkeypatch_receivers(tree: ast.AST, imports: dict[str, str]) -> set[str]:
    """The names a ``MonkeyPatch`` goes by in this file: the fixture's ``monkeypatch``, and
    names bound to ``MonkeyPatch()`` or to a ``….context()`` of one."""
    names = {"monkeypatch"}

    def makes_one(value: ast.expr | None) -> bool:
        if not isinstance(value, ast.Call):
            return False
        made = _dotted(value.func) or ""
        head, _, rest = made.partition(".")
        made = imports.get(head, head) + (f".{rest}" if rest else "")
        return (
            made.endswith("MonkeyPatch")
            or made.endswith("MonkeyPatch.context")
            or (made.endswith(".context") and made.split(".")[0] in names)
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.withitem):
            if makes_one(node.context_expr) and isinstance(node.optional_vars, ast.Name):
                names.add(node.optional_vars.id)
        elif isinstance(node, ast.Assign) and makes_one(node.value):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _resolve(node: ast.expr, imports: dict[str, str]) -> str | None:
    dotted = _dotted(node)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    return imports.get(head, head) + (f".{rest}" if rest else "")


def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _mock_target(node: ast.Call, kind: str, imports: dict[str, str]) -> str | None:
    named = next((k.value for k in node.keywords if k.arg in ("target", "in_dict")), None)
    first = node.args[0] if node.args else named
    if first is None:
        return None
    if kind == "object":
        owner = _resolve(first, imports)
        if owner is None:
            return None
        name = _string(node.args[1] if len(node.args) > 1 else None)
        return f"{owner}.{name if name is not None else '?'}"
    return _string(first)


def _monkeypatch_target(node: ast.Call, kind: str, imports: dict[str, str]) -> str | None:
    args = node.args
    if not args:
        return None
    if kind in ("setattr", "delattr"):
        dotted = _string(args[0])
        if dotted is not None:  # setattr("pkg.mod.name", value) / delattr("pkg.mod.name")
            return dotted if "." in dotted else None
        owner = _resolve(args[0], imports)
        name = _string(args[1]) if len(args) > 1 else None
        if owner is None:
            return None
        return f"{owner}.{name if name is not None else '?'}"
    owner = _resolve(args[0], imports)  # setitem(mod.TABLE, key, value) / delitem(...)
    if owner is None:
        return None
    key = args[1] if len(args) > 1 else None
    shown = repr(key.value) if isinstance(key, ast.Constant) else "?"
    return f"{owner}[{shown}]"


class _Scan(ast.NodeVisitor):
    """Every patch of own code, with the function it is in (for its fingerprint)."""

    def __init__(
        self,
        shown: str,
        packages: set[str],
        imports: dict[str, str],
        receivers: set[str],
        comments: dict[int, str],
        lines: list[bytes],
    ) -> None:
        self.shown, self.packages, self.imports = shown, packages, imports
        self.receivers, self.comments, self.lines = receivers, comments, lines
        self.scope: list[str] = []
        self.found: list[MockPatch] = []
        self.allowed = 0

    def _in_scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        for decorator in node.decorator_list:  # a decorator belongs to what it decorates
            self.scope.append(node.name)
            self.visit(decorator)
            self.scope.pop()
        self.scope.append(node.name)
        for child in node.body:
            self.visit(child)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _in_scope

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        function = _dotted(node.func)
        if function is None:
            return
        target: str | None = None
        kind = _is_patcher(function, self.imports)
        if kind is not None:
            target = _mock_target(node, kind, self.imports)
        elif (
            isinstance(node.func, ast.Attribute)
            and node.func.attr in _MONKEYPATCHERS
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in self.receivers
        ):
            target = _monkeypatch_target(node, node.func.attr, self.imports)
        if target is None or target.split(".")[0].split("[")[0] not in self.packages:
            return
        allowed, unreasoned = _allowance(node, self.comments, self.lines)
        if allowed:
            self.allowed += 1
            return
        self.found.append(
            MockPatch(
                self.shown,
                node.lineno,
                target,
                f"{function}()",
                _fingerprint(".".join(self.scope), node),
                unreasoned,
            )
        )


def _scan_file(path: Path, shown: str, packages: set[str]) -> tuple[list[MockPatch], int]:
    """The file's patches of own code, and how many allow comments excused."""
    try:
        source = path.read_bytes()
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as error:
        raise UsageError(f"{shown}:{error.lineno}: not valid Python ({error.msg})") from None
    except OSError as error:
        raise UsageError(f"{shown}: cannot read it ({error.strerror})") from None
    except (RecursionError, MemoryError):  # a 200,000-term expression, nesting too deep
        raise UsageError(f"{shown}: not scannable (an expression nested too deep)") from None
    except ValueError as error:  # NUL bytes, on some Pythons
        raise UsageError(f"{shown}: not valid Python ({error})") from None
    imports = _Imports()
    try:
        imports.visit(tree)
        receivers = _monkeypatch_receivers(tree, imports.names)
        scan = _Scan(
            shown, packages, imports.names, receivers, _comments(source), source.splitlines()
        )
        scan.visit(tree)
    except RecursionError:
        raise UsageError(f"{shown}: not scannable (an expression nested too deep)") from None
    return scan.found, scan.allowed


def find_mock_patches(
    paths: Iterable[str | os.PathLike[str]],
    *,
    packages: Iterable[str] | None = None,
    root: str | os.PathLike[str] = ".",
) -> list[MockPatch]:
    """Every patch of the project's own code under ``paths`` (paths shown relative to
    ``root``; ``packages`` default to ``own_packages(root)``), without those an allow
    comment with a reason excuses."""
    return _find(paths, packages, root)[0]


def _find(
    paths: Iterable[str | os.PathLike[str]],
    packages: Iterable[str] | None,
    root: str | os.PathLike[str],
) -> tuple[list[MockPatch], int]:
    base = Path(root).resolve()
    own = set(packages) if packages is not None else set(own_packages(base))
    if not own:
        raise UsageError(
            f"{base}: found no package of the project's own (no directory with __init__.py "
            f"here or in src/); name them with --package"
        )
    found: list[MockPatch] = []
    allowed = 0
    for file in _python_files(paths):
        resolved = file.resolve()
        shown = (
            resolved.relative_to(base).as_posix()
            if resolved.is_relative_to(base)
            else file.as_posix()
        )
        patches, excused = _scan_file(file, shown, own)
        found.extend(patches)
        allowed += excused
    return sorted(found), allowed


# --- the baseline ---------------------------------------------------------------------------


def read_baseline(path: str | os.PathLike[str]) -> Counter[str]:
    """The baseline's entries (``path::target``, one per occurrence); missing file: empty."""
    file = Path(path)
    if not file.exists():
        return Counter()
    if not file.is_file():  # a FIFO would block the read forever
        raise UsageError(f"{file}: cannot read the baseline (not a regular file)")
    try:
        text = file.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{file}: cannot read the baseline ({error})") from None
    entries: Counter[str] = Counter()
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split("::")
        if len(parts) not in (2, 3) or not all(parts):
            raise UsageError(f"{file}:{number}: expected 'path::target::fingerprint', got {line!r}")
        if len(parts) == 3 and not _FINGERPRINT.fullmatch(parts[2]):
            raise UsageError(
                f"{file}:{number}: {parts[2]!r} is not a fingerprint (10 hex digits, as "
                f"`stuntset lint-mocks --write-baseline` writes them)"
            )
        entries[line] += 1
    return entries


@dataclass(frozen=True)
class BaselineCheck:
    """``new``: findings the baseline does not cover; ``fixed``: baseline entries no longer
    found (one per occurrence)."""

    new: list[MockPatch]
    fixed: list[str]

    @property
    def ok(self) -> bool:
        return not self.new and not self.fixed


def check_against_baseline(found: list[MockPatch], baseline: Counter[str]) -> BaselineCheck:
    """Findings against entries: a finding uses up the entry with its fingerprint, else an
    entry written before fingerprints (``path::target``); a patch that does not allow itself
    is new (an unreasoned allow comment is not an allowance either)."""
    return _match(found, baseline)[0]


def _match(found: list[MockPatch], baseline: Counter[str]) -> tuple[BaselineCheck, list[MockPatch]]:
    """The check, and the findings that used up a legacy (fingerprint-less) entry."""
    left = Counter(baseline)
    new: list[MockPatch] = []
    by_legacy: list[MockPatch] = []
    for patch in found:
        if left[patch.key] > 0:
            left[patch.key] -= 1
        elif left[patch.legacy_key] > 0:
            left[patch.legacy_key] -= 1
            by_legacy.append(patch)
        else:
            new.append(patch)
    return BaselineCheck(new, sorted(left.elements())), by_legacy


def shrink_baseline(path: str | os.PathLike[str], found: list[MockPatch]) -> list[str]:
    """Rewrite the baseline without the entries that no longer occur; never adds one.
    Returns the removed entries."""
    baseline = read_baseline(path)
    result, by_legacy = _match(found, baseline)
    kept = baseline - Counter(result.fixed)
    # entries written before fingerprints become the fingerprinted entry they matched
    kept -= Counter(patch.legacy_key for patch in by_legacy)
    kept += Counter(patch.key for patch in by_legacy)
    _write(path, kept)
    return result.fixed


_HEADER = (
    "# Patches of the project's own code, tolerated until replaced by fakes.\n"
    "# This list may only shrink: `stuntset lint-mocks --shrink-baseline` drops fixed ones.\n"
)


def _write(path: str | os.PathLike[str], entries: Counter[str]) -> None:
    body = "".join(f"{entry}\n" for entry in sorted(entries.elements()))
    Path(path).write_text(_HEADER + body)


def write_baseline(path: str | os.PathLike[str], found: list[MockPatch]) -> int:
    """Write the first baseline (every finding); refuses to replace one, which may only
    shrink. Returns the number of entries."""
    file = Path(path)
    if file.exists() or file.is_symlink():
        raise UsageError(
            f"{file}: a baseline is already there and may only shrink; "
            f"`--shrink-baseline` drops the fixed entries (remove the file to start over)"
        )
    _write(file, Counter(patch.key for patch in found))
    return len(found)


DEFAULT_BASELINE = "lint-mocks-baseline.txt"


def run_lint(
    paths: Iterable[str],
    *,
    packages: Iterable[str] | None = None,
    baseline: str | None = None,
    shrink: bool = False,
    write: bool = False,
    root: str = ".",
) -> tuple[list[str], int]:
    """What ``stuntset lint-mocks`` prints (lines) and its exit status (0 clean, 1 not)."""
    if shrink and write:
        raise UsageError("--write-baseline and --shrink-baseline: choose one")
    found, allowed = _find(paths, packages, root)
    file = baseline if baseline is not None else DEFAULT_BASELINE
    if baseline is not None and not Path(baseline).exists() and shrink:
        raise UsageError(f"{baseline}: no such baseline to shrink")
    if write:
        count = write_baseline(file, found)
        return [f"{file}: wrote {count} entr(y/ies); from now on it may only shrink"], 0
    lines: list[str] = []
    if shrink and Path(file).exists():
        for entry in shrink_baseline(file, found):
            lines.append(f"{file}: removed {entry} (fixed)")
    result = check_against_baseline(found, read_baseline(file))
    lines.extend(patch.describe() for patch in result.new)
    for entry in result.fixed:
        lines.append(
            f"{file}: {entry} no longer occurs: the baseline may only shrink, run "
            f"`stuntset lint-mocks --shrink-baseline` to drop it"
        )
    tolerated = len(found) - len(result.new)
    lines.append(
        f"{len(result.new)} new patch(es) of the project's own code, {tolerated} tolerated by "
        f"the baseline, {len(result.fixed)} stale baseline entr(y/ies)"
        + (f", {allowed} allowed by a comment" if allowed else "")
    )
    return lines, 0 if result.ok else 1
