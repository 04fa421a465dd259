"""``stuntset log doctor``: find the rows of a log that do not decode, and set them aside.

A stuntset from before events were checked on append stored whatever it was given: a ``ts``
as a string, a ``kind`` outside its literal. Such a row makes every read of its session fail
(``LogFileError`` naming its session and seq). ``diagnose`` lists them; ``move_aside`` moves
them, in one transaction, into the table ``events_aside`` (same columns, plus why), so the
rest of the session reads again. Every other row keeps its seq, so cursors held by clients
stay valid; a moved seq is a gap (a moved last row lowers the head: the next append takes
its seq — no client ever received that row). ``move_aside`` takes the database's lock
(``stuntset.log.lock``): it refuses while a daemon serves that file.
"""

from __future__ import annotations

import os
import sqlite3
from urllib.parse import quote

import msgspec

from stuntset.errors import LogFileError
from stuntset.events import Event
from stuntset.log.lock import DatabaseLock
from stuntset.log.sqlite import SCHEMA_VERSION, file_error

__all__ = ["BadRow", "diagnose", "move_aside"]

_one = msgspec.json.Decoder(Event)
_many = msgspec.json.Decoder(list[Event])
_CHUNK = 1000

_ASIDE = """
CREATE TABLE IF NOT EXISTS events_aside (
    pos        INTEGER PRIMARY KEY,
    session_id TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    run_id     TEXT    NOT NULL,
    type       TEXT    NOT NULL,
    data       BLOB    NOT NULL,
    why        TEXT    NOT NULL
)
"""


class BadRow(msgspec.Struct, frozen=True):
    """A stored event that does not decode: where it is and why."""

    pos: int
    session_id: str
    seq: int
    why: str


def _connect(path: str, *, write: bool) -> sqlite3.Connection:
    if not os.path.isfile(path):
        what = "a folder" if os.path.isdir(path) else "not a regular file"
        if not os.path.exists(path):
            what = "no such file"
        raise LogFileError(
            f"log doctor: {path}: {what} (give the path of a stuntset log)", path=path
        )
    try:
        if write:
            conn = sqlite3.connect(path, isolation_level=None)
        else:
            uri = "file:" + quote(os.path.abspath(path)) + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    except sqlite3.Error as error:
        raise file_error(path, error, where="log doctor") from error
    if version != SCHEMA_VERSION or "events" not in tables:
        conn.close()
        raise LogFileError(
            f"log doctor: {path}: not a stuntset log (schema version {version}, "
            f"expected {SCHEMA_VERSION} with an events table)",
            path=path,
        )
    return conn


def _scan(conn: sqlite3.Connection) -> list[BadRow]:
    bad: list[BadRow] = []
    cursor = conn.execute("SELECT pos, session_id, seq, data FROM events ORDER BY pos")
    while rows := cursor.fetchmany(_CHUNK):
        try:
            _many.decode(b"[" + b",".join(bytes(row[3]) for row in rows) + b"]")
            continue
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError):
            pass
        for pos, session_id, seq, data in rows:
            try:
                _one.decode(bytes(data))
            except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as error:
                bad.append(BadRow(pos=pos, session_id=session_id, seq=seq, why=str(error)))
    bad.sort(key=lambda row: (row.session_id, row.seq))
    return bad


def diagnose(path: str | os.PathLike[str]) -> list[BadRow]:
    """The rows of the log at ``path`` that do not decode, by session and seq (read-only)."""
    conn = _connect(os.fspath(path), write=False)
    try:
        return _scan(conn)
    except sqlite3.Error as error:
        raise file_error(os.fspath(path), error, where="log doctor") from error
    finally:
        conn.close()


def move_aside(path: str | os.PathLike[str]) -> list[BadRow]:
    """Move the rows that do not decode into ``events_aside``; return them."""
    where = os.fspath(path)
    with DatabaseLock(where, owner="stuntset log doctor"):
        conn = _connect(where, write=True)
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                bad = _scan(conn)
                if bad:
                    conn.execute(_ASIDE)
                    for row in bad:
                        conn.execute(
                            "INSERT INTO events_aside SELECT pos, session_id, seq, run_id, "
                            "type, data, ? FROM events WHERE pos = ?",
                            (row.why, row.pos),
                        )
                        conn.execute("DELETE FROM events WHERE pos = ?", (row.pos,))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as error:
            raise file_error(where, error, where="log doctor --move-aside") from error
        finally:
            conn.close()
    return bad
