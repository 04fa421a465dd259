"""The normalized events of the runs a test drove, as timeline rows (kind ``event``): one row
an event, its type and key fields (``run.crashed kind='http' retryable=True``), the
consecutive deltas of one message (or one reasoning item) in one row.

``RunEvents`` is what the pytest plugin sets as the process's event watcher
(``stuntset.providers.base.watch_events``, which the plugin hands to ``watching``) for a
test's call: each event a driven run yields
is kept with the time it came (one clock read and a list append); rows are made only when the
timeline is read.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from .row import Row, Start
from .sources import one_line

__all__ = ["MAX_EVENTS", "RunEvents", "event_line", "event_rows"]

#: Events kept per test; past it only the count goes on (the rows say how many were not kept).
MAX_EVENTS = 10_000
#: Fields every event has, left out of its row.
_COMMON = frozenset({"type", "run_id", "ts", "seq"})
_DELTAS = frozenset({"message.delta", "reasoning.delta"})
_FIELD_WIDTH = 60


class RunEvents:
    """The events of the runs a test drove, each with ``time.monotonic_ns()`` when it came."""

    __slots__ = ("dropped", "events")

    def __init__(self) -> None:
        self.events: list[tuple[int, Any]] = []
        self.dropped = 0

    def __call__(self, event: Any) -> None:
        """Keep ``event`` (the watcher ``stuntset.driver.drive`` calls for each event)."""
        if len(self.events) < MAX_EVENTS:
            self.events.append((time.monotonic_ns(), event))
        else:
            self.dropped += 1

    @contextlib.contextmanager
    def watching(self, watch_events: Callable[[Any], Any]) -> Iterator[RunEvents]:
        """Be the process's event watcher inside the block, the previous one after it:
        ``watch_events`` is ``stuntset.providers.base.watch_events`` (handed in by the plugin:
        explain reads the doubles and never imports the adapters' layer)."""
        previous = watch_events(self)
        try:
            yield self
        finally:
            watch_events(previous)


def _fields(event: Any) -> dict[str, Any]:
    import msgspec

    fields = msgspec.structs.asdict(event).items()
    return {k: v for k, v in fields if k not in _COMMON and v is not None}


def _kind(event: Any) -> str:
    return str(getattr(event, "type", None) or type(event).__name__)


def event_line(event: Any, fields: dict[str, Any] | None = None) -> str:
    """One event on one line: its type, then its key fields (``repr``, each cut short; the
    fields every event has and those that are ``None`` left out)."""
    shown = _fields(event) if fields is None else fields
    bits = [_kind(event)]
    bits += [f"{name}={one_line(repr(value), _FIELD_WIDTH)}" for name, value in shown.items()]
    return " ".join(bits)


def event_rows(runs: RunEvents, start: Start) -> list[Row]:
    """``runs``'s events as rows, in the order they came; consecutive deltas of one item (a
    message's, a reasoning's) are one row with their text joined and their count."""
    rows: list[Row] = []
    kept = runs.events
    several = len({getattr(event, "run_id", None) for _, event in kept}) > 1
    index = 0
    while index < len(kept):
        ns, event = kept[index]
        kind = _kind(event)
        fields = _fields(event)
        end = index + 1
        if kind in _DELTAS:
            item = getattr(event, "item_id", None)
            while end < len(kept):
                other = kept[end][1]
                if _kind(other) != kind or getattr(other, "item_id", None) != item:
                    break
                if getattr(other, "run_id", None) != getattr(event, "run_id", None):
                    break
                end += 1
            if end - index > 1:
                fields["text"] = "".join(str(getattr(e, "text", "")) for _, e in kept[index:end])
        text = event_line(event, fields)
        if end - index > 1:
            text = text.replace(kind, f"{kind} x{end - index}", 1)
        run_id = getattr(event, "run_id", None)
        if several:
            text = f"[{run_id}] {text}"
        detail = {"run_id": run_id, "type": kind, "events": end - index, **fields}
        rows.append(Row(start.since_mono(ns), "event", text, detail))
        index = end
    if runs.dropped:
        rows.append(
            Row(None, "event", f"{runs.dropped} later event(s) not kept (over {MAX_EVENTS})")
        )
    return rows
