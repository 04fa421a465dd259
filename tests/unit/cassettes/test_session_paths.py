"""``@pytest.mark.cassette("path")``: a relative path is the test file's folder's, as every
other marker path is; a cassette only the current directory holds is still found there."""

from __future__ import annotations

from pathlib import Path

import pytest

from stuntset.cassettes.session import marker_cassette_path


def test_a_relative_marker_path_is_beside_the_test_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tests, elsewhere = tmp_path / "tests", tmp_path / "cwd"
    tests.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    # not recorded yet: it will be recorded beside the test file, not in the working directory
    assert marker_cassette_path("cassettes/a.jsonl", tests) == tests / "cassettes/a.jsonl"
    (tests / "b.jsonl").write_text("")
    (elsewhere / "b.jsonl").write_text("")
    assert marker_cassette_path("b.jsonl", tests) == tests / "b.jsonl"


def test_a_cassette_only_the_working_directory_holds_is_still_found_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "old.jsonl").write_text("")
    assert marker_cassette_path("old.jsonl", tmp_path / "tests") == tmp_path / "old.jsonl"
    assert marker_cassette_path(tmp_path / "x.jsonl", tmp_path / "tests") == tmp_path / "x.jsonl"
