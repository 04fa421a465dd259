"""``MemoryEventLog``: the ``EventLog`` in a dict, for tests that need no file.

Same semantics as ``SqliteEventLog`` (gapless per-session ``seq`` assigned under a lock,
atomic batches, replay-then-live subscriptions, rollback), no durability at all: everything
is gone when the object is.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from stuntset.errors import UsageError
from stuntset.events import Event, with_seq
from stuntset.log.base import (
    check_append_args,
    check_cursor,
    check_epoch,
    stale_cursor,
    stale_resume,
)
from stuntset.log.subscription import LogSubscription, Notifier
from stuntset.log.validate import checked_batch

__all__ = ["MemoryEventLog"]


class _Session:
    __slots__ = ("epoch", "events", "rollbacks")

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.epoch = 0
        self.rollbacks: list[tuple[int, int]] = []  # (epoch it started, seq rolled back to)


class MemoryEventLog:
    """An in-memory ``EventLog``: thread-safe, no durability."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._notifier = Notifier()
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self, where: str) -> None:
        if self._closed:
            raise UsageError(f"MemoryEventLog.{where}: the log is closed")

    def append(self, session_id: str, events: Sequence[Event]) -> list[Event]:
        check_append_args(session_id, events, where="MemoryEventLog.append")
        # what SqliteEventLog would hand back: checked, and as JSON reads it (see validate)
        readable, _ = checked_batch(events, where="MemoryEventLog.append")
        with self._lock:
            self._check_open("append")
            session = self._sessions.setdefault(session_id, _Session())
            head = len(session.events)
            stored = [with_seq(event, head + i) for i, event in enumerate(readable, 1)]
            session.events.extend(stored)
        if stored:
            self._notifier.notify(session_id)
        return stored

    def read(
        self,
        session_id: str,
        after: int = 0,
        limit: int | None = None,
        *,
        epoch: int | None = None,
    ) -> list[Event]:
        after = check_cursor(after, name="after", where="MemoryEventLog.read")
        epoch = check_epoch(epoch, where="MemoryEventLog.read")
        with self._lock:
            self._check_open("read")
            session = self._sessions.get(session_id)
            if epoch is not None:
                self._check_resume(session_id, session, after, epoch)
            events = session.events if session is not None else []
            end = len(events) if limit is None else min(len(events), after + limit)
            return events[after:end]

    def head(self, session_id: str) -> int:
        with self._lock:
            self._check_open("head")
            session = self._sessions.get(session_id)
            return len(session.events) if session is not None else 0

    def epoch(self, session_id: str) -> int:
        with self._lock:
            self._check_open("epoch")
            session = self._sessions.get(session_id)
            return session.epoch if session is not None else 0

    @staticmethod
    def _check_resume(
        session_id: str, session: _Session | None, after: int, epoch: int | None
    ) -> None:
        """Raise ``StaleCursor`` if ``(epoch, after)`` no longer names a position (see base)."""
        if session is None:
            current, low, head = 0, None, 0
        else:
            current, head = session.epoch, len(session.events)
            since = epoch if epoch is not None else current
            low = min((to for started, to in session.rollbacks if started > since), default=None)
        stale = stale_resume(session_id, after, epoch, current=current, low=low, head=head)
        if stale is not None:
            raise stale

    def subscribe(
        self, session_id: str, after: int = 0, *, epoch: int | None = None
    ) -> LogSubscription:
        after = check_cursor(after, name="after", where="MemoryEventLog.subscribe")
        epoch = check_epoch(epoch, where="MemoryEventLog.subscribe")
        with self._lock:
            self._check_open("subscribe")
            session = self._sessions.get(session_id)
            self._check_resume(session_id, session, after, epoch)
            if epoch is None:
                epoch = session.epoch if session is not None else 0
        return LogSubscription(self, self._notifier, session_id, after=after, epoch=epoch)

    def poll(self, session_id: str, after: int, epoch: int, limit: int) -> tuple[list[Event], int]:
        """For ``LogSubscription``: the events after ``after`` (see ``subscription.Source``)."""
        with self._lock:
            if self._closed:
                return [], epoch
            session = self._sessions.get(session_id)
            if session is None:
                return [], epoch
            if session.epoch != epoch:
                low = min(to for started, to in session.rollbacks if started > epoch)
                if low < after:
                    raise stale_cursor(session_id, after, low, rolled_back=True)
            return session.events[after : after + limit], session.epoch

    def rollback(self, session_id: str, to_seq: int) -> int:
        to_seq = check_cursor(to_seq, name="to_seq", where="MemoryEventLog.rollback")
        with self._lock:
            self._check_open("rollback")
            session = self._sessions.get(session_id)
            head = len(session.events) if session is not None else 0
            if to_seq > head:
                raise UsageError(
                    f"MemoryEventLog.rollback: session {session_id!r} has head {head}; "
                    f"cannot roll back forward to {to_seq}"
                )
            dropped = head - to_seq
            if session is not None and dropped:
                del session.events[to_seq:]
                session.epoch += 1
                session.rollbacks.append((session.epoch, to_seq))
        if dropped:
            self._notifier.rolled_back(session_id)
        return dropped

    def sessions(self) -> list[str]:
        with self._lock:
            return sorted(self._sessions)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self._notifier.notify_all()

    def __enter__(self) -> MemoryEventLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<MemoryEventLog sessions={len(self._sessions)} closed={self._closed}>"
