"""The ``EventLog`` protocol: what an event-sourced session log promises.

A log stores, per session, the normalized events of that session's runs (``stuntset.events``)
under a per-session ``seq``: 1, 2, 3… strictly increasing and gapless, assigned *by the store*
when a batch is appended (never by the caller), also with several writers at once.

A *cursor* is a ``seq``: "after cursor N" means the events whose ``seq`` is greater than N;
0 means "from the start". ``subscribe(session, after=N)`` replays what is stored after N and
then goes on live, with no gap and no duplicate at the seam; a subscriber that disconnects
resumes with ``after=`` the last ``seq`` it saw.

``rollback(session, to_seq)`` moves the session's durable high-water mark back to ``to_seq``
(the events after it are gone; the next append gets ``to_seq + 1``). It models what a
power loss does to the last commits of a store that syncs lazily, and lets tests set up
state. A subscriber whose cursor the rollback passed gets ``StaleCursor`` and must
resubscribe (rebuilding what it derived from the lost events).

The session's *epoch* counts the rollbacks that dropped events from it (0 until the first).
After a rollback and new appends the same ``seq`` can name a different event, so a client
that was away cannot trust a plain ``seq``: it keeps the pair ``(epoch, seq)`` — a
subscription's ``epoch`` and ``cursor`` after the last event it delivered — and resumes with
``subscribe(session, after=seq, epoch=epoch)`` (or ``read(..., epoch=epoch)``). If a rollback
since that epoch went below ``seq`` (``to_seq < seq``) the call raises ``StaleCursor`` whose
``resume_at`` is the lowest such ``to_seq``: the events up to it are still the ones the client
holds; it drops the rest of what it derived and resumes after ``resume_at`` (with the same
epoch). A rollback to exactly ``seq`` or above leaves the pair valid. Without ``epoch`` the
calls behave as they always did (no check against rollbacks while away).

``stuntset.checks.check_event_log(make_log)`` checks any implementation against these rules.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

from stuntset.errors import StaleCursor, UsageError
from stuntset.events import Event

__all__ = [
    "EventLog",
    "Subscription",
    "check_append_args",
    "check_cursor",
    "check_epoch",
    "stale_cursor",
    "stale_resume",
]


@runtime_checkable
class Subscription(Protocol):
    """A live stream of one session's events: replay, then live. End it with ``aclose()``.

    Iteration raises ``StaleCursor`` when a rollback removed events it already delivered, and
    ends (``StopAsyncIteration``) after ``aclose()`` or when the log is closed.
    """

    @property
    def cursor(self) -> int:
        """The ``seq`` of the last event delivered (``after`` at first)."""
        ...

    @property
    def epoch(self) -> int:
        """The epoch ``cursor`` belongs to: resume with ``after=cursor, epoch=epoch``."""
        ...

    def __aiter__(self) -> AsyncIterator[Event]: ...

    async def __anext__(self) -> Event: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class EventLog(Protocol):
    """An append-only, per-session event log with cursors, subscriptions and rollback.

    ``append``, ``read``, ``head``, ``rollback`` and ``close`` are synchronous and safe to call
    from any thread; ``subscribe`` must be iterated inside an async task (asyncio or trio).
    """

    def append(self, session_id: str, events: Sequence[Event]) -> list[Event]:
        """Store ``events`` atomically (all or none) at the end of the session's log.

        Returns them as stored, each carrying its ``seq`` (the store assigns it; any ``seq``
        on the input is replaced). Subscribers are woken after the commit.
        """
        ...

    def read(
        self,
        session_id: str,
        after: int = 0,
        limit: int | None = None,
        *,
        epoch: int | None = None,
    ) -> list[Event]:
        """The stored events with ``seq > after``, in ``seq`` order (at most ``limit``).

        With ``epoch`` (the one ``after`` was read at) the cursor is checked first, in the
        same snapshot as the rows: ``StaleCursor`` if a rollback since ``epoch`` went below
        ``after``, or if ``after`` is beyond the head.
        """
        ...

    def head(self, session_id: str) -> int:
        """The session's last ``seq`` (0 for a session with no events)."""
        ...

    def epoch(self, session_id: str) -> int:
        """How many rollbacks dropped events from the session (0 for none).

        A client that pairs it with events it reads must ask *before* the read (a rollback in
        between then shows as a ``StaleCursor`` at worst, never as silently wrong history);
        a subscription's ``epoch`` needs no such care.
        """
        ...

    def subscribe(
        self, session_id: str, after: int = 0, *, epoch: int | None = None
    ) -> Subscription:
        """Events with ``seq > after``: what is stored, then live, without gap or duplicate.

        ``StaleCursor`` if ``after`` is beyond the head or, given the ``epoch`` that ``after``
        belongs to, if a rollback since then went below it (see the module doc).
        """
        ...

    def rollback(self, session_id: str, to_seq: int) -> int:
        """Drop the events after ``to_seq``; return how many were dropped."""
        ...

    def sessions(self) -> list[str]:
        """The ids of the sessions that have (or had) events, sorted."""
        ...

    def close(self) -> None:
        """Release the store; live subscriptions end. Closing twice is harmless."""
        ...


