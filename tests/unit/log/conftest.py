"""Fixtures for the session-log tests: every behaviour test runs on each store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _log_helpers import MakeLog

from stuntset.log import EventLog, MemoryEventLog, SqliteEventLog


@pytest.fixture(params=["sqlite-file", "sqlite-memory", "memory"])
def make_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MakeLog]:
    """A factory of fresh, empty logs of one kind; every log is closed at teardown."""
    made: list[EventLog] = []
    counter = iter(range(1_000_000))

    def make() -> EventLog:
        log: EventLog
        if request.param == "sqlite-file":
            log = SqliteEventLog(tmp_path / f"log-{next(counter)}.db")
        elif request.param == "sqlite-memory":
            log = SqliteEventLog(":memory:")
        else:
            log = MemoryEventLog()
        made.append(log)
        return log

    yield make
    for log in made:
        log.close()


@pytest.fixture
def log(make_log: MakeLog) -> EventLog:
    """One fresh, empty log (of each kind)."""
    return make_log()
