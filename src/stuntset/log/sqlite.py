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

A file this process may not write (or in a folder it may not write) is opened read-only:
it reads, and an append says so. A full disk, a read-only or corrupt file, and a row that
does not decode (stored by a stuntset from before events were checked on append) each raise
one ``LogFileError`` naming the file and the cause; ``stuntset log doctor`` lists and moves
aside rows that do not decode.

Subscriptions read at most ``batch_bytes`` of events at a time (at least one event), and an
idle one costs nothing: it waits for a wake-up from an append through this object, and one
watcher per log checks ``PRAGMA data_version`` every ``poll_interval`` (only while someone
waits) to wake them for commits made by other connections or processes.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal
from urllib.parse import quote

import msgspec

from stuntset.errors import LogFileError, UsageError
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

__all__ = ["BATCH_BYTES", "SCHEMA", "SCHEMA_VERSION", "SqliteEventLog", "Synchronous", "file_error"]

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
_READ = "SELECT seq, data FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?"
#: Every session id, one index seek per session (a skip-scan of ``UNIQUE (session_id, seq)``)
#: rather than a scan of every event; sessions whose events were all rolled back are in
#: ``rollbacks``.
_SESSIONS = """
WITH RECURSIVE ids(id) AS (
    SELECT min(session_id) FROM events
    UNION ALL
    SELECT (SELECT min(session_id) FROM events WHERE session_id > ids.id) FROM ids
    WHERE ids.id IS NOT NULL
)
SELECT id FROM ids WHERE id IS NOT NULL
UNION
SELECT DISTINCT session_id FROM rollbacks
ORDER BY 1
"""

#: How many bytes of events a subscription reads at a time (at least one event).
BATCH_BYTES = 4 * 1024 * 1024
_EPOCH = "SELECT max(epoch) FROM rollbacks WHERE session_id = ?"
_LOW = "SELECT min(to_seq) FROM rollbacks WHERE session_id = ? AND epoch > ?"

_events_decoder = msgspec.json.Decoder(list[Event])
_event_decoder = msgspec.json.Decoder(Event)

_CAUSES = {
    sqlite3.SQLITE_FULL: "the disk is full (free some space; nothing of the write was stored)",
    sqlite3.SQLITE_READONLY: "it is read-only here (it can be read; write to another file)",
    sqlite3.SQLITE_CORRUPT: "the file is corrupt (restore it from a copy, or start a new one)",
    sqlite3.SQLITE_NOTADB: "it is not an SQLite database (give the path of a log, or a new one)",
    sqlite3.SQLITE_CANTOPEN: "it cannot be opened (does its folder exist, is it a folder?)",
    sqlite3.SQLITE_IOERR: "an I/O error (is the disk failing or full?)",
    sqlite3.SQLITE_PERM: "permission denied",
    sqlite3.SQLITE_BUSY: "another connection holds it locked (longer than busy_timeout)",
    sqlite3.SQLITE_LOCKED: "another connection holds it locked",
}


def file_error(path: str, error: sqlite3.Error, *, where: str) -> LogFileError:
    """One line naming ``path`` and the cause of a ``sqlite3`` error."""
    code = getattr(error, "sqlite_errorcode", None)
    cause = _CAUSES.get(code & 0xFF if isinstance(code, int) else -1, "SQLite failed")
    return LogFileError(f"{where}: {path}: {cause} ({error})", path=path)


def _decode_rows(rows: list[tuple[int, bytes]], path: str, session_id: str) -> list[Event]:
    if not rows:
        return []
    try:
        return _events_decoder.decode(b"[" + b",".join([row[1] for row in rows]) + b"]")
    except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
        pass
    for seq, data in rows:
        try:
            _event_decoder.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as error:
            raise LogFileError(
                f"{path}: session {session_id!r} seq {seq} does not decode ({error}); it was "
                f"stored before events were checked on append: run `stuntset log doctor "
                f"{path} --move-aside` to set such rows aside",
                path=path,
            ) from None
    raise LogFileError(f"{path}: session {session_id!r}: rows do not decode", path=path)


