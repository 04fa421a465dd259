"""What only the SQLite store does: WAL files, durability modes, several writers on one file,
surviving ``kill -9``, raw file access after ``release_file``, bad files."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest
from _log_helpers import deltas, seqs, texts

from stuntset.errors import StaleCursor, UsageError
from stuntset.events import MessageDelta, ToolStarted
from stuntset.log import SqliteEventLog

WRITER = """
import os
import sys
from stuntset.events import MessageDelta
from stuntset.log import SqliteEventLog

path, synchronous, name, batches, size = sys.argv[1:6]
log = SqliteEventLog(path, synchronous=synchronous)
print("ready", flush=True)
sys.stdin.readline()  # start together
n = 0
while n < int(batches) or int(batches) < 0:
    stored = log.append(
        "s1",
        [MessageDelta(run_id="run-1", ts=1.0, item_id=f"{name}-{n}", text=str(i))
         for i in range(int(size))],
    )
    # one write(2) per ack: a pipe write that small is atomic, so a kill -9 never leaves a
    # half line (print() writes its arguments one by one under PYTHONUNBUFFERED=1)
    os.write(1, f"{n} {stored[-1].seq}\\n".encode())
    n += 1
log.close()
"""


def start_writer(
    path: Path, name: str, *, batches: int, size: int, sync: str = "NORMAL"
) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), sync, name, str(batches), str(size)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line == "ready\n", f"writer {name} did not start: {line!r} {process.stderr}"
    return process


def check_batches(events: list[MessageDelta], size: int) -> list[str]:
    """Every batch is whole and contiguous; returns the batch names in stored order."""
    assert seqs(events) == list(range(1, len(events) + 1)), "seq is not gapless"  # type: ignore[arg-type]
    assert len(events) % size == 0, f"a torn batch: {len(events)} events, batches of {size}"
    names = []
    for start in range(0, len(events), size):
        batch = events[start : start + size]
        assert {e.item_id for e in batch} == {batch[0].item_id}, f"interleaved batch at {start}"
        assert texts(batch) == [str(i) for i in range(size)]  # type: ignore[arg-type]
        names.append(batch[0].item_id)
    return names


def stored_deltas(path: Path) -> list[MessageDelta]:
    with SqliteEventLog(path) as log:
        events = log.read("s1")
    assert all(isinstance(e, MessageDelta) for e in events)
    return events  # type: ignore[return-value]


def test_the_file_is_in_wal_mode_with_normal_sync_by_default(tmp_path: Path) -> None:
    with SqliteEventLog(tmp_path / "log.db") as log:
        log.append("s1", deltas(1))
        assert log.synchronous == "NORMAL"
        assert (tmp_path / "log.db-wal").exists()


def test_full_sync_is_an_option_and_anything_else_is_refused(tmp_path: Path) -> None:
    with SqliteEventLog(tmp_path / "log.db", synchronous="FULL") as log:
        assert seqs(log.append("s1", deltas(2))) == [1, 2]
    with pytest.raises(UsageError, match="synchronous must be 'NORMAL' or 'FULL', got 'OFF'"):
        SqliteEventLog(tmp_path / "other.db", synchronous="OFF")  # type: ignore[arg-type]


def test_events_survive_reopening(tmp_path: Path) -> None:
    with SqliteEventLog(tmp_path / "log.db") as log:
        log.append("s1", deltas(3))
        log.rollback("s1", 1)
    with SqliteEventLog(tmp_path / "log.db") as log:
        assert seqs(log.read("s1")) == [1]
        assert seqs(log.append("s1", deltas(1))) == [2]


def test_a_batch_that_cannot_be_stored_stores_nothing(tmp_path: Path) -> None:
    with SqliteEventLog(tmp_path / "log.db") as log:
        log.append("s1", deltas(1))
        bad = ToolStarted(run_id="run-1", ts=1.0, tool_call_id="t", name="x", input={"x": object()})
        with pytest.raises(
            UsageError, match=r"events\[2\] \(tool.started\) field 'input': cannot be stored"
        ):
            log.append("s1", [*deltas(2), bad])
        assert log.head("s1") == 1
        assert seqs(log.append("s1", deltas(1))) == [2]


def test_several_log_objects_on_one_file_share_one_gapless_seq(tmp_path: Path) -> None:
    logs = [SqliteEventLog(tmp_path / "log.db") for _ in range(3)]
    barrier = threading.Barrier(len(logs))

    def writer(n: int) -> None:
        barrier.wait()
        for b in range(20):
            logs[n].append(
                "s1",
                [
                    MessageDelta(run_id="r", ts=1.0, item_id=f"{n}-{b}", text=str(i))
                    for i in range(3)
                ],
            )

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(len(logs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for log in logs:
        log.close()
    names = check_batches(stored_deltas(tmp_path / "log.db"), 3)
    assert len(names) == 60


def test_writer_processes_on_one_file_share_one_gapless_seq(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    SqliteEventLog(path).close()  # create the schema once
    writers = [start_writer(path, f"p{n}", batches=15, size=4) for n in range(3)]
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    for writer in writers:
        _out, err = writer.communicate(timeout=30)
        assert writer.returncode == 0, err
    names = check_batches(stored_deltas(path), 4)
    assert sorted(names) == sorted(f"p{n}-{b}" for n in range(3) for b in range(15))


@pytest.mark.parametrize("sync", ["NORMAL", "FULL"])
def test_every_acknowledged_append_survives_kill_9_and_no_batch_is_torn(
    tmp_path: Path, sync: str
) -> None:
    path = tmp_path / "log.db"
    writer = start_writer(path, "w", batches=-1, size=5, sync=sync)
    assert writer.stdin is not None
    assert writer.stdout is not None
    writer.stdin.write("go\n")
    writer.stdin.flush()
    acked = [writer.stdout.readline() for _ in range(30)]  # the 30th ack is in: kill it
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=10)
    acked += writer.stdout.readlines()  # acks printed before the kill landed
    writer.stdout.close()
    writer.stdin.close()
    assert writer.stderr is not None
    errors = writer.stderr.read()
    writer.stderr.close()
    assert all(len(line.split()) == 2 for line in acked), f"acks: {acked!r}, stderr: {errors}"
    last_acked_seq = max(int(line.split()[1]) for line in acked)

    events = stored_deltas(path)
    names = check_batches(events, 5)
    assert len(events) >= last_acked_seq, f"acked up to seq {last_acked_seq}, stored {len(events)}"
    assert names == [f"w-{n}" for n in range(len(names))]


def test_release_file_checkpoints_so_the_file_can_be_copied_hashed_and_opened(
    tmp_path: Path,
) -> None:
    log = SqliteEventLog(tmp_path / "log.db")
    log.append("s1", deltas(50))
    path = log.release_file()

    assert log.closed
    assert not (tmp_path / "log.db-wal").exists()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert raw.execute("SELECT count(*) FROM events").fetchone() == (50,)
    finally:
        raw.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    with SqliteEventLog(path) as again:
        assert again.head("s1") == 50


def test_release_file_refuses_while_another_log_has_the_file_open(tmp_path: Path) -> None:
    log = SqliteEventLog(tmp_path / "log.db")
    other = SqliteEventLog(tmp_path / "log.db")
    other.append("s1", deltas(1))
    with pytest.raises(UsageError, match="still open elsewhere"):
        log.release_file()
    other.close()
    assert log.release_file() == tmp_path / "log.db"
    with pytest.raises(UsageError, match="in-memory log has no file"):
        SqliteEventLog(":memory:").release_file()


def test_a_file_that_is_not_a_log_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(
        UsageError, match=r"not a usable stuntset log: .*junk.db: it is not an SQLite database"
    ):
        SqliteEventLog(junk)

    future = tmp_path / "future.db"
    raw = sqlite3.connect(future)
    raw.execute("PRAGMA user_version=99")
    raw.close()
    with pytest.raises(UsageError, match="schema version 99; this stuntset reads version 1"):
        SqliteEventLog(future)


@pytest.mark.anyio
async def test_a_subscriber_sees_appends_made_through_another_log_object(
    tmp_path: Path,
) -> None:
    reader = SqliteEventLog(tmp_path / "log.db", poll_interval=0.01)
    writer = SqliteEventLog(tmp_path / "log.db")
    try:
        subscription = reader.subscribe("s1")
        writer.append("s1", deltas(2))  # no in-process wake-up reaches the reader
        with anyio.fail_after(5):
            got = [await subscription.__anext__(), await subscription.__anext__()]
        assert seqs(got) == [1, 2]
        await subscription.aclose()
    finally:
        reader.close()
        writer.close()


def test_the_epoch_survives_reopening_and_is_shared_by_log_objects_on_one_file(
    tmp_path: Path,
) -> None:
    with SqliteEventLog(tmp_path / "log.db") as first, SqliteEventLog(tmp_path / "log.db") as other:
        first.append("s1", deltas(5))
        other.rollback("s1", 2)  # e.g. the test's out-of-band log beside a daemon's
        first.append("s1", deltas(3, tag="new"))
        assert (first.epoch("s1"), other.epoch("s1")) == (1, 1)
        with pytest.raises(StaleCursor) as info:
            first.read("s1", after=5, epoch=0)
        assert info.value.resume_at == 2
    with SqliteEventLog(tmp_path / "log.db") as reopened:
        assert reopened.epoch("s1") == 1
        assert texts(reopened.read("s1", after=2, epoch=0)) == ["new0 ", "new1 ", "new2 "]
