from __future__ import annotations

import threading

import anyio
import pytest

from stuntset import events as ev
from stuntset.errors import WaitTimeout
from stuntset.providers import ScriptedProvider
from stuntset.scenarios import build
from stuntset.waiting import collect_events, wait_for, wait_for_async


@pytest.mark.anyio
async def test_collect_events_stops_at_the_terminal_event() -> None:
    events = await collect_events(ScriptedProvider(build("happy_path")).start("hi"))
    assert isinstance(events[0], ev.RunStarted)
    assert isinstance(events[-1], ev.RunCompleted)


@pytest.mark.anyio
async def test_collect_events_until_a_condition() -> None:
    run = ScriptedProvider(build("happy_path")).start("hi")
    events = await collect_events(run, until=lambda e: isinstance(e, ev.MessageDelta))
    assert [e.type for e in events] == ["run.started", "message.delta"]


@pytest.mark.anyio
async def test_collect_events_times_out_with_what_it_saw() -> None:
    # a stream that hands over its three events without a checkpoint, then blocks for good:
    # whatever the machine's load, all three are seen before the deadline can cut in (a
    # StuckProvider's queue has checkpoints, so a stalled process could see fewer)
    async def three_then_stuck() -> ev.AsyncIterator[ev.Event]:  # type: ignore[name-defined]
        yield ev.RunStarted(run_id="r", ts=0, session_id="s", provider="p")
        yield ev.MessageDelta(run_id="r", ts=0, item_id="m", text="Thinking")
        yield ev.MessageCompleted(run_id="r", ts=0, item_id="m", text="Thinking")
        await anyio.Event().wait()

    with pytest.raises(WaitTimeout) as info:
        await collect_events(three_then_stuck(), timeout=0.01)
    message = str(info.value)
    assert "saw 3 events" in message
    assert '"text":"Thinking"' in message
    assert "interrupt()" in message


@pytest.mark.anyio
async def test_collect_events_fails_if_the_stream_ends_first() -> None:
    async def two() -> ev.AsyncIterator[ev.Event]:  # type: ignore[name-defined]
        yield ev.RunStarted(run_id="r", ts=0, session_id="s", provider="p")

    with pytest.raises(WaitTimeout, match="ended before the condition held; saw 1 events"):
        await collect_events(two())


def test_wait_for_returns_the_truthy_value() -> None:
    box: list[int] = []
    thread = threading.Thread(target=box.append, args=(7,))
    thread.start()
    assert wait_for(lambda: box) == [7]
    thread.join()


def test_wait_for_times_out_with_the_last_value_and_a_description() -> None:
    with pytest.raises(WaitTimeout, match=r"was still 0 after 0.01 s\nqueue is empty"):
        wait_for(lambda: 0, timeout=0.01, message=lambda: "queue is empty")


@pytest.mark.anyio
async def test_wait_for_async_polls_without_blocking() -> None:
    calls: list[int] = []

    def third_time() -> bool:
        calls.append(1)
        return len(calls) >= 3

    assert await wait_for_async(third_time) is True
    with pytest.raises(WaitTimeout, match="still None"):
        await wait_for_async(lambda: None, timeout=0.01, message="nothing")


@pytest.mark.anyio
async def test_collecting_again_continues_the_same_run() -> None:
    run = ScriptedProvider(build("needs_approval")).start("clean up")
    first = await collect_events(run, until=lambda e: isinstance(e, ev.ApprovalRequested))
    assert isinstance(first[-1], ev.ApprovalRequested)
    await run.respond(first[-1].request_id, "allow")
    rest = await collect_events(run)
    assert isinstance(rest[0], ev.ApprovalResolved)
    assert run.events == first + rest
