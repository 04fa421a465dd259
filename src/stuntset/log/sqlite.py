"""``SqliteEventLog``: the embedded, durable ``EventLog`` on the standard library's sqlite3.

One database file (or ``":memory:"``), WAL journal, one table of events keyed by
``(session_id, seq)``. Every append and every rollback is one ``BEGIN IMMEDIATE``
transaction: it takes SQLite's single write lock up front, reads the session's head and
inserts the batch at ``head + 1…`` — so ``seq`` is assigned by the store, gapless and
strictly increasing, with any number of writers (threads, tasks, processes, other
``SqliteEventLog`` objects on the same file), and a batch is stored whole or not at all.
(A deferred ``BEGIN`` that reads then writes fails with ``SQLITE_BUSY`` under concurrent
writers regardless of the busy timeout.)

Durability, by ``synchronous=``:

``"NORMAL"`` (default)
    Survives the process being killed (``kill -9``) at any point: every append that
    returned is in the file, nothing torn. Power loss or an OS crash never corrupts the
    file but may undo the last commits (the WAL is synced only at checkpoints) — which is
    what ``rollback`` lets a test simulate.
``"FULL"``
    Also survives power loss and OS crashes: one WAL sync per commit (measured about 10
    times slower per small append on an ordinary disk).

Never copy, hash or open the file while the log is open: call ``release_file()``, which
checkpoints the WAL into the file and closes it, then use the path it returns.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import msgspec

from stuntset.errors import UsageError
from stuntset.events import Event, type_of
from stuntset.log.base import (
    check_append_args,
    check_cursor,
    check_epoch,
    stale_cursor,
    stale_resume,
)
from stuntset.log.subscription import LogSubscription, Notifier
from stuntset.log.validate import checked_batch

__all__ = ["SCHEMA", "SCHEMA_VERSION", "SqliteEventLog", "Synchronous"]

Synchronous = Literal["NORMAL", "FULL"]

SCHEMA_VERSION = 1

#: The tables (also what a raw ``executemany`` baseline writes into, for the bench).
SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    pos        INTEGER PRIMARY KEY,   -- global, commit-ordered (one writer at a time)
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,      -- 1, 2, 3… per session, assigned here
    run_id     TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    data       BLOB    NOT NULL,      -- the event as stuntset.events.encode() JSON, with seq
    UNIQUE (session_id, seq)
);
CREATE TABLE IF NOT EXISTS rollbacks (
    session_id TEXT    NOT NULL,
    epoch      INTEGER NOT NULL,      -- 1, 2, 3… per session: which rollback this is
    to_seq     INTEGER NOT NULL,
    PRIMARY KEY (session_id, epoch)
) WITHOUT ROWID;
"""

_HEAD = "SELECT max(seq) FROM events WHERE session_id = ?"
_INSERT = "INSERT INTO events (session_id, seq, run_id, type, data) VALUES (?, ?, ?, ?, ?)"
_READ = "SELECT data FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?"
_EPOCH = "SELECT max(epoch) FROM rollbacks WHERE session_id = ?"
_LOW = "SELECT min(to_seq) FROM rollbacks WHERE session_id = ? AND epoch > ?"

_events_decoder = msgspec.json.Decoder(list[Event])


def _decode_rows(rows: list[tuple[bytes]]) -> list[Event]:
    if not rows:
        return []
    return _events_decoder.decode(b"[" + b",".join([row[0] for row in rows]) + b"]")


