"""Every step dispatch ends in ``assert_never``: a step kind added to the script vocabulary
and to no renderer makes ``mypy --strict`` name each renderer it must reach.

The check adds two dummy kinds to a shadow copy of ``script/_steps.py`` (``--shadow-file``: the
tree is not touched) and runs mypy over ``src`` once: a fault kind (in ``Step`` and
``FaultStep``) and a content kind (in ``Step`` only). Each error names the dummy that reached
it, so one run proves both lists.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import stuntset
from stuntset.script import FAULT_KINDS, FaultStep

SRC = Path(stuntset.__file__).parent
STEPS = SRC / "script" / "_steps.py"

#: Where a new fault kind must be rendered, as mypy names it (path under src/stuntset).
FAULT_DISPATCHES = {
    "doubles/cli/claude/__init__.py",  # the fake claude's plan compiler
    "doubles/cli/codex/__init__.py",  # the fake codex's plan compiler
    "doubles/mcp/http.py",  # the MCP double's faults below the SDK, over HTTP
    "doubles/mcp/stdio.py",  # and over stdio
    "doubles/cli/gemini/__init__.py",  # the fake gemini's plan compiler
    "providers/scripted.py",  # the scripted provider's crash for a fault
    "wires/_codec.py",  # the model wires: a whole body and a stream
}

#: Where a new content (non-fault) step kind must be rendered.
CONTENT_DISPATCHES = {
    "doubles/cli/claude/__init__.py",
    "doubles/cli/codex/__init__.py",
    "doubles/cli/gemini/__init__.py",
    "doubles/mcp/_plan.py",  # the MCP double's plan of a tool call
    "providers/scripted.py",  # the scripted provider's events
    "wires/_codec.py",
}

_DUMMIES = {"DummyFault": "_Fault", "DummyContent": "StepBase"}

_DUMMY = '''class {name}({base}, frozen=True, tag="{tag}"):
    """A step kind no renderer knows yet."""


'''


def with_dummy_kinds(text: str) -> str:
    """``_steps.py`` with a ``DummyFault`` kind in ``Step`` and ``FaultStep`` and a
    ``DummyContent`` kind in ``Step`` only."""
    assert "class Dummy" not in text
    for alias, members in (("Step", "DummyFault | DummyContent"), ("FaultStep", "DummyFault")):
        head = f"\n{alias}: TypeAlias = (\n"
        assert head in text, f"{alias} is not written as a parenthesised union"
        text = text.replace(head, f"\n{alias}: TypeAlias = (\n    {members}\n    | ", 1)
    classes = "".join(
        _DUMMY.format(name=name, base=base, tag=name.lower()) for name, base in _DUMMIES.items()
    )
    return text.replace("\nStep: TypeAlias = (", "\n" + classes + "Step: TypeAlias = (", 1)


def reached(mypy_output: str) -> dict[str, set[str]]:
    """Which dummy kinds reach an ``assert_never`` in which file (path under src/stuntset)."""
    found: dict[str, set[str]] = {name: set() for name in _DUMMIES}
    errors = re.finditer(r"^(\S+?\.py):\d+: error: (.*assert_never.*)$", mypy_output, re.M)
    for match in errors:
        path = Path(match.group(1)).resolve().relative_to(SRC).as_posix()
        for name in _DUMMIES:
            if re.search(rf"\b{name}\b", match.group(2)):
                found[name].add(path)
    return found


def test_reached_reads_which_dummy_each_error_names() -> None:
    output = (
        f'{SRC}/a.py:3: error: Argument 1 to "assert_never" has incompatible type '
        '"DummyFault | DummyContent"; expected "Never"  [arg-type]\n'
        f'{SRC}/b.py:9: error: Argument 1 to "assert_never" has incompatible type '
        '"DummyFault"; expected "Never"  [arg-type]\n'
        f'{SRC}/c.py:1: error: Name "x" is not defined  [name-defined]\n'
    )
    assert reached(output) == {"DummyFault": {"a.py", "b.py"}, "DummyContent": {"a.py"}}


def test_fault_step_lists_exactly_the_fault_kinds() -> None:
    kinds = {str(cls.__struct_config__.tag) for cls in FaultStep.__args__}
    assert kinds == FAULT_KINDS


@pytest.mark.timeout(600)
def test_mypy_names_every_dispatch_a_new_kind_must_reach(tmp_path: Path) -> None:
    shadow = tmp_path / "_steps.py"
    shadow.write_text(with_dummy_kinds(STEPS.read_text("utf-8")), "utf-8")
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-error-summary"]
    # Start from a copy of the tree's own cache (``make typecheck`` writes it) when there is
    # one: the third-party stubs (openai, anthropic, pydantic…) are then read, not re-checked,
    # and only what the shadowed module touches is checked again (17 s instead of 60–280 s
    # measured at load 7–10). mypy checks every cache entry against its source's hash, so a
    # stale copy costs time, never a wrong verdict.
    cache = SRC.parent.parent / ".mypy_cache"
    if cache.is_dir():
        shutil.copytree(cache, tmp_path / "cache", ignore=shutil.ignore_patterns("*.lock"))
    shadowed = ["--cache-dir", str(tmp_path / "cache"), "--shadow-file", str(STEPS), str(shadow)]
    run = subprocess.run(
        [*mypy, *shadowed, str(SRC)],
        capture_output=True,
        text=True,
        check=False,
        cwd=SRC.parent.parent,
    )
    found = reached(run.stdout)
    assert found == {
        "DummyFault": FAULT_DISPATCHES,
        "DummyContent": CONTENT_DISPATCHES,
    }, run.stdout + run.stderr
    assert run.returncode == 1
