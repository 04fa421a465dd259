"""The hand-over between an adapter's own task or thread, which produces a run's events, and
the consumer iterating the run on the event loop; and what such runs share."""

from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import Protocol, Self

import anyio

from stuntset.events import Event

__all__ = ["EventQueue", "QueuedRun"]


class EventQueue:
    """Events waiting for the consumer. ``put``/``end`` run on the event loop (threads hop
    there with ``call_soon_threadsafe``); ``get`` waits for the next event, ``None`` once the
    producer has ended and everything was taken."""

    def __init__(self) -> None:
        self._items: collections.deque[Event] = collections.deque()
        self._wake: anyio.Event | None = None
        self.ended = False

    def put(self, event: Event) -> None:
        self._items.append(event)
        if self._wake is not None:
            self._wake.set()

    def end(self) -> None:
        """Nothing more will be put."""
        self.ended = True
        if self._wake is not None:
            self._wake.set()

    async def get(self) -> Event | None:
        while not self._items:
            if self.ended:
                return None
            self._wake = anyio.Event()
            await self._wake.wait()
        return self._items.popleft()


class _Open(Protocol):
    kind: str
    answer: str | None


class QueuedRun:
    """What the SDK adapters' runs share: their ids, their open requests, and being their own
    async iterator (``__anext__`` is each adapter's)."""

    _run_id: str
    _session_id: str
    _requests: Mapping[str, _Open]

    @property
    def run_id(self) -> str:
        return self._run_id

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def open_requests(self) -> dict[str, str]:
        """Requests waiting for ``respond()``: request id → ``"approval"`` or ``"input"``."""
        return {rid: r.kind for rid, r in self._requests.items() if r.answer is None}

    def __aiter__(self) -> Self:
        return self
