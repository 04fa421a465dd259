"""The log harness's own failure paths, each met by a log with that one bug: the messages
name the invariant and what was seen. (``test_check_event_log`` proves each invariant is
caught; these are the other ways a log can break the same rules.)"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest

from stuntset.checks._log_harness import LogHarness, deltas
from stuntset.errors import InvalidEvent, InvariantViolation
from stuntset.events import Event, MessageDelta
from stuntset.log import MemoryEventLog

EVENTS = deltas("r1", "m1", ["a", "b", "c"])


def harness(log: type[MemoryEventLog]) -> LogHarness:
    return LogHarness(log, timeout=0.2)


class WrongIndexLog(MemoryEventLog):
    """Refuses a bad batch but names the wrong event."""

    def append(self, session_id: str, events: Sequence[Event]) -> list[Event]:
        try:
            return super().append(session_id, events)
        except InvalidEvent as error:
            raise InvalidEvent(str(error), index=(error.index or 0) + 1, field="ts") from None


class TraceLeavingLog(MemoryEventLog):
    """Refuses a bad batch after storing the events in front of it."""

    def append(self, session_id: str, events: Sequence[Event]) -> list[Event]:
        try:
            return super().append(session_id, events)
        except InvalidEvent as error:
            if error.index:
                super().append(session_id, events[: error.index])
            raise


class ThrowingWriterLog(MemoryEventLog):
    """Concurrent appends blow up."""

    def append(self, session_id: str, events: Sequence[Event]) -> list[Event]:
        if len(events) > 1 and isinstance(events[0], MessageDelta) and events[0].run_id == "writer":
            raise RuntimeError("disk on fire")
        return super().append(session_id, events)


class LyingHeadLog(MemoryEventLog):
    def head(self, session_id: str) -> int:
        return super().head(session_id) + 1


class LyingEpochLog(MemoryEventLog):
    def epoch(self, session_id: str) -> int:
        return super().epoch(session_id) + 1


class RewritingReadLog(MemoryEventLog):
    """Reads give back the text upper-cased (the appends were right)."""

    def read(self, session_id: str, after: int = 0, **kwargs: object) -> list[Event]:
        return [
            msgspec.structs.replace(e, text=e.text.upper()) if isinstance(e, MessageDelta) else e
            for e in super().read(session_id, after, **kwargs)  # type: ignore[arg-type]
        ]


class DroppingReadLog(MemoryEventLog):
    """Reads lose the last event."""

    def read(self, session_id: str, after: int = 0, **kwargs: object) -> list[Event]:
        return super().read(session_id, after, **kwargs)[:-1]  # type: ignore[arg-type]


def fails(run: LogHarness, invariant: str, message: str, action: object) -> None:
    with pytest.raises(InvariantViolation) as raised:
        action()  # type: ignore[operator]
    assert raised.value.invariant == invariant
    assert message in str(raised.value)
    run.close()


def test_a_refusal_naming_the_wrong_event() -> None:
    run = harness(WrongIndexLog)
    fails(
        run,
        "rejected-batch-no-trace",
        "InvalidEvent names index 2, the bad event is at 1",
        lambda: run.append_rejected("s", EVENTS, 1),
    )


def test_a_refusal_that_leaves_a_trace() -> None:
    run = harness(TraceLeavingLog)
    fails(
        run,
        "rejected-batch-no-trace",
        "after a refused batch of 4 at head 0, session 's' reads back seqs [1]",
        lambda: run.append_rejected("s", EVENTS, 1),
    )


def test_an_error_in_a_concurrent_writer_reaches_the_caller() -> None:
    run = harness(ThrowingWriterLog)
    with pytest.raises(RuntimeError, match="disk on fire"):
        run.append_concurrently("s", [EVENTS, EVENTS])
    run.close()


@pytest.mark.parametrize(
    ("log", "invariant", "message"),
    [
        (LyingHeadLog, "seq-gapless", "head('s') is 4, expected 3"),
        (LyingEpochLog, "stale-resume-detected", "epoch('s') is 1, expected 0"),
        (RewritingReadLog, "replay-matches-appends", "session 's' at seq 1: read"),
        (DroppingReadLog, "seq-gapless", "session 's' reads back seqs [1, 2], expected 1..3"),
    ],
)
def test_the_whole_log_check(log: type[MemoryEventLog], invariant: str, message: str) -> None:
    run = harness(log)
    run.append("s", EVENTS)
    fails(run, invariant, message, run.check)


def test_a_replay_that_differs_from_what_a_subscriber_received() -> None:
    run = harness(RewritingReadLog)
    run.append("s", EVENTS)
    sub = run.subscribe("s", 0)
    fails(run, "replay-equals-live", "replayed vs live projection", lambda: run.pull(sub))


def test_long_seq_lists_are_cut_in_messages() -> None:
    run = harness(DroppingReadLog)
    run.append("s", deltas("r1", "m1", [str(n) for n in range(30)]))
    fails(
        run,
        "seq-gapless",
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]…",
        run.check,
    )
