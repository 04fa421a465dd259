"""The EventLog contract, on every store: append, read, head, rollback, sessions, close."""

from __future__ import annotations

import threading

import pytest
from _log_helpers import MakeLog, a_turn, deltas, seqs, texts

from stuntset.errors import UsageError
from stuntset.events import MessageDelta, ToolStarted, with_seq
from stuntset.log import EventLog


def test_append_assigns_gapless_seq_per_session(log: EventLog) -> None:
    first = log.append("s1", deltas(3))
    second = log.append("s1", deltas(2, tag="b"))
    other = log.append("s2", deltas(2))

    assert seqs(first) == [1, 2, 3]
    assert seqs(second) == [4, 5]
    assert seqs(other) == [1, 2]
    assert log.head("s1") == 5
    assert log.head("s2") == 2
    assert log.head("nobody") == 0
    assert log.read("s1") == first + second


def test_the_store_assigns_seq_whatever_the_caller_set(log: EventLog) -> None:
    stored = log.append("s1", [with_seq(event, 42) for event in deltas(2)])

    assert seqs(stored) == [1, 2]
    assert seqs(log.read("s1")) == [1, 2]


def test_read_after_a_cursor_with_a_limit(log: EventLog) -> None:
    log.append("s1", deltas(10))

    assert seqs(log.read("s1", after=7)) == [8, 9, 10]
    assert seqs(log.read("s1", after=2, limit=3)) == [3, 4, 5]
    assert log.read("s1", after=10) == []
    assert log.read("s1", after=99) == []


def test_events_round_trip_exactly(log: EventLog) -> None:
    events = [
        *a_turn(),
        ToolStarted(run_id="run-1", ts=2.5, tool_call_id="t1", name="x", input={"a": [1, None]}),
    ]
    stored = log.append("s1", events)

    assert log.read("s1") == stored
    assert [with_seq(e, 0) for e in stored] == [with_seq(e, 0) for e in events]


def test_an_empty_batch_stores_nothing(log: EventLog) -> None:
    assert log.append("s1", []) == []
    assert log.head("s1") == 0


@pytest.mark.parametrize(
    ("session_id", "events", "named"),
    [
        ("", [], "session_id"),
        (None, [], "session_id"),
        ("s1", "text", "events"),
        ("s1", [{"type": "message.delta"}], "events[0]"),
    ],
)
def test_bad_append_arguments_name_the_argument(
    log: EventLog, session_id: object, events: object, named: str
) -> None:
    with pytest.raises(UsageError, match=r"append: " + named.replace("[", r"\[")):
        log.append(session_id, events)  # type: ignore[arg-type]


def test_bad_cursor_is_a_usage_error(log: EventLog) -> None:
    with pytest.raises(UsageError, match="after must be an int >= 0"):
        log.read("s1", after=-1)
    with pytest.raises(UsageError, match="to_seq must be an int >= 0"):
        log.rollback("s1", to_seq=-2)


def test_rollback_moves_the_head_back_and_the_next_append_continues_gapless(
    log: EventLog,
) -> None:
    log.append("s1", deltas(5))
    log.append("s2", deltas(3))

    assert log.rollback("s1", 2) == 3
    assert log.head("s1") == 2
    assert texts(log.read("s1")) == ["0 ", "1 "]
    assert seqs(log.append("s1", deltas(2, tag="new"))) == [3, 4]
    assert texts(log.read("s1")) == ["0 ", "1 ", "new0 ", "new1 "]
    assert log.head("s2") == 3  # other sessions untouched
    assert log.rollback("s1", 4) == 0  # to the head: nothing to drop


def test_rollback_cannot_go_forward(log: EventLog) -> None:
    log.append("s1", deltas(2))
    with pytest.raises(UsageError, match="has head 2; cannot roll back forward to 5"):
        log.rollback("s1", 5)


def test_sessions_lists_every_session(log: EventLog) -> None:
    log.append("b", deltas(1))
    log.append("a", deltas(1))
    assert log.sessions() == ["a", "b"]


def test_a_rollback_that_drops_nothing_creates_no_session(log: EventLog) -> None:
    assert log.rollback("never-written", 0) == 0
    assert log.sessions() == []


def test_a_closed_log_refuses_work_and_closing_twice_is_harmless(log: EventLog) -> None:
    log.append("s1", deltas(1))
    log.close()
    log.close()
    with pytest.raises(UsageError, match="closed"):
        log.append("s1", deltas(1))
    with pytest.raises(UsageError, match="closed"):
        log.read("s1")


def test_threads_appending_to_one_log_get_gapless_contiguous_batches(
    make_log: MakeLog,
) -> None:
    log = make_log()
    threads, batches, size = 4, 25, 4
    barrier = threading.Barrier(threads)

    def writer(n: int) -> None:
        barrier.wait()
        for b in range(batches):
            log.append("s1", deltas(size, item_id=f"w{n}-b{b}"))

    workers = [threading.Thread(target=writer, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    stored = log.read("s1")
    assert seqs(stored) == list(range(1, threads * batches * size + 1))
    items = [e.item_id for e in stored if isinstance(e, MessageDelta)]
    runs = [items[i : i + size] for i in range(0, len(items), size)]
    assert all(len(set(run)) == 1 for run in runs), "a batch was interleaved with another"
    assert len({run[0] for run in runs}) == threads * batches
