"""Is every third-party import of the shipped modules declared in the wheel's METADATA?

Each import is found by walking a module's syntax tree (lazy imports inside functions too;
``if TYPE_CHECKING:`` blocks are skipped: they never run). Its *scope* is the module's dotted
name plus the functions and classes around it (``stuntset.checks.matrix._claude_code``). A
scope belongs to an extra when it or an enclosing scope is listed in ``extra_of``; there the
import may come from the base requirements or that extra's, elsewhere from the base ones
only. ``provided_by_host`` lists what the process that runs a scope already has (pytest, for
the plugin pytest loads). An import name maps to its distribution through
``importlib.metadata.packages_distributions()``; a dependency of a dependency does not count.
"""

from __future__ import annotations

import ast
import sys
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


@dataclass(frozen=True)
class Import:
    module: str  # stuntset.checks.matrix
    scope: str  # stuntset.checks.matrix._claude_code
    name: str  # the top-level import name: claude_agent_sdk
    line: int


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(module: str, source: str) -> list[Import]:
    """Every absolute import in ``source`` with the scope it runs in."""
    found: list[Import] = []

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    visit_one(other, scope)
                continue
            visit_one(child, scope)

    def visit_one(node: ast.AST, scope: str) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(module, scope, alias.name.split(".")[0], node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                found.append(Import(module, scope, node.module.split(".")[0], node.lineno))
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            visit(node, f"{scope}.{node.name}")
        else:
            visit(node, scope)

    visit(ast.parse(source), module)
    return found


def wheel_modules(wheel: Path) -> Iterator[tuple[str, str]]:
    """(dotted module name, source) of every ``.py`` file in the wheel."""
    with zipfile.ZipFile(wheel) as archive:
        for name in sorted(archive.namelist()):
            if name.endswith(".py") and ".dist-info/" not in name:
                dotted = name[: -len(".py")].replace("/", ".").removesuffix(".__init__")
                yield dotted, archive.read(name).decode()


def wheel_metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return archive.read(name).decode()


def requirements(metadata: str) -> dict[str | None, set[str]]:
    """Extra (``None``: the base install) → the distributions it may import: its own and the
    base install's. A requirement with only an environment marker (``httptools;
    platform_python_implementation == 'CPython'``) counts as declared in the base install."""
    message = Parser().parsestr(metadata)
    extras: list[str] = message.get_all("Provides-Extra", [])
    declared: dict[str | None, set[str]] = {None: set()} | {extra: set() for extra in extras}
    for line in message.get_all("Requires-Dist", []):
        requirement = Requirement(line)
        name = canonicalize_name(requirement.name)
        if requirement.marker is None or "extra" not in str(requirement.marker):
            declared[None].add(name)
            continue
        for extra in extras:
            if requirement.marker.evaluate({"extra": extra}):
                declared[extra].add(name)
    for extra in extras:
        declared[extra] |= declared[None]
    return declared


def _owner(scope: str, table: Mapping[str, object]) -> str | None:
    """The longest key of ``table`` that is ``scope`` or encloses it."""
    parts = scope.split(".")
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        if key in table:
            return key
    return None


def undeclared(
    modules: Mapping[str, str],
    metadata: str,
    *,
    distributions: Mapping[str, list[str]],
    extra_of: Mapping[str, str],
    provided_by_host: Mapping[str, set[str]],
    first_party: str = "stuntset",
) -> list[str]:
    """One line per import that the METADATA does not declare where it runs."""
    declared = requirements(metadata)
    problems: list[str] = []
    for module, source in modules.items():
        for item in imports_of(module, source):
            if item.name in sys.stdlib_module_names or item.name in {first_party, "__future__"}:
                continue
            host = _owner(item.scope, provided_by_host)
            if host is not None and item.name in provided_by_host[host]:
                continue
            owner = _owner(item.scope, extra_of)
            extra = extra_of[owner] if owner is not None else None
            if extra not in declared:
                problems.append(f"{item.scope}: extra {extra!r} is not in the METADATA")
                continue
            dists = {canonicalize_name(d) for d in distributions.get(item.name, [])}
            where = f"{module_path(item.module)}:{item.line} ({item.scope})"
            if not dists:
                problems.append(f"{where}: imports {item.name}, which no distribution provides")
            elif not dists & declared[extra]:
                needs = "the base install" if extra is None else f"the base install or [{extra}]"
                problems.append(
                    f"{where}: imports {item.name} ({', '.join(sorted(dists))}), "
                    f"not declared in {needs}"
                )
    return problems


def module_path(module: str) -> str:
    return module.replace(".", "/") + ".py"
