"""Cursors that carry an epoch, on every store: a client that was away across a rollback
and a re-append is told so on resume (``StaleCursor``) instead of getting wrong history."""

from __future__ import annotations

import anyio
import pytest
from _log_helpers import deltas, seqs, texts

from stuntset.errors import StaleCursor, UsageError
from stuntset.events import Event
from stuntset.log import EventLog, Subscription


async def take(subscription: Subscription, count: int) -> list[Event]:
    """The next ``count`` events (fails the test after 5 s rather than hanging)."""
    got: list[Event] = []
    with anyio.fail_after(5):
        while len(got) < count:
            got.append(await subscription.__anext__())
    return got


def test_the_epoch_counts_the_rollbacks_that_dropped_events(log: EventLog) -> None:
    assert log.epoch("s1") == 0  # a session with no events yet
    log.append("s1", deltas(5))
    log.append("s2", deltas(2))
    assert log.rollback("s1", 5) == 0  # dropped nothing: the same history, the same epoch
    assert log.epoch("s1") == 0

    log.rollback("s1", 3)
    log.rollback("s1", 1)

    assert (log.epoch("s1"), log.epoch("s2")) == (2, 0)


@pytest.mark.anyio
async def test_resuming_across_a_rollback_and_a_reappend_is_a_stale_cursor(
    log: EventLog,
) -> None:
    log.append("s1", deltas(5))
    first = log.subscribe("s1")
    seen = await take(first, 5)
    held = (first.epoch, first.cursor)  # what the client keeps while it is away
    await first.aclose()
    log.rollback("s1", 2)
    log.append("s1", deltas(3, tag="new"))  # seqs 3..5 again, other events

    assert held == (0, 5)
    with pytest.raises(StaleCursor, match=r"cursor 5 is stale .*rolled back to seq 2") as info:
        log.subscribe("s1", after=5, epoch=0)
    assert (info.value.session_id, info.value.cursor, info.value.resume_at) == ("s1", 5, 2)
    with pytest.raises(StaleCursor) as read_info:
        log.read("s1", after=5, epoch=0)
    assert read_info.value.resume_at == 2

    again = log.subscribe("s1", after=info.value.resume_at, epoch=0)
    rebuilt = seen[:2] + await take(again, 3)
    assert texts(rebuilt) == ["0 ", "1 ", "new0 ", "new1 ", "new2 "]
    assert rebuilt == log.read("s1")
    assert (again.epoch, again.cursor) == (1, 5)
    await again.aclose()


@pytest.mark.anyio
async def test_without_an_epoch_the_old_calls_behave_as_before(log: EventLog) -> None:
    log.append("s1", deltas(5))
    log.rollback("s1", 2)
    log.append("s1", deltas(3, tag="new"))

    assert log.read("s1", after=5) == []  # a plain seq cannot tell
    subscription = log.subscribe("s1", after=5)
    await subscription.aclose()
    with pytest.raises(StaleCursor, match="beyond the session's head 5"):
        log.subscribe("s1", after=6)


@pytest.mark.anyio
async def test_a_rollback_at_or_above_the_cursor_leaves_it_valid(log: EventLog) -> None:
    log.append("s1", deltas(5))
    log.rollback("s1", 4)
    log.rollback("s1", 3)  # exactly the cursor: the events up to it are untouched
    log.append("s1", deltas(2, tag="new"))

    subscription = log.subscribe("s1", after=3, epoch=0)
    assert texts(await take(subscription, 2)) == ["new0 ", "new1 "]
    assert (subscription.epoch, subscription.cursor) == (2, 5)
    assert seqs(log.read("s1", after=3, epoch=0)) == [4, 5]
    await subscription.aclose()


def test_after_several_rollbacks_resume_at_the_lowest(log: EventLog) -> None:
    log.append("s1", deltas(6))
    log.rollback("s1", 4)  # epoch 1
    log.append("s1", deltas(2))
    log.rollback("s1", 1)  # epoch 2
    log.append("s1", deltas(5))

    with pytest.raises(StaleCursor) as from_0:
        log.subscribe("s1", after=6, epoch=0)
    with pytest.raises(StaleCursor) as from_1:
        log.read("s1", after=3, epoch=1)
    assert (from_0.value.resume_at, from_1.value.resume_at) == (1, 1)
    assert seqs(log.read("s1", after=1, epoch=0)) == [2, 3, 4, 5, 6]


@pytest.mark.anyio
async def test_a_live_subscriber_carries_the_epoch_forward_past_a_rollback_above_it(
    log: EventLog,
) -> None:
    log.append("s1", deltas(5))
    subscription = log.subscribe("s1")
    await take(subscription, 2)
    log.rollback("s1", 4)
    log.append("s1", deltas(1, tag="new"))

    assert texts(await take(subscription, 3)) == ["2 ", "3 ", "new0 "]
    assert (subscription.epoch, subscription.cursor) == (1, 5)
    await subscription.aclose()
    log.rollback("s1", 3)  # passes the cursor while the subscriber is away
    with pytest.raises(StaleCursor, match="rolled back to seq 3"):
        log.subscribe("s1", after=5, epoch=1)


def test_an_epoch_the_log_never_reached_is_stale_from_the_start(log: EventLog) -> None:
    log.append("s1", deltas(3))
    with pytest.raises(StaleCursor, match=r"epoch 4 .*session's epoch is 0") as info:
        log.subscribe("s1", after=2, epoch=4)
    assert info.value.resume_at == 0
    with pytest.raises(StaleCursor, match="epoch 1"):
        log.read("s1", after=0, epoch=1)


def test_with_an_epoch_read_also_refuses_a_cursor_beyond_the_head(log: EventLog) -> None:
    log.append("s1", deltas(2))
    with pytest.raises(StaleCursor, match="beyond the session's head 2") as info:
        log.read("s1", after=3, epoch=0)
    assert info.value.resume_at == 2
    assert log.read("s1", after=3) == []  # without an epoch, as before


@pytest.mark.parametrize("epoch", [-1, True, "0", 1.0])
def test_a_bad_epoch_is_a_usage_error_naming_it(log: EventLog, epoch: object) -> None:
    with pytest.raises(UsageError, match=r"epoch must be an int >= 0") as sub_info:
        log.subscribe("s1", after=0, epoch=epoch)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"epoch must be an int >= 0"):
        log.read("s1", epoch=epoch)  # type: ignore[arg-type]
    assert not isinstance(sub_info.value, StaleCursor)
