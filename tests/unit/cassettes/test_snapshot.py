from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from stuntset import drive, scenarios
from stuntset.cassettes.snapshot import SnapshotMismatch, check_events_snapshot
from stuntset.errors import UsageError
from stuntset.events import Event
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

def test_turn(event_snapshot):
    async def main():
        return await drive(ScriptedProvider(scenarios.build("tool_use")).start("go"))
    event_snapshot(anyio.run(main))
"""
    )
    quiet = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
    pytester.runpytest(*quiet).assert_outcomes(failed=1)
    pytester.runpytest(*quiet, "--stuntset-mode=refresh").assert_outcomes(passed=1)
    assert (pytester.path / "snapshots" / "test_z" / "test_turn.jsonl").exists()
    pytester.runpytest(*quiet).assert_outcomes(passed=1)
