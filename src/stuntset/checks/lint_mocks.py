"""Fakes over mocks: find ``unittest.mock.patch`` of a project's own modules in its tests.

``find_mock_patches(paths, packages=...)`` parses each Python file (``ast``, nothing is
imported or run) and reports every ``patch("pkg.mod.attr")``, ``patch.object(obj, "attr")``,
``patch.dict("pkg.mod.X")`` and ``patch.multiple("pkg.mod")`` — as ``mock.patch``,
``unittest.mock.patch``, a bare imported ``patch``, or pytest-mock's ``mocker.patch`` — whose
target lies in one of ``packages`` (the project's own top-level packages; by default those
found beside the scanned paths: directories with ``__init__.py`` in the project root or its
``src/``). ``patch.object``'s object is resolved through the file's imports
(``from myapp import service`` → ``myapp.service``).

A committed baseline lets an existing suite adopt the rule: ``check_against_baseline`` fails
on findings the baseline does not list, and on baseline entries that no longer occur, so the
baseline can only shrink (``shrink_baseline`` rewrites it without the fixed ones; it never
adds). Entries are ``path::target`` lines (no line numbers, so unrelated edits do not churn
it), repeated once per occurrence.
"""

from __future__ import annotations

import ast
import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from stuntset.errors import UsageError

__all__ = [
    "BaselineCheck",
    "MockPatch",
    "check_against_baseline",
    "find_mock_patches",
    "own_packages",
    "read_baseline",
    "shrink_baseline",
]

_PATCHERS = {"patch", "object", "dict", "multiple"}
_SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache"}


@dataclass(frozen=True, order=True)
class MockPatch:
    """One patch of an own module: where (``path``, ``line``) and what (``target``)."""

    path: str
    line: int
    target: str
    call: str

    @property
    def key(self) -> str:
        return f"{self.path}::{self.target}"

    def describe(self) -> str:
        return (
            f"{self.path}:{self.line}: {self.call} patches {self.target!r}, the project's own "
            f"code: test it through a fake at the boundary instead (a stuntset double, or a "
            f"small working in-memory implementation passed in)"
        )


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


def _scan_file(path: Path, shown: str, packages: set[str]) -> list[MockPatch]:
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
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
    except RecursionError:
        raise UsageError(f"{shown}: not scannable (an expression nested too deep)") from None
    found: list[MockPatch] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = _dotted(node.func)
        kind = _is_patcher(function, imports.names) if function else None
        if kind is None:
            continue
        named = next((k.value for k in node.keywords if k.arg in ("target", "in_dict")), None)
        first = node.args[0] if node.args else named
        if first is None:
            continue
        if kind == "object":
            owner = _dotted(first)
            if owner is None:
                continue
            head, _, rest = owner.partition(".")
            owner = imports.names.get(head, head) + (f".{rest}" if rest else "")
            attr = node.args[1] if len(node.args) > 1 else None
            name = (
                attr.value
                if isinstance(attr, ast.Constant) and isinstance(attr.value, str)
                else "?"
            )
            target = f"{owner}.{name}"
        elif isinstance(first, ast.Constant) and isinstance(first.value, str):
            target = first.value
        else:
            continue
        if target.split(".")[0] in packages:
            found.append(MockPatch(shown, node.lineno, target, f"{function}()"))
    return found


def find_mock_patches(
    paths: Iterable[str | os.PathLike[str]],
    *,
    packages: Iterable[str] | None = None,
    root: str | os.PathLike[str] = ".",
) -> list[MockPatch]:
    """Every patch of the project's own code under ``paths`` (paths shown relative to
    ``root``; ``packages`` default to ``own_packages(root)``)."""
    base = Path(root).resolve()
    own = set(packages) if packages is not None else set(own_packages(base))
    if not own:
        raise UsageError(
            f"{base}: found no package of the project's own (no directory with __init__.py "
            f"here or in src/); name them with --package"
        )
    found: list[MockPatch] = []
    for file in _python_files(paths):
        resolved = file.resolve()
        shown = (
            resolved.relative_to(base).as_posix()
            if resolved.is_relative_to(base)
            else file.as_posix()
        )
        found.extend(_scan_file(file, shown, own))
    return sorted(found)


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
        if "::" not in line:
            raise UsageError(f"{file}:{number}: expected 'path::target', got {line!r}")
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
    left = Counter(baseline)
    new = []
    for patch in found:
        if left[patch.key] > 0:
            left[patch.key] -= 1
        else:
            new.append(patch)
    return BaselineCheck(new, sorted(left.elements()))


def shrink_baseline(path: str | os.PathLike[str], found: list[MockPatch]) -> list[str]:
    """Rewrite the baseline without the entries that no longer occur; never adds one.
    Returns the removed entries."""
    baseline = read_baseline(path)
    result = check_against_baseline(found, baseline)
    kept = baseline - Counter(result.fixed)
    header = (
        "# unittest.mock.patch of the project's own code, tolerated until replaced by fakes.\n"
        "# This list may only shrink: `stuntset lint-mocks --shrink-baseline` drops fixed ones.\n"
    )
    body = "".join(f"{entry}\n" for entry in sorted(kept.elements()))
    Path(path).write_text(header + body)
    return result.fixed


DEFAULT_BASELINE = "lint-mocks-baseline.txt"


def run_lint(
    paths: Iterable[str],
    *,
    packages: Iterable[str] | None = None,
    baseline: str | None = None,
    shrink: bool = False,
    root: str = ".",
) -> tuple[list[str], int]:
    """What ``stuntset lint-mocks`` prints (lines) and its exit status (0 clean, 1 not)."""
    found = find_mock_patches(paths, packages=packages, root=root)
    file = baseline if baseline is not None else DEFAULT_BASELINE
    if baseline is not None and not Path(baseline).exists() and shrink:
        raise UsageError(f"{baseline}: no such baseline to shrink")
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
    )
    return lines, 0 if result.ok else 1
