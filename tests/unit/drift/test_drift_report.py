"""Judging a pair of runs against the allowlist, and the report's forms."""

from __future__ import annotations

import json

import pytest

from stuntset.drift.allowlist import Allowed, Race
from stuntset.drift.report import (
    DriftCell,
    DriftReport,
    _judge,
    _unmatched,
    outcome_of,
    readme_table,
)
from stuntset.drift.runners import Played
from stuntset.drift.table import _print_table
from stuntset.events import (
    MessageDelta,
    RunCompleted,
    RunCrashed,
    RunKilled,
    RunStarted,
    ToolStarted,
)


def _run(*tail: object, error: str | None = None) -> Played:
    started = RunStarted(run_id="r", ts=0, session_id="s", provider="p")
    return Played([started, *tail], error)  # type: ignore[list-item]


DONE = RunCompleted(run_id="r", ts=1)
CRASH = RunCrashed(run_id="r", ts=1, kind="http", message="API Error: 500", retryable=True)


def test_the_same_runs_are_same() -> None:
    cell, used = _judge("happy_path", "claude", _run(DONE), _run(DONE), [])
    assert (cell.status, cell.label, used) == ("same", "same", [])
    assert (cell.real, cell.fake) == ("completed", "completed")


def test_a_difference_outside_the_allowlist_differs() -> None:
    cell, _ = _judge("stream_cut", "codex", _run(CRASH), _run(DONE), [])
    assert cell.status == "differs"
    assert cell.label == (
        "DIFFERS step 1: real run.crashed kind='http' retryable=True message='api error 500'; "
        "fake run.completed stop_reason='end_turn'"
    )
    assert DriftReport([cell]).failed


WHOLE = Allowed(
    "codex",
    "stream_cut",
    1,
    "step",
    ["run.crashed kind='http' retryable=True message='api error 500'"],
    ["run.completed stop_reason='end_turn'"],
    "layer: why",
)


def test_an_allowlisted_difference_is_allowed_with_its_reason() -> None:
    cell, used = _judge("stream_cut", "codex", _run(CRASH), _run(DONE), [WHOLE])
    assert (cell.status, cell.reason, used) == ("allowed", "layer: why", [WHOLE])
    assert cell.label.startswith("allowed: step 1: real run.crashed")
    assert not DriftReport([cell]).failed
    # the same entry does not cover the other column
    other, _ = _judge("stream_cut", "claude", _run(CRASH), _run(DONE), [WHOLE])
    assert other.status == "differs"


def test_a_second_difference_behind_an_allowed_one_still_differs() -> None:
    """Every difference is judged, not only the first: a synthetic one after an allowed one
    fails the cell."""
    text = MessageDelta(run_id="r", ts=1, item_id="i", text="fake only")
    entry = Allowed(
        "codex", "stream_cut", 1, "step", [], ["message.delta text='fake only'"], "layer: x"
    )
    cell, _ = _judge("stream_cut", "codex", _run(DONE), _run(text, DONE), [entry])
    assert cell.status == "allowed"
    other = RunCompleted(run_id="r", ts=1, stop_reason="max_tokens")
    cell, _ = _judge("stream_cut", "codex", _run(DONE), _run(text, other), [entry])
    assert cell.status == "differs"
    assert (
        cell.difference == "step 1 (run.completed) stop_reason: real 'end_turn', fake 'max_tokens'"
    )


RACE = Race(
    ("codex", "claude"),
    "stuck",
    1,
    (("run.killed",), ("message.delta text='Thinking'", "run.killed")),
    "race: timing",
)
KILLED = RunKilled(run_id="r", ts=1)
THINKING = MessageDelta(run_id="r", ts=1, item_id="i", text="Thinking")


def test_a_race_allows_its_known_outcomes_in_any_pairing() -> None:
    for real in (_run(KILLED), _run(THINKING, KILLED)):
        for fake in (_run(KILLED), _run(THINKING, KILLED)):
            cell, used = _judge("stuck", "codex", real, fake, [RACE])
            assert used == [RACE]
            same = real.events == fake.events
            assert cell.status == ("same" if same else "allowed"), (real, fake)


def test_an_unknown_outcome_of_a_race_differs() -> None:
    cell, used = _judge("stuck", "codex", _run(DONE), _run(KILLED), [RACE])
    assert cell.status == "differs"
    assert used == []
    assert cell.difference == (
        "step 1: the real side's outcome of the race is not one the allowlist knows "
        "(it shows run.completed stop_reason='end_turn')"
    )
    # an outcome of the race followed by a difference outside it still differs
    cell, _ = _judge("stuck", "codex", _run(KILLED, DONE), _run(KILLED), [RACE])
    assert cell.status == "differs"


def test_a_side_that_could_not_be_played_is_an_error() -> None:
    cell, _ = _judge("slow", "claude", _run(DONE), _run(error="no terminal within 1 s"), [])
    assert cell.status == "error"
    assert cell.label == "ERROR fake: no terminal within 1 s"
    assert cell.fake == "no terminal"
    assert DriftReport([cell]).failed
    real, _ = _judge("slow", "claude", _run(error="boom"), _run(DONE), [])
    assert real.label == "ERROR real: boom"


