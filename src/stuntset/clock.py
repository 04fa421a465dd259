"""The clock seam: where stuntset (and code that accepts a clock) reads the time.

``SystemClock`` is the real one. ``FakeClock`` starts at a fixed instant and moves only when
told: ``advance()``, or ``sleep()``, which advances by the slept amount and returns at once, so
a scripted delay of ten minutes costs a test nothing.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

__all__ = ["DEFAULT_START", "Clock", "FakeClock", "SystemClock"]

#: Where every ``FakeClock`` starts unless told otherwise: 2026-01-01T00:00:00Z.
DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC).timestamp()


@runtime_checkable
class Clock(Protocol):
    """Wall time for timestamps, monotonic time for durations, and a way to wait."""

    def now(self) -> float:
        """Seconds since the Unix epoch."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (as this clock counts them)."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        import anyio  # on first use: in-process doubles that never sleep do not load it

        await anyio.sleep(seconds)

    def __repr__(self) -> str:
        return "SystemClock()"


class FakeClock:
    """A deterministic clock: fixed start, moves only when told.

    ``sleep(s)`` advances the clock by ``s`` and yields once to the event loop, so scripted
    delays keep their order without costing wall time.
    """

    def __init__(self, start: float = DEFAULT_START) -> None:
        self._start = start
        self._elapsed = 0.0

    def now(self) -> float:
        return self._start + self._elapsed

    def monotonic(self) -> float:
        return self._elapsed

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds`` (never backwards)."""
        if seconds < 0:
            from stuntset.errors import UsageError

            raise UsageError(f"FakeClock.advance({seconds!r}): a clock cannot go backwards")
        self._elapsed += seconds

    async def sleep(self, seconds: float) -> None:
        import anyio.lowlevel

        self.advance(max(0.0, seconds))
        await anyio.lowlevel.checkpoint()

    def __repr__(self) -> str:
        return f"FakeClock(now={self.now()!r})"
