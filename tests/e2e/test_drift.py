"""``stuntset drift`` over the whole catalog with the real binaries shipped in the extras'
wheels (the bundled ``claude``, ``codex`` from openai-codex-cli-bin), over the model double,
against the fakes, in every column (``claude``, ``claude-session``, ``codex``,
``codex-exec``): any difference outside the committed allowlist fails, and the README's table
is the one this run generates.

The run is the command as a user runs it, piped and in a narrow terminal (``COLUMNS=30``):
its table keeps whole scenario names, and the SDKs' own log lines ("Fatal error in message
reader", when a fake exits mid-turn) do not land between its rows."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from stuntset import scenarios
from stuntset.cli import main
from stuntset.drift import DriftReport
from stuntset.drift.report import readme_table
from stuntset.drift.runners import CLIS, real_binary
from stuntset.drift.sessions import SESSION_SCENARIOS
from stuntset.drift.table import print_drift

README = Path(__file__).parents[2] / "README.md"
_MARKERS = re.compile(r"<!-- drift-table -->\n(.*?)<!-- /drift-table -->", re.S)

pytestmark = [
    pytest.mark.real_cli,
    pytest.mark.skipif(
        any(real_binary(cli) is None for cli in CLIS),
        reason="the real claude/codex binaries come with the claude and codex extras",
    ),
    pytest.mark.real_time,
    pytest.mark.timeout(900),
]


@dataclass
class Run:
    report: DriftReport
    json: dict[str, object]
    stdout: str
    stderr: str
    exit_code: int


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    path = tmp_path_factory.mktemp("drift") / "drift.json"
    result = CliRunner().invoke(main, ["drift", "--json", str(path)], env={"COLUMNS": "30"})
    text = path.read_text()
    return Run(
        DriftReport.from_json(text),
        json.loads(text),
        result.stdout,
        result.stderr,
        result.exit_code,
    )


def test_no_difference_outside_the_allowlist(run: Run) -> None:
    broken = [
        f"{c.scenario} on {c.cli}: {c.label}"
        for c in run.report.cells
        if c.status in ("differs", "error")
    ]
    assert not broken, "\n".join(broken)
    assert not run.report.failed
    assert run.exit_code == 0, run.stdout + run.stderr


def test_the_whole_catalog_is_played_in_every_column(run: Run) -> None:
    cells = {(c.scenario, c.cli): c for c in run.report.cells}
    assert set(cells) == {(name, cli) for name in scenarios.names() for cli in CLIS}
    for (name, cli), cell in cells.items():  # the session column plays its own scenarios
        played = cli != "claude-session" or name in SESSION_SCENARIOS
        assert (cell.status != "not played") == played, cell
    # not vacuous: the plain scenarios agree, and every real run reached the model double
    # (its outcome is known) or, for spawn_missing, failed to spawn
    for cli in CLIS:
        happy = cells["happy_path", cli]
        assert happy.status == "same"
        assert happy.real_steps == happy.fake_steps
        assert [s["type"] for s in happy.real_steps][-1] == "run.completed"
    assert all(
        c.real != "no terminal" and c.fake != "no terminal"
        for c in run.report.cells
        if c.status != "not played"
    )
    # the session column sent a second query in the same session and an interrupted one
    second = [s["type"] for s in cells["happy_path", "claude-session"].real_steps]
    assert second.count("run.started") == second.count("run.completed") == 2
    stuck = [s["type"] for s in cells["stuck", "claude-session"].real_steps]
    assert [t for t in stuck if t.startswith("run.") and t != "run.started"] == [
        "run.killed",
        "run.completed",
    ]
    assert cells["happy_path", "codex"].requests == 1  # the real codex asked the double once
    assert cells["happy_path", "codex-exec"].requests == 1


def test_the_json_report(run: Run) -> None:
    assert run.json["failed"] is False
    cells = run.json["cells"]
    assert isinstance(cells, list)
    assert len(cells) == len(scenarios.names()) * len(CLIS)
    assert {"scenario", "cli", "status", "real", "fake", "difference", "reason"} <= set(cells[0])


def test_the_table_piped_and_narrow_keeps_whole_scenario_names(run: Run) -> None:
    for name in scenarios.names():
        assert f"│ {name} " in run.stdout, name
    for cli in CLIS:
        assert f" {cli} " in run.stdout


def test_the_sdks_log_lines_stay_out_of_the_table(run: Run) -> None:
    """A fake claude that exits mid-turn makes claude-agent-sdk log "Fatal error in message
    reader"; Python's last-resort handler would print it between the table's rows."""
    assert "Fatal error" not in run.stdout
    assert "Fatal error" not in run.stderr  # held back while the runs go, counted after
    assert "log line(s) from the client SDKs held back" in run.stderr


def test_the_readme_shows_this_table(run: Run) -> None:
    found = _MARKERS.search(README.read_text(encoding="utf-8"))
    assert found is not None, "README.md has no <!-- drift-table --> block"
    table = readme_table(run.report)
    assert found.group(1) == table, f"README.md's drift table is stale; this run's:\n{table}"


def test_a_difference_outside_the_allowlist_fails_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "allowlist.toml"
    empty.write_text("# nothing is allowed\n")
    code = print_drift(["codex-exec"], ["tool_use"], allowlist=empty, workdir=tmp_path / "w")
    out = capsys.readouterr().out
    assert code == 1
    assert "DIFFERS step 3: real message.delta text='The file says: hello from a.txt'" in out
    assert "fake tool.started name='read_file'" in out