def test_an_entry_that_matched_nothing_fails_the_report() -> None:
    cell = DriftCell("stuck", "codex", "same", "killed", "killed")
    assert not DriftReport([cell]).failed
    assert DriftReport([cell], stale=[RACE]).failed


def test_an_entry_is_unmatched_when_a_column_it_names_was_judged_without_it() -> None:
    """Unmatched (the run fails): a judged cell of its column that did not use it. Not when
    that column did not play the scenario, or could not play it (an error cell fails
    anyway), or the entry matched there."""
    judged = {("codex", "stream_cut"): DriftCell("stream_cut", "codex", "same")}
    assert _unmatched(WHOLE, judged, [])
    assert not _unmatched(WHOLE, judged, [(WHOLE, "codex")])
    assert _unmatched(WHOLE, judged, [(WHOLE, "claude")])
    for status in ("not played", "not installed", "error"):
        cells = {("codex", "stream_cut"): DriftCell("stream_cut", "codex", status)}
        assert not _unmatched(WHOLE, cells, [])
    assert not _unmatched(WHOLE, {}, [])  # the column was not chosen this run


def test_the_working_directory_is_normalized() -> None:
    started = ToolStarted(
        run_id="r", ts=1, tool_call_id="t", name="Read", input={"file_path": "/w/real/cwd/a"}
    )
    fake = ToolStarted(
        run_id="r", ts=1, tool_call_id="u", name="Read", input={"file_path": "/w/fake/cwd/a"}
    )
    real_run, fake_run = _run(started, DONE), _run(fake, DONE)
    real_run.cwd, fake_run.cwd = "/w/real/cwd", "/w/fake/cwd"
    cell, _ = _judge("tool_use", "claude", real_run, fake_run, [])
    assert cell.status == "same"
    assert cell.real_steps[1]["input"] == {"file_path": "$CWD/a"}
    fake_run.cwd = ""  # not normalized: the paths differ
    assert _judge("tool_use", "claude", real_run, fake_run, [])[0].status == "differs"


_SUCCESS = {"subtype": "success", "is_error": False, "api_error_status": None, "usage": True}


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        (
            "subtype",
            "error_during_execution",
            "subtype: real 'success', fake 'error_during_execution'",
        ),
        ("is_error", True, "is_error: real False, fake True"),
        ("api_error_status", 529, "api_error_status: real None, fake 529"),
        ("usage", False, "usage: real True, fake False"),
    ],
)
def test_the_final_results_fields_are_compared(field: str, value: object, shown: str) -> None:
    """The same events, a final result that says otherwise (what an app reading the
    ResultMessage or turn/completed sees): a difference at the ``result`` step."""
    real_run, fake_run = _run(DONE), _run(DONE)
    real_run.result, fake_run.result = dict(_SUCCESS), {**_SUCCESS, field: value}
    cell, _ = _judge("happy_path", "claude", real_run, fake_run, [])
    assert cell.status == "differs"
    assert cell.difference == f"step 2 (result) {shown}"
    fake_run.result = dict(_SUCCESS)
    same, _ = _judge("happy_path", "claude", real_run, fake_run, [])
    assert same.status == "same"
    assert same.real == "completed"
    assert "| completed [success, usage] | completed [success, usage] | same |" in (
        readme_table(DriftReport([same]), [])
    )
    raced = Race("claude", "happy_path", 1, (("run.completed",),), "race: why")
    assert "| completed | completed | allowed (race) |" in readme_table(
        DriftReport([same]), [raced]
    )


def test_a_final_result_only_one_side_has_differs() -> None:
    real_run, fake_run = _run(DONE), _run(DONE)
    real_run.result = {"status": "failed", "error": "internalServerError", "usage": True}
    cell, _ = _judge("crash_mid_turn", "codex", real_run, fake_run, [])
    assert cell.status == "differs"
    assert cell.difference.startswith("step 2: real result status='failed'")
    assert readme_table(DriftReport([cell]), []).splitlines()[2] == (
        "| `crash_mid_turn` | completed [failed, internalServerError, usage] | completed | "
        "**differs** |"
    )


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
        stale=[RACE],
        binaries={"claude": "/bin/claude (2.1.332 (Claude Code))"},
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
    assert data["binaries"] == {"claude": "/bin/claude (2.1.332 (Claude Code))"}
    table = readme_table(report, [RACE])
    assert table.splitlines()[2:] == [
        "| `happy_path` | completed | completed | same | completed | completed | same |",
        "| `stuck` | killed | killed | allowed (race) | killed | killed | **differs** |",
    ]
    entry = Allowed(("claude", "codex"), "happy_path", 1, "text", "a", "b", "fake gap: g")
    table = readme_table(DriftReport(report.cells[:2]), [entry])
    assert table.splitlines()[2:] == [
        "| `happy_path` | completed | completed | allowed (fake gap) | completed | completed "
        "| allowed (fake gap) |",
    ]


def test_a_report_comes_back_from_its_json() -> None:
    report = _report()
    report.stale = [RACE, WHOLE]
    back = DriftReport.from_json(report.to_json())
    assert back.cells == report.cells
    assert back.stale == report.stale
    assert back.binaries == report.binaries
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
