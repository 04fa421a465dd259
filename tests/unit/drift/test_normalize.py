"""What drift compares: ids, timings, chunking and free text dropped; behaviour kept."""

from __future__ import annotations

import itertools

import pytest

from stuntset.drift.normalize import describe, message_class, normalize, short
from stuntset.events import (
    Event,
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
        ToolCompleted(run_id="r1", ts=2.1, tool_call_id="t1", output="the output"),
        Usage(run_id="r1", ts=3.0, input_tokens=3, output_tokens=4, cost=0.5),
        RunCrashed(run_id="r1", ts=4.0, kind="http", message="API Error: 500"),
    ]
    two = [
        RunStarted(run_id="r9", ts=9.0, session_id="s9", provider="claude-code"),
        MessageDelta(run_id="r9", ts=9.1, item_id="b", text="Hello"),
        MessageCompleted(run_id="r9", ts=9.3, item_id="b", text="Hello"),
        ToolStarted(run_id="r9", ts=9.4, tool_call_id="t9", name="Bash", input={"c": 1}),
        ToolCompleted(run_id="r9", ts=9.5, tool_call_id="t9", output="the output"),
        Usage(run_id="r9", ts=9.6, input_tokens=3, output_tokens=4),
        RunCrashed(run_id="r9", ts=9.7, kind="http", message="API Error: 500 (another text)"),
    ]
    assert normalize(one) == normalize(two)
    assert normalize(one)[1] == {"type": "message.delta", "text": "Hello"}
    assert normalize(one)[-1] == {
        "type": "run.crashed",
        "kind": "http",
        "retryable": False,
        "message": "api error 500",
    }


def test_behaviour_is_kept() -> None:
    ok = ToolCompleted(run_id="r", ts=0, tool_call_id="t")
    failed = ToolCompleted(run_id="r", ts=0, tool_call_id="t", is_error=True)
    assert normalize([ok]) != normalize([failed])
    assert normalize([Usage(run_id="r", ts=0, input_tokens=1, output_tokens=2)]) == [
        {"type": "usage", "input_tokens": 1, "output_tokens": 2}
    ]


def test_what_an_app_sees_beyond_the_event_kinds_is_compared() -> None:
    """Tool output and the crash message's class differ: each is a difference."""
    out = [ToolCompleted(run_id="r", ts=0, tool_call_id="t", output=x) for x in ("a", "b")]
    assert normalize(out[:1]) != normalize(out[1:])
    crashes = [
        RunCrashed(run_id="r", ts=0, kind="http", message=m)
        for m in ("API Error: 401 expired", "API Error: 500 no turn")
    ]
    assert normalize(crashes[:1]) != normalize(crashes[1:])


def test_the_working_directory_is_written_cwd() -> None:
    started = ToolStarted(
        run_id="r", ts=0, tool_call_id="t", name="Read", input={"file_path": "/w/cwd/a.txt"}
    )
    (step,) = normalize([started], "/w/cwd")
    assert step["input"] == {"file_path": "$CWD/a.txt"}


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ("API Error: 401 {...OAuth token has expired}", "api error 401"),
        ("unexpected status 401 Unauthorized: OAuth token has expired", "status 401"),
        (
            "exceeded retry limit, last status: 429 Too Many Requests, request id: req-2",
            "status 429",
        ),
        ("Claude Code not found at: /tmp/x/claude", "not found"),
        ("[Errno 2] No such file or directory: '/tmp/x/codex'", "not found"),
        (
            "We\u2019re currently experiencing high demand, which may cause temporary errors.",
            "high demand",
        ),
        ("Failed to decode JSON: {...", "not json"),
        ("a stdout line that is not JSON: '{'", "not json"),
        ("Codex process closed stdout. stderr_tail=fatal", "closed"),
        ("codex exec exited with code 1 before the turn ended", "closed"),
        ("the request timed out", "timeout"),
        ("something else", "other"),
        ("", "other"),
    ],
)
def test_message_classes(message: str, kind: str) -> None:
    assert message_class(message) == kind


def test_describe_and_short() -> None:
    assert describe(None) == "(nothing)"
    assert describe({"type": "run.killed"}) == "run.killed"
    assert describe({"type": "tool.started", "name": "Bash"}) == "tool.started name='Bash'"
    assert short("x" * 100, limit=10) == "'xxxxxxxx…"


def _orders(calls: int) -> list[list[tuple[str, int]]]:
    """Every order of ``calls`` parallel calls' steps in which each starts before it ends."""
    steps = [(kind, n) for n in range(calls) for kind in ("started", "completed")]
    return [
        list(order)
        for order in itertools.permutations(steps)
        if all(order.index(("started", n)) < order.index(("completed", n)) for n in range(calls))
    ]


def _played(order: list[tuple[str, int]], outputs: dict[int, str]) -> list[Event]:
    events: list[Event] = [MessageCompleted(run_id="r", ts=0, item_id="m", text="Reading")]
    for kind, n in order:
        if kind == "started":
            events.append(
                ToolStarted(run_id="r", ts=0, tool_call_id=f"c{n}", name="Read", input={"f": n})
            )
        else:
            events.append(ToolCompleted(run_id="r", ts=0, tool_call_id=f"c{n}", output=outputs[n]))
    events.append(MessageCompleted(run_id="r", ts=0, item_id="z", text="Done"))
    return events


@pytest.mark.parametrize("calls", [2, 3])
def test_parallel_calls_compare_as_a_set_in_every_order(calls: int) -> None:
    """Every interleaving of the same parallel calls is one normalized run (90 orders of
    three calls), and it is each call started, then completed."""
    outputs = {n: f"out{n}" for n in range(calls)}
    orders = _orders(calls)
    assert len(orders) == {2: 6, 3: 90}[calls]
    seen = {repr(normalize(_played(order, outputs))) for order in orders}
    assert len(seen) == 1
    steps = normalize(_played(orders[0], outputs))
    assert [s["type"] for s in steps[1:-1]] == ["tool.started", "tool.completed"] * calls


@pytest.mark.parametrize("calls", [2, 3])
def test_a_call_that_returned_something_else_still_differs_in_every_order(calls: int) -> None:
    """The set is compared whole: one call's output changed differs, whatever the orders."""
    outputs = {n: f"out{n}" for n in range(calls)}
    changed = {**outputs, calls - 1: "another"}
    orders = _orders(calls)
    for one, other in itertools.product(orders[:: max(1, len(orders) // 7)], repeat=2):
        assert normalize(_played(one, outputs)) != normalize(_played(other, changed))


def test_calls_apart_or_unfinished_keep_their_order() -> None:
    """Calls a message separates are sequential, and a run with a call that never completed
    (killed mid-call) is kept as it came: neither is reordered."""
    b_then_a = (
        _played([("started", 1), ("completed", 1)], {1: "b"})
        + _played([("started", 0), ("completed", 0)], {0: "a"})[1:]
    )
    names = [s.get("input") for s in normalize(b_then_a) if s["type"] == "tool.started"]
    assert names == [{"f": 1}, {"f": 0}]
    unfinished = _played([("started", 1), ("started", 0), ("completed", 1)], {1: "b"})
    steps = normalize(unfinished)[1:-1]
    assert [s.get("input", s.get("output")) for s in steps] == [{"f": 1}, {"f": 0}, "b"]
