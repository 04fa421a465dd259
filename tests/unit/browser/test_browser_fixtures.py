"""The page_snapshot fixture in a real Chromium: a changed page fails (and leaves a
screenshot), CI refuses to write, the marker configures it; and the WebSocket gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from stuntset.browser._pytest import snapshot_options
from stuntset.browser.chromium import missing_reason
from stuntset.browser.snapshot import PageSnapshot, SnapshotFiles, SnapshotMismatch


def test_a_changed_page_fails_its_snapshot_and_a_screenshot_is_saved(
    page_snapshot: PageSnapshot, tmp_path: Path
) -> None:
    page = page_snapshot.page
    files = SnapshotFiles(tmp_path / "snaps", "t", ci=False)  # records, wherever it runs
    snap = PageSnapshot(page, files, tmp_path / "failures")
    page.set_content("<main><h1>Orders</h1><button>Pay</button></main>")
    assert snap.check("page") == "recorded"
    assert snap.check("page") == "same"
    page.set_content("<main><h1>Orders</h1><button>Cancel</button></main>")
    with pytest.raises(SnapshotMismatch) as failure:
        snap.check("page")
    message = str(failure.value)
    assert '-  - button "Pay"' in message
    assert '+  - button "Cancel"' in message
    shot = tmp_path / "failures" / "t.page.png"
    assert f"screenshot of the page: {shot}" in message
    assert shot.read_bytes().startswith(b"\x89PNG")


def test_in_ci_a_missing_snapshot_fails_and_nothing_is_written(
    page_snapshot: PageSnapshot, tmp_path: Path
) -> None:
    files = SnapshotFiles(tmp_path / "snaps", "t", ci=True)
    snap = PageSnapshot(page_snapshot.page, files, tmp_path / "failures")
    page_snapshot.page.set_content("<main><p>hi</p></main>")
    with pytest.raises(SnapshotMismatch, match="CI is set"):
        snap.check("page")
    assert not (tmp_path / "snaps").exists()


@pytest.mark.page_snapshot(selector="#card", normalize={r"\d{4}-\d\d-\d\d": "<date>"})
def test_the_marker_sets_the_selector_and_normalizations(page_snapshot: PageSnapshot) -> None:
    page_snapshot.page.set_content(
        "<main><p>outside</p><section id=card><h2>Due 2026-12-01</h2></section></main>"
    )
    assert page_snapshot.aria() == '- heading "Due <date>" [level=2]'


def test_unknown_marker_options_are_refused() -> None:
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['selectr'\]"):
        snapshot_options({"selectr": "main"})


@pytest.mark.browser  # its inner pytest runs start Chromium (through Playwright's driver)
@pytest.mark.timeout(240)  # two pytest processes, each starting Playwright and Chromium
def test_a_user_test_records_then_fails_on_change(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    reason = missing_reason()  # the user's test would be skipped: nothing to prove here
    if reason is not None:
        pytest.skip(f"browser tests need a Chromium: {reason}")
    pytester.makepyfile(
        test_page="""
        import os

        def test_page(page_snapshot):
            label = os.environ.get("LABEL", "Pay")
            page_snapshot.page.set_content(f"<main><button>{label}</button></main>")
            page_snapshot.check("main")
        """
    )
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("STUNTSET_SNAPSHOT_UPDATE", raising=False)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    written = pytester.path / "snapshots" / "test_page" / "test_page.main.aria.yml"
    assert written.read_text() == '- main:\n  - button "Pay"\n'
    monkeypatch.setenv("LABEL", "Cancel")
    changed = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(["*the page differs from its snapshot*", '*+  - button "Cancel"*'])
    assert written.read_text() == '- main:\n  - button "Pay"\n'
    # (CI and --snapshot-update are proven on SnapshotFiles in test_snapshot.py)


def test_without_a_chromium_a_browser_test_is_skipped_saying_why(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(
        test_page="""
        def test_page(page_snapshot):
            raise AssertionError("must not run")
        """
    )
    monkeypatch.setenv("STUNTSET_CHROMIUM", str(pytester.path / "no-chromium"))
    result = pytester.runpytest_inprocess("-ra", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED*browser tests need a Chromium: STUNTSET_CHROMIUM=*no-chromium is not an*"]
    )