def _readonly(path: str) -> bool:
    """Whether ``path`` is an existing file this process may not write (or not beside)."""
    folder = os.path.dirname(os.path.abspath(path))
    return os.path.isfile(path) and not (os.access(path, os.W_OK) and os.access(folder, os.W_OK))


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
        batch_bytes: int = BATCH_BYTES,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise UsageError(
                f"SqliteEventLog: synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}"
            )
        self._path = str(path)
        self._memory = self._path == ":memory:" or self._path.startswith("file::memory:")
        self.synchronous: Synchronous = synchronous
        self._poll_interval = poll_interval
        self._batch_bytes = max(1, batch_bytes)
        self._lock = threading.Lock()
        self._notifier = Notifier()
        self._watcher: threading.Thread | None = None
        self._stopped = threading.Event()
        if not self._memory and os.path.exists(self._path) and not os.path.isfile(self._path):
            kind = "a folder" if os.path.isdir(self._path) else "not a regular file"
            raise LogFileError(
                f"SqliteEventLog: {self._path}: it is {kind} (give the path of a log file)",
                path=self._path,
            )
        #: Opened read-only: the file (or its folder) is not writable by this process.
        self.readonly = not self._memory and _readonly(self._path)
        try:
            self._conn: sqlite3.Connection | None = self._connect(busy_timeout)
        except sqlite3.Error as error:
            raise file_error(self._path, error, where="SqliteEventLog") from error
        self._setup(self._conn)

    def _connect(self, busy_timeout: float) -> sqlite3.Connection:
        def connect(target: str, *, uri: bool = False) -> sqlite3.Connection:
            return sqlite3.connect(
                target,
                timeout=busy_timeout,
                isolation_level=None,
                check_same_thread=False,
                uri=uri,
            )

        if not self.readonly:
            return connect(self._path)
        uri = "file:" + quote(os.path.abspath(self._path))
        try:
            conn = connect(uri + "?mode=ro", uri=True)
            conn.execute("PRAGMA user_version").fetchone()
            return conn
        except sqlite3.OperationalError:  # WAL without a -shm, in a folder we may not write
            wal = Path(self._path + "-wal")
            if wal.exists() and wal.stat().st_size:
                raise
            # nothing waits in a WAL: the file alone is the whole log, read it as it is
            return connect(uri + "?immutable=1", uri=True)

    def _setup(self, conn: sqlite3.Connection) -> None:
        try:
            if self.readonly:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version != SCHEMA_VERSION:
                    raise UsageError(
                        f"SqliteEventLog: {self._path!r} (read-only) has schema version "
                        f"{version}, not a stuntset log of version {SCHEMA_VERSION}"
                    )
                return
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
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as error:
            conn.close()
            raise file_error(
                self._path, error, where="SqliteEventLog: not a usable stuntset log"
            ) from error
        except BaseException:
            conn.close()
            raise

    @contextlib.contextmanager
    def _errors(self, where: str) -> Iterator[None]:
        """Turn a ``sqlite3`` error into one ``LogFileError`` naming the file and the cause."""
        try:
            yield
        except sqlite3.Error as error:
            raise file_error(self._path, error, where=f"SqliteEventLog.{where}") from error

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
        with self._lock, self._errors("append"):
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
        with self._lock, self._errors("read"):
            conn = self._open("read")
            if epoch is None:
                rows = conn.execute(_READ, (session_id, after, -1 if limit is None else limit))
                return _decode_rows(rows.fetchall(), self._path, session_id)
            conn.execute("BEGIN")  # one snapshot for the cursor check and the rows
            try:
                self._check_resume(conn, session_id, after, epoch)
                rows = conn.execute(_READ, (session_id, after, -1 if limit is None else limit))
                found = rows.fetchall()
            finally:
                conn.execute("COMMIT")
        return _decode_rows(found, self._path, session_id)

    def head(self, session_id: str) -> int:
        with self._lock, self._errors("head"):
            conn = self._open("head")
            return int(conn.execute(_HEAD, (session_id,)).fetchone()[0] or 0)

    def epoch(self, session_id: str) -> int:
        with self._lock, self._errors("epoch"):
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
        with self._lock, self._errors("subscribe"):
            conn = self._open("subscribe")
            conn.execute("BEGIN")
            try:
                current = self._check_resume(conn, session_id, after, epoch)
            finally:
                conn.execute("COMMIT")
            if self._watcher is None and self._poll_interval is not None and not self._memory:
                self._start_watcher(conn)
        return LogSubscription(
            self, self._notifier, session_id, after=after, epoch=current if epoch is None else epoch
        )

    def _start_watcher(self, conn: sqlite3.Connection) -> None:
        """One thread per log wakes subscribers when another connection commits (under the
        lock: the first ``data_version`` is read before any subscription's first read)."""
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        self._watcher = threading.Thread(
            target=self._watch, args=(version,), name="stuntset-log-watcher", daemon=True
        )
        self._watcher.start()

    def _watch(self, last: int) -> None:
        assert self._poll_interval is not None
        while not self._stopped.wait(self._poll_interval):
            if not self._notifier.waiting():
                continue  # nobody to wake; ``last`` stays older than any later read
            with self._lock:
                conn = self._conn
                if conn is None:
                    return
                try:
                    version = conn.execute("PRAGMA data_version").fetchone()[0]
                except sqlite3.Error:
                    continue  # the next read reports it
            if version != last:
                last = version
                self._notifier.notify_all()

    def poll(self, session_id: str, after: int, epoch: int, limit: int) -> tuple[list[Event], int]:
        """For ``LogSubscription``: the events after ``after`` (see ``subscription.Source``),
        at most ``limit`` of them and about ``batch_bytes`` (at least one)."""
        with self._lock, self._errors("subscribe"):
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
                rows: list[tuple[int, bytes]] = []
                size = 0
                cursor = conn.execute(_READ, (session_id, after, limit))  # steps lazily
                for row in cursor:
                    rows.append(row)
                    size += len(row[1])
                    if size >= self._batch_bytes:
                        break
                cursor.close()
            finally:
                conn.execute("COMMIT")
        return _decode_rows(rows, self._path, session_id), current

    def rollback(self, session_id: str, to_seq: int) -> int:
        to_seq = check_cursor(to_seq, name="to_seq", where="SqliteEventLog.rollback")
        with self._lock, self._errors("rollback"):
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
        with self._lock, self._errors("sessions"):
            conn = self._open("sessions")
            rows = conn.execute(_SESSIONS).fetchall()
        return [row[0] for row in rows]

    def close(self) -> None:
        """Close the connection; live subscriptions end. Closing twice is harmless."""
        self._stopped.set()
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
        with self._lock, self._errors("release_file"):
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
