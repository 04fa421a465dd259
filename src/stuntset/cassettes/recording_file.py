"""Writing a recording where others may be writing the same cassette (two pytest-xdist
workers whose tests share one cassette, two ``stuntset record`` processes): nothing is lost and
nothing is torn.

* every write takes an exclusive lock on ``.<name>.lock`` beside the cassette (``fcntl``: held
  by a process, released when it ends, however it ends);
* the bytes go to a temporary file of a unique name and are renamed over the cassette
  (``write_cassette``), so a reader sees the old file or the new one, never a mix;
* a recording *merges* with what another recorder wrote since it started: ``FileState`` is
  taken when recording starts, and if the cassette is not that same file when the recording
  is written, its interactions are kept and the new ones added after them, each recording in
  a session of its own (so each replays on its own, in any order). A cassette unchanged since
  the start (the one being re-recorded) is replaced.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import msgspec

from stuntset.cassettes.format import Cassette, Interaction, load_cassette, write_cassette
from stuntset.cassettes.scrub import Scrubber

__all__ = ["FileState", "locked", "write_recording"]


class FileState(NamedTuple):
    """Which file a path was when a recording started (``None`` fields: no file)."""

    inode: int | None
    mtime_ns: int | None
    size: int | None

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> FileState:
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            return cls(None, None, None)
        return cls(stat.st_ino, stat.st_mtime_ns, stat.st_size)


@contextlib.contextmanager
def locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the exclusive lock of cassette ``path`` (``.<name>.lock`` beside it)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(f".{target.name}.lock"), "w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.lockf(lock, fcntl.LOCK_UN)


def _own_sessions(interactions: list[Interaction], tag: str) -> list[Interaction]:
    return [
        i if i.session is not None else msgspec.structs.replace(i, session=tag)
        for i in interactions
    ]


def write_recording(
    path: str | os.PathLike[str],
    cassette: Cassette,
    *,
    since: FileState,
    scrubber: Scrubber | None = None,
) -> Path:
    """Write ``cassette`` to ``path`` under its lock: replacing the file if it is still the
    one ``since`` saw, else added after what another recorder wrote meanwhile."""
    target = Path(path)
    with locked(target):
        if FileState.of(target) == since or not target.exists():
            return write_cassette(target, cassette, scrubber=scrubber)
        theirs = load_cassette(target).interactions
        ours = list(cassette.interactions)
        if not any(i.session is not None for i in theirs):
            theirs = _own_sessions(theirs, "recording-1")
        tag = f"recording-{len({i.session for i in theirs}) + 1}"
        merged = [*theirs, *_own_sessions(ours, tag)]
        renumbered = [
            msgspec.structs.replace(i, id=f"i-{n}") for n, i in enumerate(merged, start=1)
        ]
        return write_cassette(
            target,
            Cassette(interactions=renumbered, recorded_by=cassette.recorded_by),
            scrubber=scrubber,
        )
