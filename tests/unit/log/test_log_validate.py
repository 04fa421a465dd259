"""Bad events are refused at the door, by every store alike: one ``InvalidEvent`` naming the
batch index and the field, and nothing of the batch is stored."""

from __future__ import annotations

import math
from typing import Any

import pytest
from _log_helpers import deltas, seqs

from stuntset.errors import InvalidEvent, UsageError
from stuntset.events import (
    Event,
    MessageDelta,
    RunCrashed,
    ToolCompleted,
    ToolStarted,
    Usage,
)
from stuntset.log import EventLog

BAD: list[tuple[str, Any, str | None]] = [
    ("ts as a string", MessageDelta(run_id="r", ts="now", item_id="m", text="x"), "ts"),  # type: ignore[arg-type]
    ("ts NaN", MessageDelta(run_id="r", ts=math.nan, item_id="m", text="x"), "ts"),
    ("ts infinite", MessageDelta(run_id="r", ts=math.inf, item_id="m", text="x"), "ts"),
    (
        "kind outside its literal",
        RunCrashed(run_id="r", ts=1.0, kind="network", message="m"),
        "kind",
    ),  # type: ignore[arg-type]
    ("cost NaN", Usage(run_id="r", ts=1.0, input_tokens=1, output_tokens=1, cost=math.nan), "cost"),
    ("run_id not a str", MessageDelta(run_id=7, ts=1.0, item_id="m", text="x"), "run_id"),  # type: ignore[arg-type]
    (
        "NaN inside a payload",
        ToolStarted(run_id="r", ts=1.0, tool_call_id="t", name="n", input={"x": math.nan}),
        "input",
    ),
    (
        "a tuple inside a payload",
        ToolCompleted(run_id="r", ts=1.0, tool_call_id="t", output=(1, 2)),
        "output",
    ),
    (
        "a non-string key",
        ToolStarted(run_id="r", ts=1.0, tool_call_id="t", name="n", input={1: "x"}),
        "input",
    ),  # type: ignore[dict-item]
    (
        "an object in a payload",
        ToolCompleted(run_id="r", ts=1.0, tool_call_id="t", output=object()),
        "output",
    ),
    ("not an event at all", {"type": "message.delta"}, None),
]


@pytest.mark.parametrize(("bad", "field"), [(b, f) for _, b, f in BAD], ids=[n for n, _, _ in BAD])
def test_a_bad_event_is_refused_naming_index_and_field_and_nothing_is_stored(
    log: EventLog, bad: Any, field: str | None
) -> None:
    log.append("s1", deltas(2))
    with pytest.raises(InvalidEvent) as info:
        log.append("s1", [*deltas(2, tag="b"), bad, *deltas(1)])

    assert (info.value.index, info.value.field) == (2, field)
    message = str(info.value)
    assert "events[2]" in message
    assert "nothing of this batch was stored" in message
    if field is not None:
        assert repr(field) in message
    assert isinstance(info.value, UsageError)
    assert seqs(log.read("s1")) == [1, 2]
    assert log.head("s1") == 2
    assert seqs(log.append("s1", deltas(1))) == [3]  # no gap left behind


def test_a_refused_first_batch_leaves_no_session_behind(log: EventLog) -> None:
    with pytest.raises(InvalidEvent):
        log.append("s1", [MessageDelta(run_id="r", ts=math.nan, item_id="m", text="x")])
    assert log.sessions() == []
    assert log.read("s1") == []


def test_what_append_returns_is_what_reads_back_on_every_store(log: EventLog) -> None:
    given: list[Event] = [
        MessageDelta(run_id="r", ts=1, item_id="m", text="x"),  # an int ts reads back as float
        ToolStarted(run_id="r", ts=1.5, tool_call_id="t", name="n", input={"a": [1, {"b": None}]}),
    ]
    stored = log.append("s1", given)
    assert stored == log.read("s1")
    assert isinstance(stored[0].ts, float)
