"""The ambient clock and id generator, for code that is not handed one explicitly.

Every stuntset object takes ``clock=`` and ``ids=`` arguments; when they are omitted, it uses
the ones in force here. By default those are the real ``SystemClock`` and ``RandomIds``.
``deterministic()`` puts a ``FakeClock`` and ``SequentialIds`` in force for a block (the pytest
plugin does this around every test). This is a context variable, not a module global: it is
per thread and per task, and restored on exit, so nothing needs patching.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

from stuntset.clock import Clock, FakeClock, SystemClock
from stuntset.ids import IdGenerator, RandomIds, SequentialIds

__all__ = ["Seams", "current_clock", "current_ids", "deterministic", "use_seams"]


class Seams(NamedTuple):
    clock: Clock
    ids: IdGenerator


_REAL = Seams(SystemClock(), RandomIds())
_current: ContextVar[Seams] = ContextVar("stuntset_seams", default=_REAL)


def current_clock() -> Clock:
    """The clock in force."""
    return _current.get().clock


def current_ids() -> IdGenerator:
    """The id generator in force."""
    return _current.get().ids


@contextmanager
def use_seams(*, clock: Clock | None = None, ids: IdGenerator | None = None) -> Iterator[Seams]:
    """Put ``clock`` and/or ``ids`` in force for the block (the others stay as they were)."""
    previous = _current.get()
    seams = Seams(clock or previous.clock, ids or previous.ids)
    token = _current.set(seams)
    try:
        yield seams
    finally:
        _current.reset(token)


@contextmanager
def deterministic(start: float | None = None) -> Iterator[Seams]:
    """A fresh ``FakeClock`` and ``SequentialIds`` in force for the block."""
    clock = FakeClock() if start is None else FakeClock(start)
    with use_seams(clock=clock, ids=SequentialIds()) as seams:
        yield seams
