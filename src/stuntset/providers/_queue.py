"""The hand-over between an adapter's own task or thread, which produces a run's events, and
the consumer iterating the run on the event loop."""

from __future__ import annotations

import collections

import anyio

from stuntset.events import Event

__all__ = ["EventQueue"]


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
