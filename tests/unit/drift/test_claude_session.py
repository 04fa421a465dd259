"""The ``claude-session`` column: one ``ClaudeSDKClient`` session per scenario (its plans, and
the session played on stuntset's fake ``claude``)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("claude_agent_sdk")

from stuntset import install_cli, scenarios
from stuntset.drift.claude_session import play_session
from stuntset.drift.runners import PROMPT, _claude
from stuntset.drift.sessions import FOLLOW_UP, SESSION_SCENARIOS, session_plan
from stuntset.events import Event
from stuntset.script import ApprovalRequest, Delay, Script, Text, ToolCall, ToolResult

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the adapter runs its CLI sessions on asyncio


def test_the_plans() -> None:
    script, prompts = session_plan("happy_path") or (None, [])
    assert prompts == [PROMPT, FOLLOW_UP]
    assert script is not None
    assert len(script.turns) == 2  # the follow-up's answer added
    _, prompts = session_plan("multi_turn") or (None, [])
    assert prompts == [PROMPT, f"{FOLLOW_UP} (2)", f"{FOLLOW_UP} (3)"]
    assert session_plan("spawn_missing") == (scenarios.build("spawn_missing"), [PROMPT])
    assert session_plan("tool_use") is None  # not played: the claude column shows it
    assert set(SESSION_SCENARIOS) <= set(scenarios.names())


async def _session(tmp_path: Path, script: Script, prompts: list[str]) -> list[Event]:
    cli = install_cli("claude", script, bin_dir=tmp_path / "bin", time_scale=0.1)
    events, error = await play_session(
        _claude(cli.path, tmp_path), script, prompts, timeout=30.0, quiet=15.0
    )
    assert error is None
    return events


def _runs(events: list[Event]) -> list[list[str]]:
    runs: list[list[str]] = []
    for event in events:
        if event.type == "run.started":
            runs.append([])
        runs[-1].append(event.type)
    return runs


async def test_each_query_is_a_run_of_one_session(tmp_path: Path) -> None:
    script, prompts = session_plan("multi_turn") or (Script.of(), [])
    events = await _session(tmp_path, script, prompts)
    assert [run[-1] for run in _runs(events)] == ["run.completed"] * 3
    texts = [e.text for e in events if e.type == "message.completed"]  # type: ignore[attr-defined]
    assert texts == ["Answer number 1.", "Answer number 2.", "Answer number 3."]
    sessions = {e.session_id for e in events if e.type == "run.started"}  # type: ignore[attr-defined]
    assert len(sessions) == 1


async def test_an_interrupted_query_and_the_next_one(tmp_path: Path) -> None:
    script, prompts = session_plan("stuck") or (Script.of(), [])
    events = await _session(tmp_path, script, prompts)
    assert [run[-1] for run in _runs(events)] == ["run.killed", "run.completed"]


async def test_approvals_reach_the_query_that_asked(tmp_path: Path) -> None:
    script = Script.of(
        [Text("First.")],
        [ToolCall("Bash", {"command": "ls"}), ApprovalRequest(), ToolResult("a.txt"), Text("Ok.")],
    )
    events = await _session(tmp_path, script, [PROMPT, FOLLOW_UP])
    second = _runs(events)[1]
    assert second[:3] == ["run.started", "tool.started", "approval.requested"]
    assert "approval.resolved" in second
    assert second[-1] == "run.completed"


async def test_a_session_that_cannot_connect(tmp_path: Path) -> None:
    provider = _claude(tmp_path / "missing" / "claude", tmp_path)
    events, error = await play_session(
        provider, scenarios.build("spawn_missing"), [PROMPT, FOLLOW_UP], timeout=30.0, quiet=15.0
    )
    assert error is None
    assert [e.type for e in events] == ["run.started", "run.crashed"]  # no second query
    assert events[-1].kind == "spawn_failed"  # type: ignore[attr-defined]


async def test_a_query_with_no_terminal_in_time_is_why_the_session_was_not_played(
    tmp_path: Path,
) -> None:
    # real time: the session's own timeout (0.3 s) is what is tested; the delay outlasts it
    script = Script.of([Delay(30.0), Text("Too late.")])
    cli = install_cli("claude", script, bin_dir=tmp_path / "bin")
    _, error = await play_session(
        _claude(cli.path, tmp_path), script, [PROMPT], timeout=0.3, quiet=15.0
    )
    assert error == "query 1: no terminal event within 0.3 s"
