"""What a scenario × column run (the provider matrix, drift) sets up alike: the columns and
scenarios asked for, checked before anything plays, and a working folder (a temporary one,
removed afterwards, unless the caller gives one)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from stuntset import scenarios as catalog
from stuntset.errors import UsageError

__all__ = ["columns", "scenario_names", "work_root"]


def columns(given: Iterable[str] | None, known: Collection[str], what: str) -> list[str]:
    """``given`` (default: all ``known``), each one known (``UsageError`` naming the rest)."""
    chosen = list(given) if given is not None else list(known)
    unknown = [name for name in chosen if name not in known]
    if unknown:
        raise UsageError(f"unknown {what}(s) {unknown}; known: {', '.join(known)}")
    return chosen


def scenario_names(given: Iterable[str] | None) -> list[str]:
    """``given`` (default: the whole catalog), each one a catalog scenario."""
    names = list(given) if given is not None else catalog.names()
    for name in names:
        catalog.get(name)
    return names


@contextmanager
def work_root(workdir: str | Path | None, prefix: str) -> Iterator[Path]:
    """``workdir`` as given, or a temporary folder removed when the block ends."""
    if workdir is not None:
        yield Path(workdir)
        return
    owned = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield owned
    finally:
        shutil.rmtree(owned, ignore_errors=True)
