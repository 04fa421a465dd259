"""Subscriptions on every store: replay then live, cursor resume, rollback, close."""

from __future__ import annotations

import anyio
import pytest
from _log_helpers import deltas, seqs, texts

from stuntset.errors import StaleCursor
from stuntset.events import Event
from stuntset.log import EventLog, Subscription


async def take(subscription: Subscription, count: int) -> list[Event]:
    """The next ``count`` events (fails the test after 5 s rather than hanging)."""
    got: list[Event] = []
    with anyio.fail_after(5):
        while len(got) < count:
            got.append(await subscription.__anext__())
    return got


@pytest.mark.anyio
async def test_replay_then_live_without_gap_or_duplicate(log: EventLog) -> None:
    log.append("s1", deltas(3))
    subscription = log.subscribe("s1")

    replayed = await take(subscription, 3)
    log.append("s1", deltas(2, tag="live"))
    live = await take(subscription, 2)

    assert seqs(replayed + live) == [1, 2, 3, 4, 5]
    assert texts(live) == ["live0 ", "live1 "]
    await subscription.aclose()


@pytest.mark.anyio
async def test_a_waiting_subscriber_is_woken_by_an_append_from_another_thread(
    log: EventLog,
) -> None:
    subscription = log.subscribe("s1")
    got: list[Event] = []

    async with anyio.create_task_group() as tg:

        async def consume() -> None:
            got.extend(await take(subscription, 4))

        tg.start_soon(consume)
        await anyio.wait_all_tasks_blocked()  # the subscriber waits for live events
        await anyio.to_thread.run_sync(log.append, "s1", deltas(4))

    assert seqs(got) == [1, 2, 3, 4]


@pytest.mark.anyio
async def test_resume_from_the_last_seen_seq_while_appends_continue(log: EventLog) -> None:
    log.append("s1", deltas(4))
    first = log.subscribe("s1", after=1)
    seen = await take(first, 2)
    await first.aclose()
    log.append("s1", deltas(3, tag="while-away"))  # arrives while disconnected

    second = log.subscribe("s1", after=seen[-1].seq or 0)
    rest = await take(second, 4)
    log.append("s1", deltas(1, tag="after"))
    rest += await take(second, 1)

    assert seqs(seen + rest) == list(range(2, 9))
    assert seqs(log.read("s1", after=1)) == seqs(seen + rest)
    await second.aclose()


@pytest.mark.anyio
async def test_subscribing_beyond_the_head_is_a_stale_cursor(log: EventLog) -> None:
    log.append("s1", deltas(2))
    with pytest.raises(
        StaleCursor, match=r"cursor 5 is stale .*beyond the session's head 2"
    ) as info:
        log.subscribe("s1", after=5)
    assert (info.value.cursor, info.value.resume_at) == (5, 2)


@pytest.mark.anyio
async def test_a_rollback_below_a_subscribers_cursor_is_reported(log: EventLog) -> None:
    log.append("s1", deltas(5))
    subscription = log.subscribe("s1")
    await take(subscription, 4)
    log.rollback("s1", 2)
    log.append("s1", deltas(4, tag="new"))  # the head is beyond the cursor again

    with pytest.raises(StaleCursor, match="rolled back to seq 2") as info:
        await take(subscription, 1)
    assert info.value.resume_at == 2

    again = log.subscribe("s1", after=info.value.resume_at)
    assert texts(await take(again, 4)) == ["new0 ", "new1 ", "new2 ", "new3 "]
    await again.aclose()


@pytest.mark.anyio
async def test_a_rollback_above_a_subscribers_cursor_does_not_disturb_it(
    log: EventLog,
) -> None:
    log.append("s1", deltas(5))
    subscription = log.subscribe("s1")
    await take(subscription, 2)
    log.rollback("s1", 3)
    log.append("s1", deltas(1, tag="new"))

    assert texts(await take(subscription, 2)) == ["2 ", "new0 "]
    await subscription.aclose()


@pytest.mark.anyio
async def test_aclose_ends_a_waiting_subscriber(log: EventLog) -> None:
    subscription = log.subscribe("s1")
    ended = anyio.Event()

    async def consume() -> None:
        async for _ in subscription:
            pass
        ended.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            await subscription.aclose()
            await ended.wait()


@pytest.mark.anyio
async def test_closing_the_log_ends_its_subscriptions(log: EventLog) -> None:
    log.append("s1", deltas(1))
    subscription = log.subscribe("s1")
    got: list[Event] = []

    async def consume() -> None:
        async for event in subscription:
            got.append(event)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            log.close()
    assert seqs(got) == [1]


@pytest.mark.anyio
async def test_subscribers_of_other_sessions_are_not_disturbed(log: EventLog) -> None:
    mine = log.subscribe("s1")
    log.append("s2", deltas(3))
    log.append("s1", deltas(1, tag="mine"))

    assert texts(await take(mine, 1)) == ["mine0 "]
    await mine.aclose()
