"""What drift compares: ids, timings, chunking and free text dropped; behaviour kept."""

from __future__ import annotations

from stuntset.drift.normalize import describe, normalize, short
from stuntset.events import (
    MessageCompleted,
    MessageDelta,
    RunCrashed,
    RunStarted,
    ToolCompleted,
    ToolStarted,
    Usage,
)


def test_ids_timings_and_chunking_are_not_compared() -> None:
    one = [
        RunStarted(run_id="r1", ts=1.0, session_id="s1", provider="claude-code", model="m"),
        MessageDelta(run_id="r1", ts=1.1, item_id="a", text="Hel"),
        MessageDelta(run_id="r1", ts=1.2, item_id="a", text="lo"),
        MessageCompleted(run_id="r1", ts=1.3, item_id="a", text="Hello"),
        ToolStarted(run_id="r1", ts=2.0, tool_call_id="t1", name="Bash", input={"c": 1}),
        ToolCompleted(run_id="r1", ts=2.1, tool_call_id="t1", output="real output"),
        Usage(run_id="r1", ts=3.0, input_tokens=3, output_tokens=4, cost=0.5),
        RunCrashed(run_id="r1", ts=4.0, kind="http", message="API Error: 500"),
    ]
    two = [
        RunStarted(run_id="r9", ts=9.0, session_id="s9", provider="claude-code"),
        MessageDelta(run_id="r9", ts=9.1, item_id="b", text="Hello"),
        MessageCompleted(run_id="r9", ts=9.3, item_id="b", text="Hello"),
        ToolStarted(run_id="r9", ts=9.4, tool_call_id="t9", name="Bash", input={"c": 1}),
        ToolCompleted(run_id="r9", ts=9.5, tool_call_id="t9", output="scripted output"),
        Usage(run_id="r9", ts=9.6, input_tokens=3, output_tokens=4),
        RunCrashed(run_id="r9", ts=9.7, kind="http", message="another text"),
    ]
    assert normalize(one) == normalize(two)
    assert normalize(one)[1] == {"type": "message.delta", "text": "Hello"}
    assert normalize(one)[-1] == {"type": "run.crashed", "kind": "http", "retryable": False}


def test_behaviour_is_kept() -> None:
    ok = ToolCompleted(run_id="r", ts=0, tool_call_id="t")
    failed = ToolCompleted(run_id="r", ts=0, tool_call_id="t", is_error=True)
    assert normalize([ok]) != normalize([failed])
    assert normalize([Usage(run_id="r", ts=0, input_tokens=1, output_tokens=2)]) == [
        {"type": "usage", "input_tokens": 1, "output_tokens": 2}
    ]


def test_describe_and_short() -> None:
    assert describe(None) == "(nothing)"
    assert describe({"type": "run.killed"}) == "run.killed"
    assert describe({"type": "tool.started", "name": "Bash"}) == "tool.started name='Bash'"
    assert short("x" * 100, limit=10) == "'xxxxxxxx…"
