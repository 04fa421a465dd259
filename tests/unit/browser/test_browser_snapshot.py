"""Snapshot files: recorded when missing, compared, rewritten only when asked and never in
CI; each refusal says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from stuntset.browser.snapshot import SnapshotFiles, SnapshotMismatch, normalize, update_requested
from stuntset.errors import UsageError


def files(tmp_path: Path, *, update: bool = False, ci: bool = False) -> SnapshotFiles:
    return SnapshotFiles(tmp_path / "snapshots", "test_page", update=update, ci=ci)


def test_a_missing_snapshot_is_recorded_then_compared(tmp_path: Path) -> None:
    store = files(tmp_path)
    assert store.check("main", '- heading "Hi"') == "recorded"
    assert store.path("main").read_text() == '- heading "Hi"\n'
    assert store.check("main", '- heading "Hi"\n') == "same"


def test_a_changed_page_fails_with_a_diff(tmp_path: Path) -> None:
    store = files(tmp_path)
    store.check("main", '- heading "Hi"\n- button "Go"\n')
    with pytest.raises(SnapshotMismatch) as failure:
        store.check("main", '- heading "Hi"\n- button "Stop"\n')
    message = str(failure.value)
    assert "the page differs from its snapshot" in message
    assert '-- button "Go"' in message
    assert '+- button "Stop"' in message
    assert "STUNTSET_SNAPSHOT_UPDATE=1" in message
    assert store.path("main").read_text() == '- heading "Hi"\n- button "Go"\n'  # untouched


def test_update_rewrites_a_changed_snapshot_locally(tmp_path: Path) -> None:
    files(tmp_path).check("main", "old\n")
    assert files(tmp_path, update=True).check("main", "new\n") == "updated"
    assert files(tmp_path).path("main").read_text() == "new\n"


def test_ci_refuses_to_record_a_missing_snapshot(tmp_path: Path) -> None:
    store = files(tmp_path, ci=True)
    with pytest.raises(SnapshotMismatch, match="no snapshot, and CI is set"):
        store.check("main", "page\n")
    assert not store.path("main").exists()


def test_ci_refuses_to_update_even_when_asked(tmp_path: Path) -> None:
    files(tmp_path).check("main", "old\n")
    with pytest.raises(SnapshotMismatch, match="CI is set: snapshots are read-only here"):
        files(tmp_path, update=True, ci=True).check("main", "new\n")
    assert files(tmp_path).path("main").read_text() == "old\n"


def test_ci_is_read_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert SnapshotFiles(tmp_path, "t").ci
    monkeypatch.delenv("CI")
    assert not SnapshotFiles(tmp_path, "t").ci


def test_update_is_asked_by_option_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STUNTSET_SNAPSHOT_UPDATE", raising=False)
    assert not update_requested()
    assert update_requested(True)
    monkeypatch.setenv("STUNTSET_SNAPSHOT_UPDATE", "1")
    assert update_requested()
    monkeypatch.setenv("STUNTSET_SNAPSHOT_UPDATE", "0")
    assert not update_requested()


@pytest.mark.parametrize("name", ["", ".hidden", "a/b", "../x", "a b"])
def test_a_snapshot_name_must_be_a_plain_file_name_part(tmp_path: Path, name: str) -> None:
    with pytest.raises(UsageError, match="snapshot name"):
        files(tmp_path).path(name)


def test_normalize_replaces_each_pattern() -> None:
    assert normalize("run-7f3a at 12:01", {r"run-\w+": "run-<id>", r"\d+:\d+": "<time>"}) == (
        "run-<id> at <time>"
    )
