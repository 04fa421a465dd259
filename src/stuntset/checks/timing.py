"""Timeouts bound to the test, that say what was still pending when the time ran out.

- ``SettleGate``: the code under test (or the test) marks work as pending while it runs
  (``with gate.hold("tool call t1"):`` or ``token = gate.enter(...)`` / ``gate.leave(token)``);
  ``gate.wait(timeout)`` / ``await gate.wait_async(timeout)`` returns once nothing is pending,
  or fails with ``WaitTimeout`` naming each pending item and how long it has been pending.
- ``within(seconds, gate=...)``: bounds a block, ``async with`` (an anyio cancel scope: asyncio
  and trio) or ``with`` (SIGALRM, main thread only: it saves and re-arms whatever alarm was
  set before, such as pytest-timeout's). On expiry it raises ``WaitTimeout`` naming the block
  and what its gates held when the time ran out: in async code the cancellation unwinds the
  block (its ``gate.hold`` blocks leave on the way out) before the report is written, so a
  gate remembers what left *because of a cancellation* and the report names those too.
- ``TempTracker``: temporary directories the test hands out (``mkdtemp``) and a watched
  directory (the test's ``TMPDIR``) the app writes its own temporary files into; ``close()``
  removes everything and fails with ``LeftoverPaths`` listing what the app left behind.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Literal

import anyio

from stuntset.errors import LeftoverPaths, UsageError, WaitTimeout

__all__ = ["SettleGate", "TempTracker", "within"]


class SettleGate:
    """Work in flight, by name; settled when nothing is pending. Thread-safe."""

    def __init__(self, name: str = "gate", *, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self._clock = clock
        self._pending: dict[int, tuple[str, float]] = {}
        self._ids = itertools.count()
        self._changed = threading.Condition()
        # what left while a cancellation unwound it: (sequence, what, since, left at)
        self._cut: deque[tuple[int, str, float, float]] = deque(maxlen=256)
        self._cuts = itertools.count()

    def enter(self, what: str) -> int:
        """Mark ``what`` as pending; returns the token ``leave`` takes."""
        with self._changed:
            token = next(self._ids)
            self._pending[token] = (what, self._clock())
            return token

    def leave(self, token: int) -> None:
        with self._changed:
            item = self._pending.pop(token, None)
            if item is None:
                raise UsageError(f"{self.name}: token {token} is not pending (left twice?)")
            if _is_cancellation(sys.exc_info()[1]):  # left from a ``finally:`` being cancelled
                self._cut.append((next(self._cuts), *item, self._clock()))
            self._changed.notify_all()

    def mark(self) -> int:
        """A point ``cut_short(since=)`` counts from."""
        with self._changed:
            return self._cut[-1][0] + 1 if self._cut else 0

    def cut_short(self, since: int = 0) -> list[str]:
        """What left because a cancellation unwound it (after ``mark()`` returned ``since``),
        with how long each had been pending when it left."""
        with self._changed:
            cut = [item for item in self._cut if item[0] >= since]
        return [f"{what} (pending {left - t0:.2f} s, cut short)" for _, what, t0, left in cut]

    @contextmanager
    def hold(self, what: str) -> Iterator[None]:
        """Pending for the duration of the block."""
        token = self.enter(what)
        try:
            yield
        finally:
            self.leave(token)

    def pending(self) -> list[str]:
        """What is pending now, oldest first, with how long each has been pending."""
        now = self._clock()
        with self._changed:
            items = sorted(self._pending.values(), key=lambda item: item[1])
        return [f"{what} (pending {now - since:.2f} s)" for what, since in items]

    def _report(self, timeout: float) -> str:
        pending = self.pending()
        listed = "\n".join(f"  {line}" for line in pending) or "  (nothing: it settled just now)"
        return f"{self.name} did not settle within {timeout} s; still pending:\n{listed}"

    def wait(self, timeout: float) -> None:
        """Block until nothing is pending; ``WaitTimeout`` listing what is, after ``timeout`` s."""
        __tracebackhide__ = True
        with self._changed:
            if self._changed.wait_for(lambda: not self._pending, timeout=timeout):
                return
        raise WaitTimeout(self._report(timeout))

    async def wait_async(self, timeout: float) -> None:
        """``wait`` for async code (the wait runs on a worker thread; the loop stays free)."""
        __tracebackhide__ = True
        settled = await anyio.to_thread.run_sync(self._settled_within, timeout)
        if not settled:
            raise WaitTimeout(self._report(timeout))

    def _settled_within(self, timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: not self._pending, timeout=timeout)


@dataclass
class _Within:
    seconds: float
    what: str
    gates: tuple[SettleGate, ...]
    _scope: Any = field(default=None, repr=False)
    _previous: Any = field(default=None, repr=False)
    _alarm: tuple[float, float] = (0.0, 0.0)
    _started: float = 0.0
    _marks: tuple[int, ...] = ()

    def report(self) -> str:
        lines = [f"{self.what} did not finish within {self.seconds} s"]
        marks = self._marks or (0,) * len(self.gates)
        for gate, mark in zip(self.gates, marks, strict=True):
            pending = gate.pending() + gate.cut_short(since=mark)
            lines.append(f"{gate.name} still pending: " + ("; ".join(pending) or "nothing"))
        if not self.gates:
            lines.append("(pass gate= to have what was in flight named here)")
        return "\n".join(lines)

    # --- async: an anyio cancel scope ---

    async def __aenter__(self) -> _Within:
        self._marks = tuple(gate.mark() for gate in self.gates)
        self._scope = anyio.fail_after(self.seconds)
        self._scope.__enter__()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        __tracebackhide__ = True
        try:
            self._scope.__exit__(kind, error, tb)
        except TimeoutError:
            raise WaitTimeout(self.report()) from None
        return False

    # --- sync: SIGALRM on the main thread ---

    def _expired(self, signum: int, frame: FrameType | None) -> None:
        raise WaitTimeout(self.report())

    def __enter__(self) -> _Within:
        if threading.current_thread() is not threading.main_thread() or not hasattr(
            signal, "setitimer"
        ):
            raise UsageError(
                f"`with within({self.seconds})` needs the main thread and SIGALRM; in async "
                f"code use `async with within(...)`"
            )
        self._started = time.monotonic()
        self._previous = signal.signal(signal.SIGALRM, self._expired)
        self._alarm = signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, self._previous)
        remaining, interval = self._alarm
        if remaining > 0:  # re-arm the alarm that was set before (pytest-timeout's)
            left = max(remaining - (time.monotonic() - self._started), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left, interval)
        return False


def _is_cancellation(error: BaseException | None) -> bool:
    """An asyncio or trio cancellation (what a cancel scope unwinds a block with)."""
    if error is None:
        return False
    if isinstance(error, asyncio.CancelledError):
        return True
    trio = sys.modules.get("trio")
    return trio is not None and isinstance(error, trio.Cancelled)


def within(
    seconds: float, *, what: str = "the block", gate: SettleGate | tuple[SettleGate, ...] = ()
) -> _Within:
    """Bound a block to ``seconds``: ``async with within(2):`` or ``with within(2):``.
    ``WaitTimeout`` on expiry names ``what`` and everything ``gate`` still held."""
    if seconds <= 0:
        raise UsageError(f"within({seconds}): the bound must be positive")
    gates = (gate,) if isinstance(gate, SettleGate) else tuple(gate)
    return _Within(seconds, what, gates)


class TempTracker:
    """Temporary paths of one test, under ``root``: those handed out by ``mkdtemp`` and
    anything else that appears in ``root`` while the test runs (point the app's temporary
    directory there: the ``temp_tracker`` fixture sets ``TMPDIR`` and ``tempfile.tempdir``).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._before = {p.name for p in self.root.iterdir()}
        self._own: list[Path] = []

    def mkdtemp(self, prefix: str = "stuntset-") -> Path:
        """A new directory the test owns (removed at ``close`` without complaint)."""
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=self.root))
        self._own.append(path)
        return path

    def release(self, path: str | os.PathLike[str]) -> None:
        """Count ``path`` as the test's own (the app hands it over on purpose)."""
        self._own.append(Path(path))

    def leftovers(self) -> list[Path]:
        """Paths that appeared in ``root`` and are not the test's own, oldest name first."""
        own = {p.resolve() for p in self._own}
        return sorted(
            p for p in self.root.iterdir() if p.name not in self._before and p.resolve() not in own
        )

    def close(self, *, fail: bool = True) -> list[Path]:
        """Remove the test's directories and every leftover; ``LeftoverPaths`` listing the
        leftovers (unless ``fail=False``, which returns them)."""
        __tracebackhide__ = True
        leftovers = self.leftovers()
        listed = "\n".join(f"  {p.name}{'/' if p.is_dir() else ''}" for p in leftovers)
        for path in [*self._own, *leftovers]:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        self._own.clear()
        if leftovers and fail:
            raise LeftoverPaths(
                f"{len(leftovers)} temporary path(s) were left in {self.root} (now removed):\n"
                f"{listed}\nThe code under test should remove what it creates (tempfile."
                f"TemporaryDirectory, or a finally:); if the test takes a path over, call "
                f"release(path)."
            )
        return leftovers
