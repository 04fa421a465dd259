"""The events of the runs a test drove, in its timeline (kind ``event``): the seam in
``stuntset.providers.base`` that each run tells of the events it hands over, the rows made of them (one
an event, the deltas of one message in one row), and how long a streamed reply took to the
end of its stream (the model double's journal records it)."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest

from stuntset.doubles.model import StandIn
from stuntset.doubles.model.journal import Journal
from stuntset.driver import drive
from stuntset.events import MessageCompleted, MessageDelta, RunCompleted, RunCrashed, RunStarted
from stuntset.explain.row import Start
from stuntset.explain.runs import MAX_EVENTS, RunEvents, event_line, event_rows
from stuntset.explain.timeline import Timeline
from stuntset.providers import ScriptedProvider
from stuntset.providers.base import event_watcher, watch_events
from stuntset.script import HttpError, Script, Text


def _kept(*events: Any, start: Start) -> RunEvents:
    runs = RunEvents()
    for n, event in enumerate(events):
        runs.events.append((start.mono_ns + (n + 1) * 1_000_000, event))
    return runs


def test_one_row_an_event_with_its_type_and_key_fields() -> None:
    start = Start(mono_ns=0, wall_ns=0)
    crashed = RunCrashed(run_id="r1", ts=1.0, kind="http", message="boom", retryable=True)
    runs = _kept(
        RunStarted(run_id="r1", ts=0.0, session_id="s1", provider="p"), crashed, start=start
    )
    rows = event_rows(runs, start)
    assert [r.source for r in rows] == ["event", "event"]
    assert [r.t for r in rows] == [0.001, 0.002]
    assert rows[0].text == "run.started session_id='s1' provider='p'"
    assert rows[1].text == "run.crashed kind='http' message='boom' retryable=True"
    assert rows[1].detail["run_id"] == "r1"
    assert event_line(crashed) == rows[1].text


def test_consecutive_deltas_of_one_message_are_one_row() -> None:
    start = Start(mono_ns=0, wall_ns=0)
    deltas = [MessageDelta(run_id="r", ts=0.0, item_id="m1", text=t) for t in ("Hel", "lo", "!")]
    other = MessageDelta(run_id="r", ts=0.0, item_id="m2", text="next")
    done = MessageCompleted(run_id="r", ts=0.0, item_id="m1", text="Hello!")
    rows = event_rows(_kept(*deltas, other, done, start=start), start)
    assert [r.text for r in rows] == [
        "message.delta x3 item_id='m1' text='Hello!'",
        "message.delta item_id='m2' text='next'",
        "message.completed item_id='m1' text='Hello!'",
    ]
    assert rows[0].t == 0.001  # the time of the first delta
    assert rows[0].detail["events"] == 3


def test_the_events_of_several_runs_are_told_apart() -> None:
    start = Start(mono_ns=0, wall_ns=0)
    runs = _kept(RunCompleted(run_id="a", ts=0.0), RunCompleted(run_id="b", ts=0.0), start=start)
    assert [r.text for r in event_rows(runs, start)] == [
        "[a] run.completed stop_reason='end_turn'",
        "[b] run.completed stop_reason='end_turn'",
    ]


def test_events_past_the_bound_are_counted_not_kept() -> None:
    runs = RunEvents()
    event = RunCompleted(run_id="r", ts=0.0)
    for _ in range(MAX_EVENTS + 2):
        runs(event)
    assert len(runs.events) == MAX_EVENTS
    assert event_rows(runs, Start())[-1].text == f"2 later event(s) not kept (over {MAX_EVENTS})"


def test_drive_tells_the_watcher_of_every_event_and_only_while_it_watches() -> None:
    provider = ScriptedProvider(Script.of([Text("one two")], [HttpError(500)]))
    runs = RunEvents()
    assert event_watcher() is None
    with runs.watching(watch_events):
        assert event_watcher() is runs
        events = anyio.run(drive, provider.start("hi"))
    assert event_watcher() is None
    assert [e for _, e in runs.events] == events
    anyio.run(drive, provider.start("again"))  # no watcher: nothing kept, nothing fails
    assert len(runs.events) == len(events)


def test_a_run_iterated_without_drive_tells_the_watcher_too() -> None:
    """The runs tell it, not ``drive``: an app reading a run with ``async for`` is seen as
    well, each event once (the claude adapter's run: tests/plugin/test_explain.py)."""
    provider = ScriptedProvider(Script.of([Text("one two")]))
    runs = RunEvents()

    async def read() -> list[Any]:
        return [event async for event in provider.start("hi")]

    with runs.watching(watch_events):
        seen = anyio.run(read)
    assert seen
    assert [e for _, e in runs.events] == seen


def test_watching_puts_the_previous_watcher_back() -> None:
    outer, inner = RunEvents(), RunEvents()
    with outer.watching(watch_events):
        with inner.watching(watch_events):
            assert event_watcher() is inner
        assert event_watcher() is outer
    assert event_watcher() is None
    assert watch_events(None) is None


def test_the_timeline_has_the_runs_events_among_the_doubles_rows() -> None:
    provider = ScriptedProvider(Script.of([HttpError(503)]))
    timeline = Timeline()
    with StandIn(Script.of([Text("hi")])) as double, timeline.runs.watching(watch_events):
        timeline.watch("model", double)
        with httpx2.Client(transport=double.transport()) as client:
            body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
            assert client.post("http://double/v1/chat/completions", json=body).status_code == 200
        anyio.run(drive, provider.start("hi"))
        rows = timeline.rows()
    assert rows[0].source == "model"
    events = [r.text for r in rows if r.source == "event"]
    assert events[0].startswith("run.started ")
    assert events[-1].startswith("run.crashed kind='overloaded' ")
    assert "retryable=True" in events[-1]
    times = [r.t for r in rows]
    assert times == sorted(times)  # type: ignore[type-var]


def test_a_streamed_reply_over_loopback_shows_how_long_it_took_to_its_end(
    stand_in: Any,
) -> None:
    stand_in.play(Script.of([Text("Hello there, this streams in parts.")]))
    timeline = Timeline()
    timeline.watch("model", stand_in)
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "x"}],
    }
    with httpx2.Client() as client:
        url = stand_in.url("openai") + "/chat/completions"
        with client.stream("POST", url, json=body) as response:
            assert response.status_code == 200
            assert b"".join(response.iter_bytes())
    (row,) = timeline.rows()
    took = row.detail["took"]
    assert took is not None
    assert 0 <= took < 30
    assert f"stream ended after {took:.3f}s" in row.text
    (index,) = stand_in.double.journal.stream_ends()
    assert index == 0


def test_a_reply_not_streamed_has_no_end_time() -> None:
    with StandIn(Script.of([Text("hi")])) as double:
        timeline = Timeline()
        timeline.watch("model", double)
        with httpx2.Client(transport=double.transport()) as client:
            body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
            client.post("http://double/v1/chat/completions", json=body)
        (row,) = timeline.rows()
    assert row.detail["took"] is None
    assert "ended after" not in row.text


def test_the_journal_keeps_the_end_times_of_its_kept_requests_only() -> None:
    journal = Journal(keep=2)
    for index in range(3):
        journal.ended(index)
    assert sorted(journal.stream_ends()) == [1, 2]
    journal.reset()
    assert journal.stream_ends() == {}


@pytest.fixture(autouse=True)
def _no_watcher_left() -> Any:
    # the plugin watches this very test's call (it uses a double): start each test bare
    previous = watch_events(None)
    yield
    watch_events(previous)
