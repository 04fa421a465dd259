"""Marker script paths: a relative path is found beside the test file first, then in the
current directory, and the error names every place looked."""

from __future__ import annotations

from pathlib import Path

import pytest

from stuntset._plugin_support import live_binary, resolve_script_path, script_from
from stuntset.errors import ScriptError, UsageError

SCRIPT = "[[turns]]\nsteps = [{ text = 'from a file' }]\n"


def test_a_relative_path_is_found_beside_the_test_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tests = tmp_path / "tests" / "area"
    (tests / "scripts").mkdir(parents=True)
    (tests / "scripts" / "x.toml").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    assert resolve_script_path("scripts/x.toml", tests, "t.py::test") == tests / "scripts/x.toml"
    assert script_from("scripts/x.toml", {}, "t.py::test", tests).turns[0].steps[0].text == (
        "from a file"
    )


def test_the_test_file_directory_wins_over_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tests").mkdir()
    for folder in (tmp_path, tmp_path / "tests"):
        (folder / "x.toml").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    assert resolve_script_path("x.toml", tmp_path / "tests", "t") == tmp_path / "tests" / "x.toml"


def test_the_current_directory_still_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "x.toml").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    assert resolve_script_path("x.toml", tmp_path / "tests", "t") == tmp_path / "x.toml"


def test_an_absolute_path_is_taken_as_given(tmp_path: Path) -> None:
    assert resolve_script_path(tmp_path / "x.toml", Path("/elsewhere"), "t") == tmp_path / "x.toml"


def test_not_found_names_the_test_and_every_place_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScriptError) as caught:
        script_from("scripts/x.toml", {}, "tests/t.py::test_a", tmp_path / "tests")
    message = str(caught.value)
    assert "tests/t.py::test_a" in message
    assert str(tmp_path / "tests" / "scripts" / "x.toml") in message
    assert str(tmp_path / "scripts" / "x.toml") in message


def test_live_binary_says_which_variable_to_set() -> None:
    assert live_binary("codex", {}, "t") == (
        "live test needs STUNTSET_CODEX_BIN set to the real codex executable "
        "(a path, or a name on PATH)"
    )


def test_live_binary_takes_a_path_or_a_name_on_path(tmp_path: Path) -> None:
    binary = tmp_path / "claude-real"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    assert live_binary("claude", {"STUNTSET_CLAUDE_BIN": str(binary)}, "t") == binary
    on_path = {"STUNTSET_CLAUDE_BIN": "claude-real", "PATH": str(tmp_path)}
    assert live_binary("claude", on_path, "t") == binary


def test_live_binary_refuses_what_is_not_an_executable(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a program")
    with pytest.raises(UsageError, match=r"^t: STUNTSET_CLAUDE_BIN='.*notes.txt' is not an exec"):
        live_binary("claude", {"STUNTSET_CLAUDE_BIN": str(tmp_path / "notes.txt")}, "t")
