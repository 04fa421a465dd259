from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stuntset import events as ev

SAMPLES: list[ev.Event] = [
    ev.RunStarted(run_id="run-1", ts=1.0, session_id="s-1", provider="scripted", model="m"),
    ev.MessageDelta(run_id="run-1", ts=1.0, item_id="msg-1", text="Hel"),
    ev.MessageCompleted(run_id="run-1", ts=1.5, item_id="msg-1", text="Hello"),
    ev.ReasoningDelta(run_id="run-1", ts=1.0, item_id="r-1", text="hmm"),
    ev.ReasoningCompleted(run_id="run-1", ts=1.0, item_id="r-1", text="hmm"),
    ev.ToolStarted(run_id="run-1", ts=2.0, tool_call_id="t-1", name="ls", input={"path": "."}),
    ev.ToolCompleted(
        run_id="run-1", ts=2.0, tool_call_id="t-1", output={"files": [1]}, is_error=True
    ),
    ev.ApprovalRequested(run_id="run-1", ts=2.0, request_id="a-1", tool_call_id="t-1", tool="ls"),
    ev.ApprovalResolved(run_id="run-1", ts=2.0, request_id="a-1", decision="deny", message="no"),
    ev.InputRequested(run_id="run-1", ts=2.0, request_id="i-1", prompt="which?"),
    ev.InputResolved(run_id="run-1", ts=2.0, request_id="i-1", text="main"),
    ev.Usage(run_id="run-1", ts=3.0, input_tokens=10, output_tokens=5, cost=0.25),
    ev.RunCompleted(run_id="run-1", ts=3.0, stop_reason="max_tokens", seq=7),
    ev.RunCrashed(run_id="run-1", ts=3.0, kind="rate_limited", message="429", retryable=True),
    ev.RunKilled(run_id="run-1", ts=3.0, reason="user"),
]


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.type)
def test_every_event_round_trips_exactly(event: ev.Event) -> None:
    data = ev.encode(event)
    assert ev.decode(data) == event
    assert ev.decode(data.decode()) == event
    assert type(ev.decode(data)) is type(event)


def test_events_are_tagged_by_type() -> None:
    data = ev.to_builtins(SAMPLES[1])
    assert data == {
        "type": "message.delta",
        "run_id": "run-1",
        "ts": 1.0,
        "item_id": "msg-1",
        "text": "Hel",
    }
    assert SAMPLES[1].type == ev.type_of(SAMPLES[1]) == "message.delta"


def test_the_vocabulary_is_exactly_the_design() -> None:
    tags = {ev.type_of(e) for e in SAMPLES}
    assert tags == {
        "run.started", "message.delta", "message.completed", "reasoning.delta",
        "reasoning.completed", "tool.started", "tool.completed", "approval.requested",
        "approval.resolved", "input.requested", "input.resolved", "usage", "run.completed",
        "run.crashed", "run.killed",
    }  # fmt: skip
    assert {t for t in tags if ev.is_terminal(ev.decode(ev.encode(
        next(e for e in SAMPLES if e.type == t))))} == ev.TERMINAL_TYPES  # fmt: skip


def test_events_are_immutable() -> None:
    with pytest.raises(AttributeError):
        SAMPLES[0].run_id = "other"  # type: ignore[misc]


def test_json_lines_round_trip_and_skip_blank_lines() -> None:
    data = ev.encode_lines(SAMPLES)
    assert data.count(b"\n") == len(SAMPLES)
    assert ev.decode_lines(data + b"\n\n") == SAMPLES
    assert ev.decode_lines(data.decode()) == SAMPLES


def test_with_seq_copies() -> None:
    stamped = ev.with_seq(SAMPLES[0], 4)
    assert stamped.seq == 4
    assert SAMPLES[0].seq is None


def test_decode_names_the_bad_field() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"\$\.text"):
        ev.decode(b'{"type":"message.delta","run_id":"r","ts":0,"item_id":"m","text":5}')
    with pytest.raises(msgspec.ValidationError, match=r"message\.deltaa"):
        ev.decode(b'{"type":"message.deltaa","run_id":"r","ts":0}')


@given(
    text=st.text(),
    ts=st.floats(allow_nan=False, allow_infinity=False),
    seq=st.none() | st.integers(min_value=0, max_value=2**62),
    payload=st.dictionaries(st.text(), st.integers() | st.text() | st.booleans() | st.none()),
)
def test_round_trip_property(
    text: str, ts: float, seq: int | None, payload: dict[str, object]
) -> None:
    for event in (
        ev.MessageDelta(run_id="r", ts=ts, seq=seq, item_id=text, text=text),
        ev.ToolStarted(run_id="r", ts=ts, seq=seq, tool_call_id="t", name=text, input=payload),
        ev.ToolCompleted(run_id="r", ts=ts, seq=seq, tool_call_id="t", output=payload),
    ):
        assert ev.decode(ev.encode(event)) == event
