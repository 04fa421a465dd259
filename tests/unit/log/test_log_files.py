"""The SQLite log's file meets the world: a full disk, a read-only or corrupt file, a row
stored before events were checked — each one ``LogFileError`` naming the file and the cause;
a read-only log still reads; ``sessions()`` comes from an index."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from _log_helpers import deltas, seqs

from stuntset.errors import LogFileError
from stuntset.events import MessageDelta
from stuntset.log import SqliteEventLog
from stuntset.log.sqlite import _SESSIONS


@contextmanager
def read_only(*paths: Path) -> Iterator[None]:
    """Make ``paths`` unwritable for this process: mode bits for a user, the immutable flag
    for root (who writes through mode bits); skip where neither can be set up."""
    if os.geteuid() != 0:
        modes = {path: path.stat().st_mode for path in paths}
        for path in paths:
            path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    done = subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"root, and chattr +i is not available here: {done.stderr!r}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", *map(str, paths)], check=True)


def written(path: Path) -> Path:
    with SqliteEventLog(path) as log:
        log.append("s1", deltas(3))
        log.append("s2", deltas(1))
    return path


def test_a_read_only_log_reads_and_an_append_says_read_only(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    path = written(folder / "log.db")
    with read_only(path, folder), SqliteEventLog(path) as log:
        assert log.readonly
        assert seqs(log.read("s1")) == [1, 2, 3]
        assert log.sessions() == ["s1", "s2"]
        with pytest.raises(LogFileError, match=r"append: .*log.db: it is read-only here") as info:
            log.append("s1", deltas(1))
        assert info.value.path == str(path)
        assert "\n" not in str(info.value)


def test_a_corrupt_file_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = written(tmp_path / "log.db")
    data = bytearray(path.read_bytes())
    data[4096:8192] = b"\xff" * 4096  # a page of the events table
    path.write_bytes(bytes(data))

    def open_and_read() -> None:
        with SqliteEventLog(path) as log:
            log.read("s1")

    with pytest.raises(LogFileError) as info:
        open_and_read()
    assert str(path) in str(info.value)
    assert "corrupt" in str(info.value) or "not an SQLite database" in str(info.value)


def test_a_missing_folder_is_one_line_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(LogFileError, match="it cannot be opened"):
        SqliteEventLog(tmp_path / "nowhere" / "log.db")


FULL_DISK = """
import resource, signal, sys
from stuntset.errors import LogFileError
from stuntset.events import MessageDelta
from stuntset.events import MessageDelta
from stuntset.log import SqliteEventLog

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
log = SqliteEventLog(sys.argv[1])
log.append("s1", [MessageDelta(run_id="r", ts=1.0, item_id="m", text="x")])
resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, resource.RLIM_INFINITY))
try:
    log.append("s1", [MessageDelta(run_id="r", ts=1.0, item_id="m", text="x" * 10_000)] * 100)
except LogFileError as error:
    print(error)
print(log.head("s1"))
"""


def test_a_disk_that_fills_up_mid_append_is_one_line_and_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    error, head = done.stdout.splitlines()
    assert error.startswith(f"SqliteEventLog.append: {path}: ")
    assert "full" in error
    assert head == "1"
    assert "Traceback" not in done.stderr


def plant_bad_row(path: Path, session_id: str, seq: int, data: bytes) -> None:
    """What a stuntset from before the fix stored: a row its own decoder refuses."""
    raw = sqlite3.connect(path)
    raw.execute(
        "INSERT INTO events (session_id, seq, run_id, type, data) VALUES (?, ?, 'r', ?, ?)",
        (session_id, seq, "message.delta", data),
    )
    raw.commit()
    raw.close()


def test_a_row_that_does_not_decode_names_session_seq_and_the_doctor(tmp_path: Path) -> None:
    path = written(tmp_path / "log.db")
    plant_bad_row(
        path, "s1", 4, b'{"type":"message.delta","run_id":"r","ts":"now","item_id":"m","text":"x"}'
    )
    with SqliteEventLog(path) as log:
        with pytest.raises(LogFileError, match=r"session 's1' seq 4 does not decode") as info:
            log.read("s1")
        assert "stuntset log doctor" in str(info.value)
        assert seqs(log.read("s1", limit=3)) == [1, 2, 3]  # the rows before it still read


def test_sessions_come_from_an_index_not_a_scan_of_every_event(tmp_path: Path) -> None:
    path = written(tmp_path / "log.db")
    raw = sqlite3.connect(path)
    plan = [row[-1] for row in raw.execute("EXPLAIN QUERY PLAN " + _SESSIONS)]
    raw.close()
    assert not any(step.startswith("SCAN events") for step in plan), plan
    assert any("USING COVERING INDEX" in step for step in plan), plan
    with SqliteEventLog(path) as log:
        log.rollback("s2", 0)
        assert log.sessions() == ["s1", "s2"]  # s2 had events: it is still listed


def test_a_subscription_reads_at_most_batch_bytes_at_a_time(tmp_path: Path) -> None:
    """Large events are read a few at a time (at least one), never a thousand at once."""
    with SqliteEventLog(tmp_path / "log.db", batch_bytes=250_000) as log:
        big = [
            MessageDelta(run_id="r", ts=1.0, item_id="m", text=str(i) * 100_000) for i in range(7)
        ]
        log.append("s1", big)
        sizes = []
        after = 0
        while after < 7:
            events, _ = log.poll("s1", after, 0, 1000)
            sizes.append(len(events))
            after = events[-1].seq or 0
        assert sizes == [3, 3, 1]  # the read stops once it holds 250 kB
        huge = MessageDelta(run_id="r", ts=1.0, item_id="m", text="x" * 1_000_000)
        log.append("s1", [huge, huge])
        assert len(log.poll("s1", 7, 0, 1000)[0]) == 1  # one event over the bound: alone
