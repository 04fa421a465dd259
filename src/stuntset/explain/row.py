"""One row of a test's timeline (a module of its own: the timeline and the readers that make
rows from the doubles' journals both use it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Row"]


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