class SqliteEventLog:
    """The ``EventLog`` in one SQLite file (WAL), or in memory with ``":memory:"``.

    ``synchronous`` picks what a commit survives (see the module doc). ``busy_timeout`` is
    how long an append waits for another writer's lock (seconds). ``poll_interval``: a
    subscriber also re-reads that often without a wake-up, so it sees appends made by
    other processes or other ``SqliteEventLog`` objects on the same file (``None``: only
    in-process wake-ups). Thread-safe: one connection, guarded by a lock.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Synchronous = "NORMAL",
        busy_timeout: float = 10.0,
        poll_interval: float | None = 0.1,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise UsageError(
                f"SqliteEventLog: synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}"
            )
        self._path = str(path)
        self._memory = self._path == ":memory:" or self._path.startswith("file::memory:")
        self.synchronous: Synchronous = synchronous
        self._poll_interval = poll_interval
        self._lock = threading.Lock()
        self._notifier = Notifier()
        try:
            self._conn: sqlite3.Connection | None = sqlite3.connect(
                self._path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise UsageError(f"SqliteEventLog: cannot open {self._path!r}: {error}") from error
        self._setup(self._conn)

    def _setup(self, conn: sqlite3.Connection) -> None:
        try:
            if not self._memory:
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute("BEGIN IMMEDIATE")
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version == 0:
                    for statement in SCHEMA.split(";"):  # not executescript: it commits
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                elif version != SCHEMA_VERSION:
                    raise UsageError(
                        f"SqliteEventLog: {self._path!r} has schema version {version}; "
                        f"this stuntset reads version {SCHEMA_VERSION} (use a new file)"
                    )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as error:
            conn.close()
            raise UsageError(
                f"SqliteEventLog: {self._path!r} is not a usable stuntset log: {error}"
            ) from error
        except BaseException:
            conn.close()
            raise

    @property
    def path(self) -> str:
        """The database path as given (``":memory:"`` for an in-memory log)."""
        return self._path

    @property
    def closed(self) -> bool:
        return self._conn is None

    def _open(self, where: str) -> sqlite3.Connection:
        if self._conn is None:
            raise UsageError(f"SqliteEventLog.{where}: the log is closed ({self._path!r})")
        return self._conn

    def append(self, session_id: str, events: Sequence[Event]) -> list[Event]:
        check_append_args(session_id, events, where="SqliteEventLog.append")
        if not events:
            return []
        with self._lock:
            conn = self._open("append")
            conn.execute("BEGIN IMMEDIATE")
            try:
                head = conn.execute(_HEAD, (session_id,)).fetchone()[0] or 0
                stored, encoded = checked_batch(
                    events, where="SqliteEventLog.append", first_seq=head + 1
                )
                rows = [
                    (session_id, event.seq, event.run_id, type_of(event), data)
                    for event, data in zip(stored, encoded, strict=True)
                ]
                conn.executemany(_INSERT, rows)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        self._notifier.notify(session_id)
        return stored

    def read(
        self,
        session_id: str,
        after: int = 0,
        limit: int | None = None,
        *,
        epoch: int | None = None,
    ) -> list[Event]:
        after = check_cursor(after, name="after", where="SqliteEventLog.read")
        epoch = check_epoch(epoch, where="SqliteEventLog.read")
        with self._lock:
            conn = self._open("read")
            if epoch is None:
                rows = conn.execute(_READ, (session_id, after, -1 if limit is None else limit))
                return _decode_rows(rows.fetchall())
            conn.execute("BEGIN")  # one snapshot for the cursor check and the rows
            try:
                self._check_resume(conn, session_id, after, epoch)
                rows = conn.execute(_READ, (session_id, after, -1 if limit is None else limit))
                found = rows.fetchall()
            finally:
                conn.execute("COMMIT")
        return _decode_rows(found)

    def head(self, session_id: str) -> int:
        with self._lock:
            conn = self._open("head")
            return int(conn.execute(_HEAD, (session_id,)).fetchone()[0] or 0)

    def epoch(self, session_id: str) -> int:
        with self._lock:
            conn = self._open("epoch")
            return int(conn.execute(_EPOCH, (session_id,)).fetchone()[0] or 0)

    @staticmethod
    def _check_resume(
        conn: sqlite3.Connection, session_id: str, after: int, epoch: int | None
    ) -> int:
        """Raise ``StaleCursor`` if ``(epoch, after)`` no longer names a position (see base);
        return the session's epoch. Call inside a transaction (one snapshot)."""
        head = conn.execute(_HEAD, (session_id,)).fetchone()[0] or 0
        current = conn.execute(_EPOCH, (session_id,)).fetchone()[0] or 0
        low = None
        if epoch is not None and epoch < current:
            low = conn.execute(_LOW, (session_id, epoch)).fetchone()[0]
        stale = stale_resume(session_id, after, epoch, current=current, low=low, head=head)
        if stale is not None:
            raise stale
        return int(current)

    def subscribe(
        self, session_id: str, after: int = 0, *, epoch: int | None = None
    ) -> LogSubscription:
        after = check_cursor(after, name="after", where="SqliteEventLog.subscribe")
        epoch = check_epoch(epoch, where="SqliteEventLog.subscribe")
        with self._lock:
            conn = self._open("subscribe")
            conn.execute("BEGIN")
            try:
                current = self._check_resume(conn, session_id, after, epoch)
            finally:
                conn.execute("COMMIT")
        return LogSubscription(
            self,
            self._notifier,
            session_id,
            after=after,
            epoch=current if epoch is None else epoch,
            poll_interval=self._poll_interval,
        )

    def poll(self, session_id: str, after: int, epoch: int, limit: int) -> tuple[list[Event], int]:
        """For ``LogSubscription``: the events after ``after`` (see ``subscription.Source``)."""
        with self._lock:
            conn = self._conn
            if conn is None:
                return [], epoch
            conn.execute("BEGIN")  # one snapshot for the epoch check and the rows
            try:
                current = conn.execute(_EPOCH, (session_id,)).fetchone()[0] or 0
                if current != epoch:
                    low = conn.execute(_LOW, (session_id, epoch)).fetchone()[0]
                    if low is not None and low < after:
                        raise stale_cursor(session_id, after, low, rolled_back=True)
                rows = conn.execute(_READ, (session_id, after, limit)).fetchall()
            finally:
                conn.execute("COMMIT")
        return _decode_rows(rows), current

    def rollback(self, session_id: str, to_seq: int) -> int:
        to_seq = check_cursor(to_seq, name="to_seq", where="SqliteEventLog.rollback")
        with self._lock:
            conn = self._open("rollback")
            conn.execute("BEGIN IMMEDIATE")
            try:
                head = conn.execute(_HEAD, (session_id,)).fetchone()[0] or 0
                if to_seq > head:
                    raise UsageError(
                        f"SqliteEventLog.rollback: session {session_id!r} has head {head}; "
                        f"cannot roll back forward to {to_seq}"
                    )
                dropped = head - to_seq
                if dropped:
                    conn.execute(
                        "DELETE FROM events WHERE session_id = ? AND seq > ?", (session_id, to_seq)
                    )
                    epoch = (conn.execute(_EPOCH, (session_id,)).fetchone()[0] or 0) + 1
                    conn.execute(
                        "INSERT INTO rollbacks (session_id, epoch, to_seq) VALUES (?, ?, ?)",
                        (session_id, epoch, to_seq),
                    )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        if dropped:
            self._notifier.rolled_back(session_id)
        return dropped

    def sessions(self) -> list[str]:
        with self._lock:
            conn = self._open("sessions")
            rows = conn.execute(
                "SELECT session_id FROM events UNION SELECT session_id FROM rollbacks ORDER BY 1"
            ).fetchall()
        return [row[0] for row in rows]

    def close(self) -> None:
        """Close the connection; live subscriptions end. Closing twice is harmless."""
        with self._lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()
        self._notifier.notify_all()

    def release_file(self) -> Path:
        """Checkpoint the WAL into the database file, close, and return the file's path.

        Afterwards the file is self-contained (no ``-wal``/``-shm`` beside it): safe to copy,
        hash or open with another connection. Fails if another connection still has it open.
        """
        if self._memory:
            raise UsageError("SqliteEventLog.release_file: an in-memory log has no file")
        with self._lock:
            conn = self._open("release_file")
            try:
                busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                mode = conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
            except sqlite3.OperationalError:  # "database is locked"
                busy, mode = 1, "wal"
            if busy or str(mode).lower() != "delete":
                raise UsageError(
                    f"SqliteEventLog.release_file: {self._path!r} is still open elsewhere "
                    "(another SqliteEventLog or process); close those first"
                )
        self.close()
        return Path(self._path)

    def __enter__(self) -> SqliteEventLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else self.synchronous
        return f"<SqliteEventLog {self._path!r} {state}>"
