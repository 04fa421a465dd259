"""Deliberately broken event logs: each breaks one invariant of ``check_event_log``.

Each is a ``MemoryEventLog`` with one realistic bug planted; ``BROKEN`` maps the name of
the invariant each one breaks to its class.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import msgspec

from stuntset.errors import InvalidEvent
from stuntset.events import Event, MessageDelta, RunKilled, with_seq
from stuntset.log import LogSubscription, MemoryEventLog
from stuntset.log.subscription import Notifier
from stuntset.log.validate import checked_batch


def _stripped(events: Sequence[Event]) -> list[Event]:
    return [
        msgspec.structs.replace(e, text=e.text.strip()) if isinstance(e, MessageDelta) else e
        for e in events
    ]


class GlobalSeqLog(MemoryEventLog):
    """Numbers events with one counter for all sessions (gaps in each session)."""

    def __init__(self) -> None:
        super().__init__()
        self._global = 0

    def append(self, session_id: str, events: Sequence[Event]) -> list[Event]:
        stored = super().append(session_id, events)
        renumbered = [with_seq(e, self._global + i) for i, e in enumerate(stored, 1)]
        self._global += len(stored)
        with self._lock:
            kept = self._sessions[session_id].events
            kept[len(kept) - len(stored) :] = renumbered
        return renumbered


class LossyStoreLog(MemoryEventLog):
    """Stores message deltas with their whitespace stripped (a lossy codec)."""

    def append(self, session_id: str, events: Sequence[Event]) -> list[Event]:
        return super().append(session_id, _stripped(events))


class InterleavingLog(MemoryEventLog):
    """Stores a batch event by event, letting a concurrent writer in between (not atomic).

    Choreographed, so the bug shows every time: the harness's first writer thread stores one
    event, then the second writer stores one, then the first goes on.
    """

    FIRST, SECOND = "stuntset-writer-0", "stuntset-writer-1"

    def __init__(self) -> None:
        super().__init__()
        self._turn = threading.Condition()
        self._split_open = False  # the first writer stored its first event
        self._split_filled = False  # the second writer stored one after it

    def append(self, session_id: str, events: Sequence[Event]) -> list[Event]:
        checked_batch(events, where="InterleavingLog.append")  # the whole batch, first
        name = threading.current_thread().name
        stored: list[Event] = []
        for index, event in enumerate(events):
            if name == self.SECOND and index == 0:
                with self._turn:
                    self._turn.wait_for(lambda: self._split_open, timeout=5)
            stored += super().append(session_id, [event])
            with self._turn:
                if name == self.FIRST and index == 0:
                    self._split_open = True
                    self._turn.notify_all()
                    self._turn.wait_for(lambda: self._split_filled, timeout=5)
                    self._split_open = self._split_filled = False
                elif name == self.SECOND and index == 0:
                    self._split_filled = True
                    self._turn.notify_all()
        return stored


class DuplicateAtSeamLog(MemoryEventLog):
    """Re-reads with ``seq >= cursor`` once live: the last event comes again at the seam."""

    def poll(self, session_id: str, after: int, epoch: int, limit: int) -> tuple[list[Event], int]:
        events, epoch = super().poll(session_id, after, epoch, limit)
        if after > 0 and events:
            events = [*self.read(session_id, after - 1, 1), *events]
        return events, epoch


class ResumeOffByOneLog(MemoryEventLog):
    """Subscribing from a cursor starts one event early (``seq >= after``)."""

    def subscribe(
        self, session_id: str, after: int = 0, *, epoch: int | None = None
    ) -> LogSubscription:
        return super().subscribe(session_id, max(after - 1, 0), epoch=epoch)


class NoWakeupLog(MemoryEventLog):
    """Subscriptions are never woken by commits (they only read when first asked)."""

    def subscribe(
        self, session_id: str, after: int = 0, *, epoch: int | None = None
    ) -> LogSubscription:
        checked = super().subscribe(session_id, after, epoch=epoch)  # the argument checks
        return LogSubscription(self, Notifier(), session_id, after=after, epoch=checked.epoch)


class LossyLiveLog(MemoryEventLog):
    """The live path strips message deltas; replays are right."""

    def poll(self, session_id: str, after: int, epoch: int, limit: int) -> tuple[list[Event], int]:
        events, epoch = super().poll(session_id, after, epoch, limit)
        return _stripped(events), epoch


class IgnoresRollbackLog(MemoryEventLog):
    """Never tells a subscriber that a rollback removed events it has seen."""

    def poll(self, session_id: str, after: int, epoch: int, limit: int) -> tuple[list[Event], int]:
        with self._lock:
            session = self._sessions.get(session_id)
            current = session.epoch if session is not None else epoch
        return super().poll(session_id, after, current, limit)


class PlainSeqCursorLog(MemoryEventLog):
    """Ignores the epoch a resuming client sends: a plain ``seq`` cursor, as before epochs."""

    def read(
        self,
        session_id: str,
        after: int = 0,
        limit: int | None = None,
        *,
        epoch: int | None = None,
    ) -> list[Event]:
        return super().read(session_id, after, limit)

    def subscribe(
        self, session_id: str, after: int = 0, *, epoch: int | None = None
    ) -> LogSubscription:
        return super().subscribe(session_id, after)


class PartialBatchLog(MemoryEventLog):
    """Checks and stores a batch event by event: a bad event mid-batch is refused, but the
    events before it are already stored."""

    def append(self, session_id: str, events: Sequence[Event]) -> list[Event]:
        stored: list[Event] = []
        for event in events:
            stored += super().append(session_id, [event])
        return stored


class NarrowKindsLog(MemoryEventLog):
    """Its own validation knows only the terminal events its author had seen: it refuses
    ``run.killed``, so a host that stops cannot record how its running runs ended."""

    def append(self, session_id: str, events: Sequence[Event]) -> list[Event]:
        for index, event in enumerate(events):
            if isinstance(event, RunKilled):
                raise InvalidEvent(
                    f"events[{index}]: unknown event type 'run.killed'", index=index, field="type"
                )
        return super().append(session_id, events)


class PagedReadLog(MemoryEventLog):
    """``read()`` without a limit returns one page of 100 events (a default page size): a
    host recovering a long session misses the terminal event of a run and ends it again."""

    def read(
        self,
        session_id: str,
        after: int = 0,
        limit: int | None = None,
        *,
        epoch: int | None = None,
    ) -> list[Event]:
        return super().read(session_id, after, 100 if limit is None else limit, epoch=epoch)


BROKEN: dict[str, type[MemoryEventLog]] = {
    "seq-gapless": GlobalSeqLog,
    "replay-matches-appends": LossyStoreLog,
    "atomic-batches": InterleavingLog,
    "subscription-gapless": DuplicateAtSeamLog,
    "seamless-resume": ResumeOffByOneLog,
    "live-wakeup": NoWakeupLog,
    "replay-equals-live": LossyLiveLog,
    "rollback-detected": IgnoresRollbackLog,
    "stale-resume-detected": PlainSeqCursorLog,
}

#: Broken logs for the rules only the fixed part checks (the refused batch and the session
#: host played over the log); the state machine's rules, and so its search, are unchanged.
SCENARIO_ONLY: dict[str, type[MemoryEventLog]] = {
    "rejected-batch-no-trace": PartialBatchLog,
    "shutdown-terminates-runs": NarrowKindsLog,
    "one-terminal-per-run": PagedReadLog,
}
