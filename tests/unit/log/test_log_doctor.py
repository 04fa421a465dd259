"""`stuntset log doctor`: on a database written before events were checked on append (a row
planted with raw sqlite3, as that version stored it), it lists the rows that do not decode
and moves them aside so the rest of the session reads again."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from _log_helpers import deltas, seqs
from click.testing import CliRunner

from stuntset.cli import main
from stuntset.errors import LogFileError, LogInUse
from stuntset.log import SqliteEventLog
from stuntset.log.doctor import diagnose, move_aside
from stuntset.log.lock import DatabaseLock
from stuntset.log.sqlite import SCHEMA_VERSION

TS_AS_TEXT = b'{"item_id":"m","run_id":"r","seq":3,"text":"x","ts":"now","type":"message.delta"}'
BAD_KIND = b'{"kind":"network","message":"m","run_id":"r","seq":2,"ts":1.0,"type":"run.crashed"}'


def old_database(path: Path) -> Path:
    """s1: seqs 1, 2, then a bad row at 3, then 4; s2: 1, then a bad last row at 2."""
    with SqliteEventLog(path) as log:
        log.append("s1", deltas(2))
        log.append("s2", deltas(1))
    raw = sqlite3.connect(path)
    insert = "INSERT INTO events (session_id, seq, run_id, type, data) VALUES (?, ?, 'r', ?, ?)"
    raw.execute(insert, ("s1", 3, "message.delta", TS_AS_TEXT))
    raw.execute(
        insert,
        (
            "s1",
            4,
            "message.delta",
            b'{"item_id":"m","run_id":"r","seq":4,"text":"y","ts":1.0,"type":"message.delta"}',
        ),
    )
    raw.execute(insert, ("s2", 2, "run.crashed", BAD_KIND))
    raw.commit()
    raw.close()
    return path


def test_diagnose_lists_session_seq_and_why(tmp_path: Path) -> None:
    path = old_database(tmp_path / "old.db")
    rows = diagnose(path)
    assert [(r.session_id, r.seq) for r in rows] == [("s1", 3), ("s2", 2)]
    assert "`$.ts`" in rows[0].why
    assert "'network'" in rows[1].why
    with SqliteEventLog(path) as log, pytest.raises(LogFileError, match="seq 3 does not decode"):
        log.read("s1")


def test_move_aside_makes_the_sessions_read_again(tmp_path: Path) -> None:
    path = old_database(tmp_path / "old.db")
    moved = move_aside(path)
    assert [(r.session_id, r.seq) for r in moved] == [("s1", 3), ("s2", 2)]
    assert diagnose(path) == []
    with SqliteEventLog(path) as log:
        assert seqs(log.read("s1")) == [1, 2, 4]  # the moved seq is a gap; the rest keep theirs
        assert seqs(log.read("s2")) == [1]
        assert seqs(log.append("s1", deltas(1))) == [5]
    raw = sqlite3.connect(path)
    aside = raw.execute(
        "SELECT session_id, seq, data, why FROM events_aside ORDER BY pos"
    ).fetchall()
    raw.close()
    assert [(s, q, d) for s, q, d, _ in aside] == [("s1", 3, TS_AS_TEXT), ("s2", 2, BAD_KIND)]
    assert move_aside(path) == []  # twice is harmless


def test_move_aside_is_refused_while_a_daemon_holds_the_database(tmp_path: Path) -> None:
    path = old_database(tmp_path / "old.db")
    # the lock is per open file description: a second open in this process conflicts too
    with DatabaseLock(path, owner="daemon"), pytest.raises(LogInUse, match=r"in use by pid \d+"):
        move_aside(path)
    assert len(move_aside(path)) == 2


def test_the_command_lists_then_moves_aside(tmp_path: Path) -> None:
    path = old_database(tmp_path / "old.db")
    cli = CliRunner()
    listed = cli.invoke(main, ["log", "doctor", str(path)])
    assert listed.exit_code == 1, listed.output
    assert "2 row(s) that do not decode" in listed.output
    assert "s1" in listed.output
    assert "--move-aside" in listed.output
    moved = cli.invoke(main, ["log", "doctor", str(path), "--move-aside"])
    assert moved.exit_code == 0, moved.output
    assert "moved 2 row(s) to the table events_aside" in moved.output
    clean = cli.invoke(main, ["log", "doctor", str(path)])
    assert clean.exit_code == 0
    assert "every event decodes" in clean.output


def test_the_command_on_a_file_that_is_no_log_is_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_text("hello")
    result = CliRunner().invoke(main, ["log", "doctor", str(junk)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert str(junk) in result.stderr


def foreign_events_table(path: Path) -> Path:
    """A database with the log's schema version and an ``events`` table of other columns."""
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE events (pos INTEGER PRIMARY KEY, note TEXT)")
    raw.execute("INSERT INTO events (note) VALUES ('kept')")
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    raw.commit()
    raw.close()
    return path


def test_an_events_table_of_other_columns_is_one_error_naming_the_file(tmp_path: Path) -> None:
    path = foreign_events_table(tmp_path / "foreign.db")
    with pytest.raises(LogFileError, match=r"^log doctor: .*foreign\.db: .*no such column"):
        diagnose(path)
    with pytest.raises(LogFileError, match=r"^log doctor --move-aside: .*foreign\.db: "):
        move_aside(path)
    # rolled back and unlocked: the file is as it was, and the next attempt meets the same
    raw = sqlite3.connect(path)
    tables = [row[0] for row in raw.execute("SELECT name FROM sqlite_master")]
    rows = raw.execute("SELECT note FROM events").fetchall()
    raw.close()
    assert (tables, rows) == (["events"], [("kept",)])
    with pytest.raises(LogFileError, match="no such column"):
        move_aside(path)
    result = CliRunner().invoke(main, ["log", "doctor", str(path), "--move-aside"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert str(path) in result.stderr
