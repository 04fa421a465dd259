"""One test's timeline: what every double it used saw and did, in order, with times from the
test's start. The pytest plugin keeps one ``Timeline`` per test that asks for a double, and
reads it only when the test fails (or errors), or when a trace is wanted: a passing test
pays for two clock reads and a list append per double.

Nothing here changes how a double records: the rows are read from the journals the doubles
already keep (``ModelDouble.journal``, the fake CLIs' invocation journals, the MCP double's
journal) at the moment the timeline is asked for. The events of the runs the test drove are
kept as they come (``runs``: the plugin makes it the process's event watcher for the test's
call) and made rows at that moment too.
"""

from __future__ import annotations

from typing import Any

from .row import Row, Start
from .runs import RunEvents

__all__ = ["DEFAULT_ROWS", "Timeline", "render"]

#: Rows the report section shows by default (``-vv`` shows every row).
DEFAULT_ROWS = 30
#: Of the default rows, how many come from the start (the rest are the last ones).
_HEAD_ROWS = 5


class Timeline(Start):
    """The doubles one test used, and when the test started (``Start``: both clocks; the
    readers of ``sources`` are handed the timeline as that start), and the events of the runs
    it drove (``runs``)."""

    __slots__ = ("doubles", "runs")

    def __init__(self, *, mono_ns: int | None = None, wall_ns: int | None = None) -> None:
        super().__init__(mono_ns=mono_ns, wall_ns=wall_ns)
        self.doubles: list[tuple[str, Any]] = []
        self.runs = RunEvents()

    def watch(self, kind: str, double: Any) -> None:
        """Read ``double`` (a ``kind``: ``model``, ``cli`` or ``mcp``) when rows are asked for."""
        self.doubles.append((kind, double))

    def rows(self) -> list[Row]:
        """Every row of every watched double and of the runs driven: dated rows by time, then
        undated ones."""
        from .runs import event_rows
        from .sources import READERS

        rows: list[Row] = event_rows(self.runs, self) if self.runs.events else []
        for kind, double in self.doubles:
            try:
                rows.extend(READERS[kind](double, self))
            except Exception as exc:  # a broken journal must not hide the failure
                rows.append(Row(None, kind, f"(could not read this double's journal: {exc!r})"))
        dated = sorted((r for r in rows if r.t is not None), key=lambda r: r.t or 0.0)
        return dated + [r for r in rows if r.t is None]

    def pending(self) -> list[Row]:
        """The rows still unfinished (a stalled stream, a process with no exit yet)."""
        return [row for row in self.rows() if row.pending]


def render(rows: list[Row], *, limit: int | None = DEFAULT_ROWS) -> str:
    """The report section: a header, then the rows (all of them if ``limit`` is ``None``; else
    the first few and the last ones, with how many were left out between)."""
    total = len(rows)
    header = "times from the test's start"
    if limit is None or total <= limit:
        shown = [row.line() for row in rows]
        header += f"; {total} row(s)"
    else:
        tail = limit - _HEAD_ROWS
        skipped = total - limit
        shown = [
            *(row.line() for row in rows[:_HEAD_ROWS]),
            f"{'':>9} ... {skipped} row(s) left out (-vv shows every row)",
            *(row.line() for row in rows[total - tail :]),
        ]
        header += f"; {limit} of {total} rows"
    return "\n".join([header, *shown]) + "\n"
