"""The host's store names its file and the cause when SQLite fails (one line, no sqlite3
error escaping)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from stuntset.errors import LogFileError
from stuntset.runtime import SessionStore, TaskRecord


def test_a_file_that_is_not_a_database_is_one_line_naming_it(tmp_path: Path) -> None:
    junk = tmp_path / "host.db"
    junk.write_bytes(b"not sqlite " * 500)
    with pytest.raises(LogFileError, match=r"SessionStore.init: .*host.db: it is not an SQLite"):
        SessionStore(junk)


def test_a_store_whose_file_went_bad_names_it_on_every_call(tmp_path: Path) -> None:
    path = tmp_path / "host.db"
    store = SessionStore(path)
    try:
        store.put(TaskRecord(task_id="t1", workdir="/w", created_at=1.0))
        # another connection drops the table under it (a file replaced or damaged)
        raw = sqlite3.connect(path)
        raw.execute("DROP TABLE host_tasks")
        raw.commit()
        raw.close()
        with pytest.raises(LogFileError, match=r"SessionStore.get: .*host.db: SQLite failed"):
            store.get(TaskRecord, "t1")
        with pytest.raises(LogFileError, match=r"SessionStore.put: .*host.db"):
            store.put(TaskRecord(task_id="t2", workdir="/w", created_at=1.0))
    finally:
        store.close()
