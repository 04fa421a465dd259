"""Judging a pair of runs against the allowlist, and the report's forms."""

from __future__ import annotations

import json

import pytest

from stuntset.drift.allowlist import Allowed
from stuntset.drift.report import DriftCell, DriftReport, _judge, outcome_of, readme_table
from stuntset.drift.runners import Played
from stuntset.drift.table import _print_table
from stuntset.events import MessageDelta, RunCompleted, RunCrashed, RunKilled, RunStarted


def _run(*tail: object, error: str | None = None) -> Played:
    started = RunStarted(run_id="r", ts=0, session_id="s", provider="p")
    return Played([started, *tail], error)  # type: ignore[list-item]


DONE = RunCompleted(run_id="r", ts=1)
CRASH = RunCrashed(run_id="r", ts=1, kind="http", message="API Error", retryable=True)


def test_the_same_runs_are_same() -> None:
    cell, entry = _judge("happy_path", "claude", _run(DONE), _run(DONE), [])
    assert (cell.status, cell.label, entry) == ("same", "same", None)
    assert (cell.real, cell.fake) == ("completed", "completed")


def test_a_difference_outside_the_allowlist_differs() -> None:
    cell, _ = _judge("stream_cut", "codex", _run(CRASH), _run(DONE), [])
    assert cell.status == "differs"
    assert cell.label == (
        "DIFFERS step 1: real run.crashed kind='http' retryable=True; "
        "fake run.completed stop_reason='end_turn'"
    )
    assert DriftReport([cell]).failed


def test_an_allowlisted_difference_is_allowed_with_its_reason() -> None:
    entry = Allowed("stream_cut", "codex", "real run.crashed kind='http'", "layer: why")
    cell, used = _judge("stream_cut", "codex", _run(CRASH), _run(DONE), [entry])
    assert (cell.status, cell.reason, used) == ("allowed", "layer: why", entry)
    assert cell.label.startswith("allowed: step 1: real run.crashed")
    assert not DriftReport([cell]).failed
    # the same entry does not cover the other CLI
    other, _ = _judge("stream_cut", "claude", _run(CRASH), _run(DONE), [entry])
    assert other.status == "differs"


def test_a_side_that_could_not_be_played_is_an_error() -> None:
    cell, _ = _judge("slow", "claude", _run(DONE), _run(error="no terminal within 1 s"), [])
    assert cell.status == "error"
    assert cell.label == "ERROR fake: no terminal within 1 s"
    assert cell.fake == "no terminal"
    assert DriftReport([cell]).failed
    real, _ = _judge("slow", "claude", _run(error="boom"), _run(DONE), [])
    assert real.label == "ERROR real: boom"


def test_outcomes() -> None:
    assert outcome_of([CRASH]) == "crashed: http (retryable)"
    assert outcome_of([RunKilled(run_id="r", ts=1)]) == "killed"
    assert outcome_of([MessageDelta(run_id="r", ts=1, item_id="i", text="x")]) == "no terminal"
    assert outcome_of([], "no terminal within 1 s") == "no terminal"


def _report() -> DriftReport:
    return DriftReport(
        [
            DriftCell("happy_path", "claude", "same", "completed", "completed"),
            DriftCell("happy_path", "codex", "same", "completed", "completed"),
            DriftCell("stuck", "claude", "same", "killed", "killed"),
            DriftCell("stuck", "codex", "differs", "killed", "killed", "step 2: a|b"),
        ],
        seconds=12.345,
        stale=[Allowed("stuck", "claude", "x", "race: y")],
    )


def test_markdown_json_and_readme_table() -> None:
    report = _report()
    assert report.markdown().splitlines() == [
        "| scenario | claude | codex |",
        "|---|---|---|",
        "| `happy_path` | same | same |",
        "| `stuck` | same | DIFFERS step 2: a\\|b |",
    ]
    data = json.loads(report.to_json())
    assert (data["seconds"], data["failed"]) == (12.35, True)
    assert data["stale_allowlist"][0]["scenario"] == "stuck"
    table = readme_table(report, [Allowed("stuck", "claude", "x", "race: y")])
    assert table.splitlines()[2:] == [
        "| `happy_path` | completed | completed | same | completed | completed | same |",
        "| `stuck` | killed | killed | allowed (race) | killed | killed | **differs** |",
    ]


def test_a_report_comes_back_from_its_json() -> None:
    report = _report()
    report.stale = [Allowed("stuck", "claude", ("a", "b"), "race: y")]
    back = DriftReport.from_json(report.to_json())
    assert back.cells == report.cells
    assert back.stale == report.stale
    assert back.seconds == 12.35


def test_cells_a_column_does_not_play() -> None:
    cell = DriftCell("tool_use", "claude-session", "not played")
    assert cell.label == "not played"
    assert not DriftReport([cell]).failed
    assert readme_table(DriftReport([cell]), []).splitlines()[2] == (
        "| `tool_use` | — | — | not played |"
    )


def test_the_table_keeps_whole_scenario_names_when_piped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "30")  # piped, and narrow
    _print_table(_report())
    out = capsys.readouterr().out
    assert "happy_path" in out
    assert "DIFFERS step 2: a|b" in out
    assert "…" not in out
