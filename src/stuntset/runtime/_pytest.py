"""The bodies of the host fixtures of the pytest plugin (``log_seam``, ``session_service``,
``daemon``), kept here so the plugin stays thin and these work without pytest too."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stuntset.log.sqlite import SqliteEventLog
from stuntset.runtime.daemon import DaemonHandle, start_daemon
from stuntset.runtime.service import SessionService
from stuntset.runtime.store import SessionStore
from stuntset.runtime.testing import LogSeam, scenario_registry

__all__ = ["open_log_seam", "open_session_service", "running_daemon"]


@contextmanager
def open_log_seam(log: SqliteEventLog) -> Iterator[LogSeam]:
    """A ``LogSeam`` over ``log`` and a ``SessionStore`` in the same database file."""
    store = SessionStore(log.path)
    try:
        yield LogSeam(log, store)
    finally:
        store.close()


@contextmanager
def open_session_service(log: SqliteEventLog) -> Iterator[SessionService]:
    """An unstarted ``SessionService`` over ``log`` with ``scenario_registry()``."""
    store = SessionStore(log.path)
    try:
        yield SessionService(log=log, store=store, providers=scenario_registry())
    finally:
        store.close()


@contextmanager
def running_daemon(directory: Path) -> Iterator[DaemonHandle]:
    """A daemon over ``directory/stuntset-host.db`` with ``scenario_registry()``, stopped after."""
    handle = start_daemon(
        db=directory / "stuntset-host.db",
        providers=scenario_registry(),
        token_file=directory / "stuntset-daemon.json",
    )
    try:
        yield handle
    finally:
        handle.stop()
