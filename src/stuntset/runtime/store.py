"""``SessionStore``: tasks, sessions, runs and checkpoints in SQLite (beside the event log).

Each row is a msgspec struct stored as JSON under its id (the same serializer everywhere,
so what a test reads back is what the host wrote). Writes are single ``BEGIN IMMEDIATE``
transactions; ``synchronous`` has the meaning documented in ``stuntset.log.sqlite``. The
file may be the event log's own (the tables are distinct) or another one.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from stuntset.errors import UsageError
from stuntset.log.sqlite import Synchronous, file_error
from stuntset.runtime.models import Checkpoint, RunRecord, SessionRecord, TaskRecord

__all__ = ["SessionStore"]

_Row = TypeVar("_Row", TaskRecord, SessionRecord, RunRecord)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS host_tasks (id TEXT PRIMARY KEY, data BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS host_sessions (id TEXT PRIMARY KEY, task_id TEXT NOT NULL, "
    "data BLOB NOT NULL)",
    "CREATE TABLE IF NOT EXISTS host_runs (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, "
    "status TEXT NOT NULL, data BLOB NOT NULL)",
)
_TABLES = {TaskRecord: "host_tasks", SessionRecord: "host_sessions", RunRecord: "host_runs"}
_encoder = msgspec.json.Encoder(order="deterministic")


_F = TypeVar("_F", bound=Callable[..., Any])


def _file_errors(method: _F) -> _F:
    """A ``sqlite3`` error in ``method`` becomes one ``LogFileError`` naming the file."""

    @functools.wraps(method)
    def wrapper(self: SessionStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as error:
            where = f"SessionStore.{method.__name__.strip('_')}"
            raise file_error(self._path, error, where=where) from error

    return wrapper  # type: ignore[return-value]


class SessionStore:
    """The host's rows, in one SQLite file (``":memory:"`` for a throwaway store). A full
    disk, a read-only or corrupt file raise one ``LogFileError`` naming it."""

    @_file_errors
    def __init__(
        self, path: str | os.PathLike[str], *, synchronous: Synchronous = "NORMAL"
    ) -> None:
        self._path = str(path)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            self._path, timeout=10.0, isolation_level=None, check_same_thread=False
        )
        if self._path != ":memory:":
            self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute(f"PRAGMA synchronous={synchronous}")
        with self._write() as conn:
            for statement in _SCHEMA:
                conn.execute(statement)

    def _write(self) -> _Transaction:
        return _Transaction(self)

    def _open(self) -> sqlite3.Connection:
        if self._conn is None:
            raise UsageError(f"SessionStore: the store is closed ({self._path!r})")
        return self._conn

    # --- rows ---------------------------------------------------------------------------

    @_file_errors
    def put(self, row: TaskRecord | SessionRecord | RunRecord) -> None:
        """Insert or replace ``row`` (by its id)."""
        data = _encoder.encode(row)
        with self._write() as conn:
            if isinstance(row, TaskRecord):
                conn.execute("INSERT OR REPLACE INTO host_tasks VALUES (?, ?)", (row.task_id, data))
            elif isinstance(row, SessionRecord):
                conn.execute(
                    "INSERT OR REPLACE INTO host_sessions VALUES (?, ?, ?)",
                    (row.session_id, row.task_id, data),
                )
            else:
                conn.execute(
                    "INSERT OR REPLACE INTO host_runs VALUES (?, ?, ?, ?)",
                    (row.run_id, row.session_id, row.status, data),
                )

    @_file_errors
    def get(self, kind: type[_Row], row_id: str) -> _Row | None:
        """The row of ``kind`` with that id, or ``None``."""
        with self._lock:
            found = (
                self._open()
                .execute(f"SELECT data FROM {_TABLES[kind]} WHERE id = ?", (row_id,))
                .fetchone()
            )
        return None if found is None else msgspec.json.decode(found[0], type=kind)

    @_file_errors
    def all(self, kind: type[_Row], *, session_id: str | None = None) -> list[_Row]:
        """Every row of ``kind`` (runs: of one session if ``session_id`` is given)."""
        query = f"SELECT data FROM {_TABLES[kind]}"
        params: tuple[str, ...] = ()
        if session_id is not None and kind is RunRecord:
            query += " WHERE session_id = ?"
            params = (session_id,)
        with self._lock:
            rows = self._open().execute(query + " ORDER BY rowid", params).fetchall()
        return [msgspec.json.decode(row[0], type=kind) for row in rows]

    @_file_errors
    def set_checkpoint(self, session_id: str, checkpoint: Checkpoint) -> None:
        """Record where ``session_id`` resumes (call only when a run completed)."""
        with self._write() as conn:
            found = conn.execute(
                "SELECT data FROM host_sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if found is None:
                raise UsageError(f"SessionStore.set_checkpoint: no session {session_id!r}")
            session = msgspec.json.decode(found[0], type=SessionRecord)
            updated = msgspec.structs.replace(session, checkpoint=checkpoint)
            conn.execute(
                "UPDATE host_sessions SET data = ? WHERE id = ?",
                (_encoder.encode(updated), session_id),
            )

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


class _Transaction:
    """``with store._write() as conn``: one ``BEGIN IMMEDIATE`` transaction under the lock."""

    def __init__(self, store: SessionStore) -> None:
        self._store = store

    def __enter__(self) -> sqlite3.Connection:
        self._store._lock.acquire()
        try:
            conn = self._store._open()
            conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._store._lock.release()
            raise
        return conn

    def __exit__(self, exc_type: object, *rest: object) -> None:
        try:
            conn = self._store._open()
            conn.execute("COMMIT" if exc_type is None else "ROLLBACK")
        finally:
            self._store._lock.release()
