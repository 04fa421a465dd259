"""Evals on the real ``claude`` and ``codex`` binaries (from the extras) over the model
doubles, offline: the binary really loads the skill, runs the command and writes the file,
and the grading sees it — including a write beside the workspace, found on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from stuntset.errors import UsageError
from stuntset.evals import arun_eval, binary_for, loads_eval, make_target

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

SKILLED = """
prompt = "What does report.pdf say?"
[files]
"extract.py" = "import sys; print('text of', sys.argv[1])"
[skills.pdf]
description = "Extract text from PDF files."
instructions = "Run `python3 extract.py FILE`."
[skills.xlsx]
description = "Edit spreadsheets."
instructions = "Use openpyxl."
[[behaviour]]
steps = [
  { skill = "pdf" },
  { run = "python3 extract.py report.pdf > out.txt" },
  { say = "It says: text of report.pdf" },
]
[expect]
skill = "pdf"
commands = ["extract\\\\.py report\\\\.pdf"]
order = ["skill:pdf", "write:out\\\\.txt"]
sandbox = true
"""

ESCAPING = """
prompts = ["Write notes", "Add a line"]
[[behaviour]]
steps = [
  { write = "notes.md", content = "# Notes" },
  { say = "Wrote it" },
  { run = "echo done >> {outside}/notes.md" },
  { say = "Added it" },
]
[expect]
sandbox = true
continuity = true
"""


@pytest.mark.real_cli
@pytest.mark.parametrize("cli", ["claude", "codex"])
async def test_the_real_binary_reads_the_skill_and_runs_the_command(
    cli: str, tmp_path: Path
) -> None:
    result = await arun_eval(loads_eval(SKILLED, source="skilled.toml"), cli, runs=1, keep=tmp_path)
    (run,) = result.runs
    assert run.reasons() == []
    assert run.passed
    (kept,) = tmp_path.iterdir()
    # the binary ran the command for real: its output is in the workspace
    assert (kept / "workspace" / "out.txt").read_text() == "text of report.pdf\n"


@pytest.mark.real_cli
@pytest.mark.parametrize("cli", ["claude", "codex"])
async def test_a_write_beside_the_workspace_is_caught_on_disk(cli: str, tmp_path: Path) -> None:
    result = await arun_eval(
        loads_eval(ESCAPING, source="escaping.toml"), cli, runs=1, keep=tmp_path
    )
    (run,) = result.runs
    grades = {g.criterion: g for g in run.grades}
    assert grades["continuity"].passed  # both prompts in one session, the first carried
    assert not grades["sandbox"].passed
    assert "changed beside the workspace: added notes.md" in grades["sandbox"].detail
    (kept,) = tmp_path.iterdir()
    assert (kept / "outside" / "notes.md").read_text() == "done\n"
    assert (kept / "workspace" / "notes.md").read_text().startswith("# Notes")


async def test_the_binaries_are_found_or_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert binary_for("claude").name == "claude"
    assert binary_for("codex").name == "codex"
    monkeypatch.setenv("STUNTSET_CODEX_BIN", str(tmp_path / "nope"))
    with pytest.raises(UsageError, match=r"STUNTSET_CODEX_BIN=.*nope: no such file"):
        binary_for("codex")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UsageError, match="eval --live on claude needs ANTHROPIC_API_KEY set"):
        make_target("claude", live=True)
    with pytest.raises(UsageError, match="no eval target 'gemini'"):
        make_target("gemini")
