"""Projections are pure, total functions of the event list."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stuntset import ScriptedProvider, drive, scenarios
from stuntset.events import (
    ApprovalRequested,
    Event,
    InputRequested,
    MessageCompleted,
    MessageDelta,
    ReasoningDelta,
    RunCrashed,
    RunStarted,
    ToolCompleted,
    Usage,
)
from stuntset.log import Projector, SessionView, diff_views, project


async def scenario_events(name: str, prompt: str = "hi") -> list[Event]:
    return await drive(ScriptedProvider(scenarios.build(name)).start(prompt))


@pytest.mark.anyio
async def test_a_tool_turn_projects_messages_tool_calls_usage_and_status() -> None:
    view = project(await scenario_events("tool_use"))

    assert view.status == "completed"
    assert view.session_id == "session-1"
    assert [(m.item_id, m.text, m.completed) for m in view.messages] == [
        ("msg-1", "Let me look at that file.", True),
        ("msg-2", "The file says: hello from a.txt", True),
    ]
    [call] = view.tool_calls
    assert (call.name, call.input, call.completed, call.output) == (
        "read_file",
        {"path": "a.txt"},
        True,
        "hello from a.txt",
    )
    assert (view.usage.input_tokens, view.usage.output_tokens) == (40, 18)
    assert [run.status for run in view.runs] == ["completed"]
    assert view.pending_approvals == ()


def test_messages_are_assembled_from_deltas_until_completed() -> None:
    started = RunStarted(run_id="r", ts=1.0, session_id="s", provider="p")
    partial = project(
        [
            started,
            MessageDelta(run_id="r", ts=1.0, item_id="m", text="Hel"),
            MessageDelta(run_id="r", ts=1.0, item_id="m", text="lo"),
        ]
    )
    assert [(m.text, m.completed) for m in partial.messages] == [("Hello", False)]
    assert partial.status == "running"


def test_pending_requests_set_the_status_and_a_crash_clears_them() -> None:
    started = RunStarted(run_id="r", ts=1.0, session_id="s", provider="p")
    approval = ApprovalRequested(run_id="r", ts=1.0, request_id="a1", tool="bash")
    question = InputRequested(run_id="r", ts=1.0, request_id="i1", prompt="which?")

    assert project([started, approval]).status == "awaiting_approval"
    assert project([started, question]).status == "awaiting_input"
    [pending] = project([started, approval]).pending_approvals
    assert pending.tool == "bash"
    crashed = project(
        [started, approval, RunCrashed(run_id="r", ts=1.0, kind="protocol", message="cut")]
    )
    assert crashed.status == "crashed"
    assert crashed.pending_approvals == ()
    assert (crashed.runs[0].error_kind, crashed.runs[0].error_message) == ("protocol", "cut")


def test_projection_is_total_on_streams_that_break_the_contract() -> None:
    orphan = ToolCompleted(run_id="r", ts=1.0, tool_call_id="t9", output="?")
    view = project([orphan, Usage(run_id="r", ts=1.0, input_tokens=1, output_tokens=2, cost=0.5)])

    assert view.tool_calls[0].name is None
    assert view.usage.cost == 0.5
    assert project([]) == SessionView()


@pytest.mark.anyio
@pytest.mark.parametrize(
    "name", ["needs_approval", "input_request", "crash_mid_turn", "multi_turn"]
)
async def test_fed_one_at_a_time_equals_the_fold(name: str) -> None:
    events = await scenario_events(name)
    projector = Projector()
    for event in events:
        projector.feed(event)
    assert diff_views(project(events), projector.view()) == []


def test_a_live_view_between_deltas_sees_the_text_so_far_and_keeps_joining() -> None:
    projector = Projector()
    projector.feed(RunStarted(run_id="r", ts=1.0, session_id="s", provider="p"))
    seen = []
    for text in ["a", "b", "c"]:
        projector.feed(MessageDelta(run_id="r", ts=1.0, item_id="m", text=text))
        projector.feed(ReasoningDelta(run_id="r", ts=1.0, item_id="t", text=text.upper()))
        view = projector.view()
        seen.append((view.messages[0].text, view.reasoning[0].text))
    projector.feed(MessageCompleted(run_id="r", ts=1.0, item_id="m", text="final"))
    projector.feed(MessageDelta(run_id="r", ts=1.0, item_id="m", text="late"))
    assert seen == [("a", "A"), ("ab", "AB"), ("abc", "ABC")]
    assert [(m.text, m.completed) for m in projector.view().messages] == [("final", True)]
    assert projector.view().reasoning[0].text == "ABC"


def test_diff_views_names_the_differing_fields() -> None:
    started = RunStarted(run_id="r", ts=1.0, session_id="s", provider="p")
    usage = Usage(run_id="r", ts=1.0, input_tokens=1, output_tokens=2)

    assert diff_views(project([started]), project([started, usage])) == [
        "event_count: 1 != 2",
        "usage.input_tokens: 0 != 1",
        "usage.output_tokens: 0 != 2",
    ]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(range(8)), max_size=30))
def test_any_prefix_of_any_stream_projects(picks: list[int]) -> None:
    pool: list[Event] = [
        RunStarted(run_id="r", ts=1.0, session_id="s", provider="p"),
        ToolCompleted(run_id="r", ts=1.0, tool_call_id="t"),
        ApprovalRequested(run_id="r2", ts=1.0, request_id="a", tool="x"),
        InputRequested(run_id="r", ts=1.0, request_id="a", prompt="?"),
        RunCrashed(run_id="r", ts=1.0, kind="internal", message="x"),
        Usage(run_id="r2", ts=1.0, input_tokens=1, output_tokens=1),
    ]
    pool += [
        MessageDelta(run_id="r", ts=1.0, item_id="m", text="a"),
        MessageCompleted(run_id="r", ts=1.0, item_id="m", text="b"),
    ]
    events = [pool[i] for i in picks]
    assert project(events).event_count == len(events)
