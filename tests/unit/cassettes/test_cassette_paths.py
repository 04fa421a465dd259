"""Default cassette paths: collision-free for any test id, unchanged for ids already
file-safe, and an earlier recording still found (or renamed with ``migrate``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stuntset.cassettes.session import cassette_path, default_path

TEST_FILE = "/project/tests/test_agent.py"


@given(st.lists(st.text(min_size=1, max_size=12), min_size=2, max_size=8, unique=True))
def test_ids_differing_in_anything_get_different_files(params: list[str]) -> None:
    names = [f"test_ask[{p}]" for p in params]
    paths = {cassette_path(TEST_FILE, name) for name in names}
    assert len(paths) == len(names)
    for path in paths:
        assert path.parent == Path("/project/tests/cassettes/test_agent")
        assert "/" not in path.name


def test_the_issues_ids_and_file_safe_names() -> None:
    a = cassette_path(TEST_FILE, "test_ask[what is 2+2?]")
    b = cassette_path(TEST_FILE, "test_ask[what is 2+2!]")
    assert a != b
    assert default_path(TEST_FILE, "test_ask[what is 2+2?]") == default_path(
        TEST_FILE, "test_ask[what is 2+2!]"
    )  # the collision the earlier rule had
    assert cassette_path(TEST_FILE, "test_plain") == default_path(TEST_FILE, "test_plain")


@pytest.mark.parametrize("migrate", [False, True])
def test_an_earlier_recording_is_used_or_renamed(tmp_path: Path, migrate: bool) -> None:
    test_file = tmp_path / "test_agent.py"
    name = "test_ask[what is 2+2?]"
    legacy = default_path(test_file, name)
    legacy.parent.mkdir(parents=True)
    legacy.write_text("recorded\n")
    found = cassette_path(test_file, name, migrate=migrate)
    if migrate:
        assert found != legacy
        assert found.read_text() == "recorded\n"
        assert not legacy.exists()
    else:
        assert found == legacy
    assert cassette_path(test_file, name) == found  # and stays where it is
