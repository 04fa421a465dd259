from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from stuntset import drive, scenarios
from stuntset.cassettes.snapshot import EventSnapshot, SnapshotMismatch, check_events_snapshot
from stuntset.errors import UsageError
from stuntset.events import Event
from stuntset.log import SqliteEventLog
from stuntset.providers import ScriptedProvider
from stuntset.seams import deterministic


def play(name: str, **params: object) -> list[Event]:
    async def main() -> list[Event]:
        return await drive(ScriptedProvider(scenarios.build(name, **params)).start("go"))

    with deterministic():
        return anyio.run(main)


def test_update_then_match(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    path = tmp_path / "snapshots" / "tool_use.jsonl"
    check_events_snapshot(play("tool_use"), path, update=True)
    check_events_snapshot(play("tool_use"), path)


def test_a_difference_is_shown_per_event(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    path = tmp_path / "s.jsonl"
    check_events_snapshot(play("happy_path"), path, update=True)
    with pytest.raises(SnapshotMismatch) as info:
        check_events_snapshot(play("happy_path", text="Hello! How may I help you today?"), path)
    message = str(info.value)
    assert "event(s) differ from the snapshot (11 expected, 11 got)" in message
    assert (
        'event #3:\n    expected {"type":"message.delta","run_id":"run-1","ts":1767225600.0,"item_id":"msg-1","text":" can"}'
        in message
    )
    assert (
        'got      {"type":"message.delta","run_id":"run-1","ts":1767225600.0,"item_id":"msg-1","text":" may"}'
        in message
    )
    assert "--stuntset-mode=refresh" in message
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:7]))
    with pytest.raises(SnapshotMismatch, match=r"7 expected, 11 got"):
        check_events_snapshot(play("happy_path"), path)


def test_missing_snapshot_and_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SnapshotMismatch, match="no snapshot at"):
        check_events_snapshot([], tmp_path / "none.jsonl")
    monkeypatch.setenv("CI", "1")
    with pytest.raises(UsageError, match="never written in CI"):
        check_events_snapshot([], tmp_path / "none.jsonl", update=True)
    assert not (tmp_path / "none.jsonl").exists()


def test_the_fixture_refreshes_only_when_asked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("STUNTSET_MODE", raising=False)
    pytester.makepyfile(
        test_z="""
import anyio
from stuntset import drive, scenarios
from stuntset.providers import ScriptedProvider

def test_turn(event_snapshot, event_log):
    async def main():
        return await drive(ScriptedProvider(scenarios.build("tool_use")).start("go"))
    events = anyio.run(main)
    event_snapshot(events)
    event_log.append("s-1", events)
    event_snapshot.log(event_log, "s-1")
"""
    )
    quiet = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
    pytester.runpytest(*quiet).assert_outcomes(failed=1)
    pytester.runpytest(*quiet, "--stuntset-mode=refresh").assert_outcomes(passed=1)
    assert (pytester.path / "snapshots" / "test_z" / "test_turn.jsonl").exists()
    assert (pytester.path / "snapshots" / "test_z" / "test_turn.log-s-1.jsonl").exists()
    pytester.runpytest(*quiet).assert_outcomes(passed=1)


def test_the_persisted_log_is_snapshotted_with_its_seqs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI", raising=False)
    log = SqliteEventLog(tmp_path / "log.db")
    try:
        log.append("s-1", play("tool_use"))
        EventSnapshot(tmp_path / "snaps" / "test_it", update=True).log(log, "s-1")
        stored = tmp_path / "snaps" / "test_it.log-s-1.jsonl"
        assert b'"seq":1' in stored.read_bytes().splitlines()[0]
        snapshot = EventSnapshot(tmp_path / "snaps" / "test_it")
        snapshot.log(log, "s-1")
        log.rollback("s-1", 3)
        log.append("s-1", play("tool_use")[3:])  # the same events again, under new seqs
        snapshot.log(log, "s-1")
        log.rollback("s-1", 2)
        with pytest.raises(SnapshotMismatch, match=r"event #2:\n    expected .*\"seq\":3"):
            snapshot.log(log, "s-1")
        with pytest.raises(
            SnapshotMismatch, match=r"no events for session 'nope' \(sessions: s-1\)"
        ):
            snapshot.log(log, "nope")
    finally:
        log.close()


def test_named_snapshots_sit_beside_the_tests_own(tmp_path: Path) -> None:
    snapshot = EventSnapshot(tmp_path / "test_a_1.5_")
    assert snapshot.path() == tmp_path / "test_a_1.5_.jsonl"
    assert snapshot.path("second") == tmp_path / "test_a_1.5_.second.jsonl"
    with pytest.raises(UsageError, match=r"snapshot name '\.\./x'"):
        snapshot.path("../x")
