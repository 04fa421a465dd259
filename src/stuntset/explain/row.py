"""One row of a test's timeline, and the test's start its times count from (a module of its
own: the timeline and the readers that make rows from the doubles' journals both use them,
and the readers need only the start, never the timeline that calls them)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Row", "Start"]


class Start:
    """When the test started, on both clocks: the model and MCP journals stamp
    ``time.monotonic_ns()``, the fake CLIs name their journals by ``time.time_ns()``."""

    __slots__ = ("mono_ns", "wall_ns")

    def __init__(self, *, mono_ns: int | None = None, wall_ns: int | None = None) -> None:
        self.mono_ns = time.monotonic_ns() if mono_ns is None else mono_ns
        self.wall_ns = time.time_ns() if wall_ns is None else wall_ns

    def since_mono(self, ns: int) -> float:
        return (ns - self.mono_ns) / 1e9

    def since_wall(self, ns: int) -> float:
        return (ns - self.wall_ns) / 1e9


@dataclass(frozen=True, slots=True)
class Row:
    """One thing a double saw or did. ``t`` is seconds from the test's start (``None``: not
    an event in time, e.g. a turn never used, listed after the rest); ``source`` the double
    (``model``, ``claude``, ``codex``, ``mcp``); ``text`` one line; ``detail`` everything
    known about it (the trace keeps it); ``pending`` whether it was still unfinished."""

    t: float | None
    source: str
    text: str
    detail: dict[str, Any] = field(default_factory=dict)
    pending: bool = False

    def line(self) -> str:
        when = "" if self.t is None else f"+{self.t:.3f}s"
        flag = " (pending)" if self.pending else ""
        return f"{when:>9} {self.source:<6} {self.text}{flag}"
