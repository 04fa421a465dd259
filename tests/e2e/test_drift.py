"""``stuntset drift`` over the whole catalog with the real binaries shipped in the extras'
wheels (the bundled ``claude``, ``codex`` from openai-codex-cli-bin), over the model double,
against the fakes, in their columns (``claude``, ``claude-session``, ``codex``,
``codex-exec``): any difference outside the committed allowlist fails, and the README table's
columns for them are the ones this run generates. (The ``gemini`` column needs the Node
tier's real CLI: test_drift_gemini.py.)

The run is the command as a user runs it, piped and in a narrow terminal (``COLUMNS=30``):
its table keeps whole scenario names, and the SDKs' own log lines ("Fatal error in message
reader", when a fake exits mid-turn) do not land between its rows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from _drift_readme import only, readme_drift_table
from click.testing import CliRunner

from stuntset import scenarios
from stuntset.cli import main
from stuntset.drift import DriftReport
from stuntset.drift.report import readme_table
from stuntset.drift.runners import COLUMNS, real_binary
from stuntset.drift.sessions import SESSION_SCENARIOS
from stuntset.drift.table import print_drift

#: The columns of the claude and codex binaries (this tier's).
CLIS = [cli for cli, program in COLUMNS.items() if program in ("claude", "codex")]

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
    chosen = [option for cli in CLIS for option in ("--cli", cli)]
    result = CliRunner().invoke(
        main, ["drift", *chosen, "--json", str(path)], env={"COLUMNS": "30"}
    )
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
        kinds = [s["type"] for s in happy.real_steps]
        # the final result after the terminal event (the session column has none)
        assert kinds[-2:] == ["run.completed", "result"] or (
            cli == "claude-session" and kinds[-1] == "run.completed"
        ), kinds
        if cli != "claude-session":
            assert set(happy.real_steps[-1]) > {"type", "usage"}
    assert not run.report.stale, run.report.stale  # every allowlist entry matched
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
    # the allowlist stays small, and most scenarios agree in every column
    from stuntset.drift.allowlist import load_allowlist

    assert len(load_allowlist()) <= 9
    agreeing = {
        name
        for name in scenarios.names()
        if all(cells[name, cli].status in ("same", "not played") for cli in CLIS)
    }
    assert len(agreeing) >= 12, sorted(set(scenarios.names()) - agreeing)
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
    """A claude process that dies mid-turn makes claude-agent-sdk log "Fatal error in message
    reader"; Python's last-resort handler would print it between the table's rows. (No
    catalog scenario kills the claude process now; the hold-back itself is proven in
    tests/unit/checks/test_matrix.py.)"""
    assert "Fatal error" not in run.stdout
    assert "Fatal error" not in run.stderr  # held back while the runs go, counted after


def test_the_readme_shows_this_table(run: Run) -> None:
    table = only(readme_table(run.report), CLIS)
    assert only(readme_drift_table(), CLIS) == table, (
        f"README.md's drift table is stale in its claude and codex columns; this run's:\n{table}"
    )


def test_the_tool_scenarios_compare_the_binaries_own_tools(run: Run) -> None:
    """Played with claude's Read/Bash/AskUserQuestion and codex's exec_command, not the
    catalog's read_file/bash/list_files (which neither binary has): the calls, their inputs
    (working directory as $CWD) and their outputs are compared and agree."""
    cells = {(c.scenario, c.cli): c for c in run.report.cells}
    for cli in ("claude", "codex", "codex-exec"):
        tool = cells["tool_use", cli]
        assert tool.status == "same", tool.label
        started = [s for s in tool.real_steps if s["type"] == "tool.started"]
        completed = [s for s in tool.real_steps if s["type"] == "tool.completed"]
        assert [s["name"] for s in started] == ["Read" if cli == "claude" else "command_execution"]
        assert completed[0]["output"].endswith("hello from a.txt")
        assert completed[0]["is_error"] is False
    ask = [s["type"] for s in cells["input_request", "claude"].real_steps]
    assert "input.requested" in ask
    assert cells["input_request", "claude"].status == "same"
    assert all("read_file" not in str(c.real_steps) for c in run.report.cells)


def test_the_report_names_the_binaries_and_their_versions(run: Run) -> None:
    binaries = run.json["binaries"]
    assert isinstance(binaries, dict)
    assert set(binaries) == {"claude", "codex"}
    assert "Claude Code" in binaries["claude"]
    assert "codex-cli" in binaries["codex"]
    assert f"real claude: {binaries['claude']}" in run.stdout


def test_a_difference_outside_the_allowlist_fails_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real codex that no longer retries a broken model stream (its ``stream_max_retries``
    set to 0 on its command line, as a user's newer or configured binary might behave) ends
    ``crash_mid_turn`` otherwise than the fake: the command says where, and fails."""
    real = real_binary("codex")
    assert real is not None
    changed = tmp_path / "codex"
    changed.write_text(
        f'#!/bin/sh\nexec "{real}" -c model_providers.stuntset.stream_max_retries=0 "$@"\n'
    )
    changed.chmod(0o755)
    code = print_drift(["codex"], ["crash_mid_turn"], codex_bin=changed, workdir=tmp_path / "w")
    out = capsys.readouterr().out
    assert code == 1
    assert "DIFFERS step 5 (run.crashed) kind: real 'internal', fake 'http'" in out


def test_an_allowlist_entry_that_matches_nothing_fails_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unused = tmp_path / "allowlist.toml"
    unused.write_text(
        "[[allowed]]\ncolumn = 'codex'\nscenario = 'happy_path'\nstep = 1\nfield = 'text'\n"
        "real = 'a'\nfake = 'b'\nreason = 'fake gap: none'\n"
    )
    code = print_drift(["codex"], ["happy_path"], allowlist=unused, workdir=tmp_path / "w")
    captured = capsys.readouterr()
    assert code == 1
    assert "│ happy_path" in captured.out
    assert "same" in captured.out
    assert (
        "allowlist: the difference in 'text' at step 1 of happy_path on codex matched nothing "
        "this run (the run fails)" in captured.err
    )


def test_an_unknown_outcome_of_a_race_fails_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """happy_path's text is not one of the race's outcomes: the run fails, naming it."""
    race = tmp_path / "allowlist.toml"
    race.write_text(
        "[[race]]\ncolumn = 'codex'\nscenario = 'happy_path'\nstep = 1\n"
        "outcomes = [['run.killed'], ['message.delta text=\"x\"']]\nreason = 'race: none'\n"
    )
    code = print_drift(["codex"], ["happy_path"], allowlist=race, workdir=tmp_path / "w")
    out = capsys.readouterr().out
    assert code == 1
    assert "DIFFERS step 1: the real side's outcome of the race is not one the allowlist" in out
