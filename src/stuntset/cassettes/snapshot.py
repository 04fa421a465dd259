"""The snapshot tier: a run's normalized events (or any event list, such as a replayed
session's persisted log) compared with a committed expectation in JSON Lines.

The expectation is written only when asked (``update=True``: ``--stuntset-mode=refresh``
locally), never in CI; a difference is shown event by event.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from itertools import zip_longest
from pathlib import Path

from stuntset.errors import HarnessFailure, UsageError
from stuntset.events import Event, decode_lines, encode, encode_lines

__all__ = ["SnapshotMismatch", "check_events_snapshot"]


class SnapshotMismatch(HarnessFailure):
    """The events differ from the committed expectation."""


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
    for index, (want, got) in enumerate(zip_longest(expected, events)):
        if want != got:
            lines.append(f"  event #{index}:")
            lines.append(f"    expected {encode(want).decode() if want is not None else '(none)'}")
            lines.append(f"    got      {encode(got).decode() if got is not None else '(none)'}")
    if lines:
        shown = "\n".join(lines[:30]) + ("\n  ..." if len(lines) > 30 else "")
        raise SnapshotMismatch(
            f"{file}: {len(lines) // 3} event(s) differ from the snapshot "
            f"({len(expected)} expected, {len(events)} got):\n{shown}\n"
            f"If the change is intended, update with --stuntset-mode=refresh and review the diff."
        )
