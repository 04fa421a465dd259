"""The ``event_log`` fixture of the pytest plugin."""

from __future__ import annotations

from pathlib import Path

from _log_helpers import a_turn, seqs

from stuntset.log import SqliteEventLog, project


def test_event_log_is_a_fresh_sqlite_log_under_tmp_path(
    event_log: SqliteEventLog, tmp_path: Path
) -> None:
    assert isinstance(event_log, SqliteEventLog)
    assert event_log.path == str(tmp_path / "stuntset-events.db")
    assert event_log.sessions() == []

    stored = event_log.append("session-1", a_turn(text="hello"))

    assert seqs(stored) == [1, 2, 3, 4, 5]
    assert project(event_log.read("session-1")).messages[0].text == "hello"
