"""Replay-then-live subscriptions, shared by the stores: notify-then-pull.

After each commit a store calls ``Notifier.notify(session_id)``; that only *wakes* the
session's waiting subscribers (from any thread, on asyncio or trio). Each subscriber then
re-reads from its own cursor. The waiter is registered *before* the read that finds nothing
new, so a commit landing between that read and the wait still wakes it: there is no gap at
the replay/live seam, and because every read starts after the last delivered ``seq`` there
is no duplicate either.

Events read ahead are dropped (and read again) when the store made a rollback of the session
since they were read, so a subscriber never gets an event that a rollback in this process
removed before it was delivered; a rollback made through another process is noticed at the
next read. A store plugs in through ``Source``: one call that returns the events after a cursor (or
raises ``StaleCursor`` when a rollback passed the cursor), and tells whether it is closed.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

import anyio
import sniffio

from stuntset.events import Event

__all__ = ["LogSubscription", "Notifier", "Source"]


class Source(Protocol):
    """What a store offers its subscriptions."""

    def poll(self, session_id: str, after: int, epoch: int, limit: int) -> tuple[list[Event], int]:
        """Up to ``limit`` events with ``seq > after``, and the session's current epoch.

        ``epoch`` is the one the subscriber last saw; if a rollback since then went below
        ``after``, raise ``StaleCursor``. Return ``([], epoch)`` when the store is closed.
        """
        ...

    @property
    def closed(self) -> bool: ...


class _LoopWaker:
    """Sets events on one event loop from any thread, with at most one wake-up of the loop
    in flight: the loop's self-pipe (also its signal wakeup fd) gets one byte per batch,
    never one per subscriber, so a burst of notifies cannot fill it and drop a signal."""

    __slots__ = ("_lock", "_pending", "_schedule", "_scheduled", "schedules")

    def __init__(self, schedule: Callable[[Callable[[], None]], object]) -> None:
        self._lock = threading.Lock()
        self._pending: dict[anyio.Event, None] = {}  # a set in order: no duplicates
        self._scheduled = False
        self._schedule = schedule
        #: How many wake-ups of the loop were asked for (a test counts them).
        self.schedules = 0

    def wake(self, events: list[anyio.Event]) -> None:
        with self._lock:
            self._pending.update(dict.fromkeys(events))
            if self._scheduled or not self._pending:
                return
            self._scheduled = True
            self.schedules += 1
        try:
            self._schedule(self._run)
        except RuntimeError:  # the loop is closed (or its run finished): nobody to wake
            with self._lock:
                self._scheduled = False
                self._pending.clear()

    def _run(self) -> None:
        with self._lock:
            events, self._pending = self._pending, {}
            self._scheduled = False
        for event in events:
            event.set()


_asyncio_wakers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopWaker] = (
    weakref.WeakKeyDictionary()
)
_wakers_lock = threading.Lock()


def _current_waker() -> _LoopWaker:
    """The waker of the running event loop (one per loop, asyncio or trio)."""
    if sniffio.current_async_library() == "trio":
        return _trio_waker()
    loop = asyncio.get_running_loop()
    with _wakers_lock:
        waker = _asyncio_wakers.get(loop)
        if waker is None:
            waker = _asyncio_wakers[loop] = _LoopWaker(loop.call_soon_threadsafe)
    return waker


def _trio_waker() -> _LoopWaker:
    import trio

    var = _trio_var()
    waker: _LoopWaker | None = var.get(None)
    if waker is None:
        token = trio.lowlevel.current_trio_token()

        def schedule(callback: Callable[[], None]) -> None:
            try:
                token.run_sync_soon(callback)
            except trio.RunFinishedError:
                raise RuntimeError("trio run finished") from None

        waker = _LoopWaker(schedule)
        var.set(waker)
    return waker


_TRIO_VAR: list[Any] = []


def _trio_var() -> Any:
    if not _TRIO_VAR:
        import trio

        _TRIO_VAR.append(trio.lowlevel.RunVar("stuntset_log_waker"))
    return _TRIO_VAR[0]


class _Waiter:
    __slots__ = ("event", "waker")

    def __init__(self) -> None:
        self.event = anyio.Event()
        self.waker = _current_waker()

    def wake(self) -> None:
        self.waker.wake([self.event])


def _wake(waiters: list[_Waiter]) -> None:
    """Wake ``waiters`` with one wake-up per event loop (not one per waiter)."""
    by_loop: dict[int, tuple[_LoopWaker, list[anyio.Event]]] = {}
    for waiter in waiters:
        entry = by_loop.setdefault(id(waiter.waker), (waiter.waker, []))
        entry[1].append(waiter.event)
    for waker, events in by_loop.values():
        waker.wake(events)


class Notifier:
    """Wakes the subscribers waiting on a session. Thread-safe; ``notify`` never blocks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[str, set[_Waiter]] = {}
        self._rollbacks: dict[str, int] = {}

    def rollbacks(self, session_id: str) -> int:
        """How many rollbacks of ``session_id`` this store has made (a cheap change check)."""
        return self._rollbacks.get(session_id, 0)

    def rolled_back(self, session_id: str) -> None:
        """Record a rollback of ``session_id`` (after its commit) and wake its subscribers."""
        with self._lock:
            self._rollbacks[session_id] = self._rollbacks.get(session_id, 0) + 1
        self.notify(session_id)

    def register(self, session_id: str) -> _Waiter:
        """A waiter that the next ``notify(session_id)`` (or ``notify_all``) will wake."""
        waiter = _Waiter()
        with self._lock:
            self._waiting.setdefault(session_id, set()).add(waiter)
        return waiter

    def unregister(self, session_id: str, waiter: _Waiter) -> None:
        with self._lock:
            waiters = self._waiting.get(session_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiting[session_id]

    def notify(self, session_id: str) -> None:
        """Wake every subscriber of ``session_id`` (call after the commit)."""
        with self._lock:
            waiters = list(self._waiting.get(session_id, ()))
        _wake(waiters)

    def waiting(self) -> bool:
        """Whether any subscriber is waiting for a wake-up."""
        return bool(self._waiting)

    def notify_all(self) -> None:
        """Wake every subscriber (on close)."""
        with self._lock:
            waiters = [w for ws in self._waiting.values() for w in ws]
        _wake(waiters)


class LogSubscription:
    """A session's events after a cursor: what is stored, then live (see the module doc).

    ``cursor`` is the ``seq`` of the last event delivered. ``poll_interval`` (seconds, or
    ``None``) also re-reads that often without a wake-up, for writers in other processes.
    """

    def __init__(
        self,
        source: Source,
        notifier: Notifier,
        session_id: str,
        *,
        after: int,
        epoch: int,
        batch: int = 1000,
        poll_interval: float | None = None,
    ) -> None:
        self._source = source
        self._notifier = notifier
        self._session_id = session_id
        self._cursor = after
        self._epoch = epoch
        self._batch = batch
        self._poll_interval = poll_interval
        self._buffer: deque[Event] = deque()
        self._closed = False
        self._waiter: _Waiter | None = None
        self._generation = 0

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def cursor(self) -> int:
        """The ``seq`` of the last event delivered (the ``after`` to resume from)."""
        return self._cursor

    @property
    def epoch(self) -> int:
        """The session epoch ``cursor`` belongs to (the ``epoch`` to resume with).

        The epoch of the read that returned the last event delivered, or later, once a read
        confirmed that no rollback since went below the cursor.
        """
        return self._epoch

    def __aiter__(self) -> LogSubscription:
        return self

    async def __anext__(self) -> Event:
        while True:
            if self._ended():
                self._buffer.clear()
                raise StopAsyncIteration
            if self._buffer and self._notifier.rollbacks(self._session_id) != self._generation:
                self._buffer.clear()  # read again: a rollback may have removed these
            if self._buffer:
                event = self._buffer.popleft()
                assert event.seq is not None
                self._cursor = event.seq
                return event
            waiter = self._notifier.register(self._session_id)
            self._waiter = waiter
            try:
                self._generation = self._notifier.rollbacks(self._session_id)
                events, self._epoch = self._source.poll(
                    self._session_id, self._cursor, self._epoch, self._batch
                )
                if events:
                    self._buffer.extend(events)
                    continue
                if self._ended():  # closed while we read
                    continue
                if self._poll_interval is None:
                    await waiter.event.wait()
                else:
                    with anyio.move_on_after(self._poll_interval):
                        await waiter.event.wait()
            finally:
                self._waiter = None
                self._notifier.unregister(self._session_id, waiter)

    def _ended(self) -> bool:
        return self._closed or self._source.closed

    async def aclose(self) -> None:
        """End the subscription; a pending ``__anext__`` ends with ``StopAsyncIteration``."""
        self._closed = True
        waiter = self._waiter
        if waiter is not None:
            waiter.wake()

    async def __aenter__(self) -> LogSubscription:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return (
            f"<LogSubscription session={self._session_id!r} cursor={self._cursor} "
            f"epoch={self._epoch}>"
        )
