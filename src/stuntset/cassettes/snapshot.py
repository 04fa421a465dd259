"""The snapshot tier: a run's normalized events, and the persisted log of a replayed session
(each stored event with the ``seq`` the store gave it), compared with a committed expectation
in JSON Lines.

The expectation is written only when asked (``update=True``: ``--stuntset-mode=refresh``
locally), never in CI; a difference is shown event by event. ``EventSnapshot`` is the
``event_snapshot`` fixture: ``event_snapshot(events)`` and ``event_snapshot.log(log, session)``,
each with an optional ``name`` when a test keeps more than one snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING

from stuntset.errors import SnapshotMismatch, UsageError
from stuntset.events import Event, decode_lines, encode, encode_lines

if TYPE_CHECKING:
    from stuntset.log import EventLog

__all__ = ["EventSnapshot", "SnapshotMismatch", "check_events_snapshot"]


def check_events_snapshot(
    events: Sequence[Event], path: str | os.PathLike[str], *, update: bool = False
) -> None:
    """Compare ``events`` with the JSONL at ``path``; with ``update``, (re)write it instead."""
    __tracebackhide__ = True
    file = Path(path)
    if update:
        if os.environ.get("CI"):
            raise UsageError(f"{file}: snapshots are never written in CI (CI is set)")
        file.parent.mkdir(parents=True, exist_ok=True)
        temporary = file.with_name(f".{file.name}.tmp")
        temporary.write_bytes(encode_lines(events))
        temporary.replace(file)
        return
    if not file.exists():
        raise SnapshotMismatch(
            f"no snapshot at {file}: write it with --stuntset-mode=refresh, review it, commit it"
        )
    expected = decode_lines(file.read_bytes())
    lines = []
    differing = 0
    for index, (want, got) in enumerate(zip_longest(expected, events)):
        if want != got:
            differing += 1
            lines.append(f"  event #{index}:")
            lines.append(f"    expected {encode(want).decode() if want is not None else '(none)'}")
            lines.append(f"    got      {encode(got).decode() if got is not None else '(none)'}")
            if want is not None and got is not None:
                lines += _window(want, got)
    if lines:
        shown = "\n".join(lines[:30]) + ("\n  ..." if len(lines) > 30 else "")
        raise SnapshotMismatch(
            f"{file}: {differing} event(s) differ from the snapshot "
            f"({len(expected)} expected, {len(events)} got):\n{shown}\n"
            f"If the change is intended, update with --stuntset-mode=refresh and review the diff."
        )


def _window(want: Event, got: Event) -> list[str]:
    """Where two events first differ (a field's path and a window around it), for events
    whose JSON is long enough that the two lines alone hide it."""
    import msgspec

    a, b = msgspec.to_builtins(want), msgspec.to_builtins(got)
    if max(len(encode(want)), len(encode(got))) <= 100:
        return []
    from stuntset.explain.window import mismatch_window

    return mismatch_window(a, b, labels=("expected", "got"), indent="    ").splitlines()


class EventSnapshot:
    """Snapshots of one test, kept as ``<base>.jsonl`` (``<base>.<name>.jsonl`` when named)."""

    def __init__(self, base: str | os.PathLike[str], *, update: bool = False) -> None:
        self.base = Path(base)
        self.update = update

    def path(self, name: str | None = None) -> Path:
        """Where the snapshot called ``name`` (default: the test's own) is kept."""
        if name is None:
            return self.base.with_name(f"{self.base.name}.jsonl")
        if not name or "/" in name or name.startswith("."):
            raise UsageError(f"snapshot name {name!r}: use a plain file-name part")
        return self.base.with_name(f"{self.base.name}.{name}.jsonl")

    def __call__(self, events: Sequence[Event], *, name: str | None = None) -> None:
        """Compare ``events`` with the committed snapshot (or rewrite it when refreshing)."""
        __tracebackhide__ = True
        check_events_snapshot(list(events), self.path(name), update=self.update)

    def log(self, log: EventLog, session_id: str, *, name: str | None = None) -> None:
        """Compare what ``log`` persisted for ``session_id`` — every stored event with its
        ``seq`` — with the snapshot ``name`` (default: ``log-<session_id>``)."""
        __tracebackhide__ = True
        stored = log.read(session_id)
        if not stored:
            raise SnapshotMismatch(
                f"the log holds no events for session {session_id!r} "
                f"(sessions: {', '.join(log.sessions()) or 'none'})"
            )
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)
        self(stored, name=name or f"log-{safe}")