def check_append_args(session_id: object, events: object, *, where: str) -> None:
    """Reject a bad ``append`` call with an error naming the argument (the events themselves
    are checked by ``stuntset.log.validate.checked_batch``)."""
    if not isinstance(session_id, str) or not session_id:
        raise UsageError(f"{where}: session_id must be a non-empty str, got {session_id!r}")
    if isinstance(events, (str, bytes)) or not isinstance(events, Sequence):
        raise UsageError(
            f"{where}: events must be a sequence of events (a list), got {type(events).__name__}"
        )


def check_cursor(value: object, *, name: str, where: str) -> int:
    """A cursor argument as an ``int >= 0``, or a ``UsageError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{where}: {name} must be an int >= 0 (a seq), got {value!r}")
    return value


def check_epoch(value: object, *, where: str) -> int | None:
    """An ``epoch`` argument as ``None`` or an ``int >= 0``, or a ``UsageError`` naming it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(
            f"{where}: epoch must be an int >= 0 (a subscription's epoch or "
            f"EventLog.epoch()), or None, got {value!r}"
        )
    return value


def stale_resume(
    session_id: str,
    after: int,
    epoch: int | None,
    *,
    current: int,
    low: int | None,
    head: int,
) -> StaleCursor | None:
    """The ``StaleCursor`` for resuming at ``(epoch, after)``, or ``None`` if it is valid.

    ``current`` is the session's epoch, ``low`` the lowest ``to_seq`` of its rollbacks since
    ``epoch`` (``None``: none), ``head`` its last ``seq`` — all read in one snapshot. Without
    ``epoch`` only a cursor beyond the head is stale.
    """
    if epoch is not None:
        if epoch > current:
            return StaleCursor(
                f"session {session_id!r}: cursor {after} at epoch {epoch} is stale (the "
                f"session's epoch is {current}: a different or recreated log?); "
                "resubscribe from 0 and rebuild what you derived",
                session_id=session_id,
                cursor=after,
                resume_at=0,
            )
        if low is not None and low < after:
            return stale_cursor(session_id, after, low, rolled_back=True)
    if after > head:
        return stale_cursor(session_id, after, head, rolled_back=False)
    return None


def stale_cursor(session_id: str, cursor: int, resume_at: int, *, rolled_back: bool) -> StaleCursor:
    """The ``StaleCursor`` for ``cursor``: beyond the head, or passed by a rollback.

    ``resume_at`` is the head (not rolled back) or the seq the log was rolled back to.
    """
    why = (
        f"the log was rolled back to seq {resume_at}, below it"
        if rolled_back
        else f"it is beyond the session's head {resume_at}"
    )
    return StaleCursor(
        f"session {session_id!r}: cursor {cursor} is stale ({why}); "
        f"resubscribe with after={resume_at}, or from 0 and rebuild what you derived",
        session_id=session_id,
        cursor=cursor,
        resume_at=resume_at,
    )
