"""Every step dispatch ends in ``assert_never``: a step kind added to the script vocabulary
and to no renderer makes ``mypy --strict`` name each renderer it must reach.

The check adds a dummy fault kind to ``Step`` and ``FaultStep`` in a shadow copy of
``script/_steps.py`` and runs mypy over ``src`` (``--shadow-file``: the tree is not touched).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import stuntset
from stuntset.script import FAULT_KINDS, FaultStep

SRC = Path(stuntset.__file__).parent
STEPS = SRC / "script" / "_steps.py"

#: Where a new fault kind must be rendered, as mypy names it (path under src/stuntset).
DISPATCHES = {
    "doubles/cli/claude/__init__.py",  # the fake claude's plan compiler
    "doubles/cli/codex/__init__.py",  # the fake codex's plan compiler
    "doubles/cli/gemini/__init__.py",  # the fake gemini's plan compiler
    "providers/scripted.py",  # the scripted provider's crash for a fault
    "wires/_codec.py",  # the model wires: a whole body and a stream
}

_DUMMY = '''class Dummy(_Fault, frozen=True, tag="dummy"):
    """A fault kind no renderer knows yet."""


'''


def with_dummy_kind(text: str) -> str:
    """``_steps.py`` with a ``Dummy`` fault kind in ``Step`` and ``FaultStep``."""
    assert "class Dummy(" not in text
    for alias in ("Step", "FaultStep"):
        head = f"\n{alias}: TypeAlias = (\n"
        assert head in text, f"{alias} is not written as a parenthesised union"
        text = text.replace(head, f"\n{alias}: TypeAlias = (\n    Dummy\n    | ", 1)
    return text.replace("\nStep: TypeAlias = (", "\n" + _DUMMY + "Step: TypeAlias = (", 1)


def test_fault_step_lists_exactly_the_fault_kinds() -> None:
    kinds = {str(cls.__struct_config__.tag) for cls in FaultStep.__args__}
    assert kinds == FAULT_KINDS


@pytest.mark.timeout(600)
def test_mypy_names_every_dispatch_a_new_kind_must_reach(tmp_path: Path) -> None:
    shadow = tmp_path / "_steps.py"
    shadow.write_text(with_dummy_kind(STEPS.read_text("utf-8")), "utf-8")
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-error-summary"]
    shadowed = ["--cache-dir", str(tmp_path / "cache"), "--shadow-file", str(STEPS), str(shadow)]
    run = subprocess.run(
        [*mypy, *shadowed, str(SRC)],
        capture_output=True,
        text=True,
        check=False,
        cwd=SRC.parent.parent,
    )
    found = {
        Path(match.group(1)).resolve().relative_to(SRC).as_posix()
        for match in re.finditer(r"^(\S+?\.py):\d+: error: .*assert_never", run.stdout, re.M)
    }
    assert found == DISPATCHES, run.stdout + run.stderr
    assert run.returncode == 1
