"""One owner per database: the lock file holds the owner's pid, a second owner (another
process) is refused naming it, and the lock goes with its owner, however it ends."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from stuntset.errors import LogFileError, LogInUse
from stuntset.log.lock import DatabaseLock

HOLD = """
import sys
from stuntset.log.lock import DatabaseLock
lock = DatabaseLock(sys.argv[1], owner="holder")
lock.acquire()
print("held", flush=True)
sys.stdin.readline()  # until the test closes our stdin (or kills us)
"""


def test_a_second_process_is_refused_naming_the_holders_pid(tmp_path: Path) -> None:
    db = tmp_path / "host.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        assert (tmp_path / "host.db.lock").read_text() == f"{holder.pid} holder\n"
        with pytest.raises(LogInUse) as info:
            DatabaseLock(db).acquire()
        assert info.value.pid == holder.pid
        assert f"{db} is in use by pid {holder.pid}" in str(info.value)
        holder.kill()  # the kernel drops the lock with its owner, even on SIGKILL
        holder.wait()
        with DatabaseLock(db) as lock:
            assert lock.held
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        holder.stdin.close()  # type: ignore[union-attr]
        holder.stdout.close()  # type: ignore[union-attr]


def test_release_empties_the_file_and_a_symlinked_lock_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "host.db"
    with DatabaseLock(db, owner="me"):
        pass
    assert (tmp_path / "host.db.lock").read_text() == ""  # kept: deleting it races
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "other.db.lock").symlink_to(victim)
    with pytest.raises(LogFileError, match="cannot take its lock"):
        DatabaseLock(tmp_path / "other.db").acquire()
    assert victim.read_text() == "precious"


def test_a_symlink_to_the_database_takes_the_same_lock(tmp_path: Path) -> None:
    db = tmp_path / "real" / "host.db"
    db.parent.mkdir()
    db.write_bytes(b"")
    alias = tmp_path / "alias.db"
    alias.symlink_to(db)
    folder_alias = tmp_path / "folder"
    folder_alias.symlink_to(db.parent)
    with DatabaseLock(db):
        for other in (alias, folder_alias / "host.db"):
            with pytest.raises(LogInUse):
                DatabaseLock(other).acquire()
    with DatabaseLock(alias) as lock:  # and the other way round
        assert lock.path == db.parent / "host.db.lock"
        with pytest.raises(LogInUse):
            DatabaseLock(db).acquire()


def test_a_database_file_with_two_hard_links_is_refused_by_either_name(tmp_path: Path) -> None:
    db = tmp_path / "host.db"
    db.write_bytes(b"")
    link = tmp_path / "elsewhere.db"
    os.link(db, link)
    for name in (db, link):
        with pytest.raises(LogFileError, match="2 hard links") as info:
            DatabaseLock(name).acquire()
        assert str(name) in str(info.value)
    link.unlink()
    with DatabaseLock(db) as lock:
        assert lock.held
