"""Finding the user's Chromium, and saying why when there is none."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from stuntset.browser.chromium import LAUNCH_ARGS, find_chromium, launch, missing_reason


def test_stuntset_chromium_names_the_executable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program = tmp_path / "my-chromium"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setenv("STUNTSET_CHROMIUM", str(program))
    assert find_chromium() == str(program)
    assert missing_reason() is None


def test_a_stuntset_chromium_that_is_not_executable_is_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STUNTSET_CHROMIUM", str(tmp_path / "absent"))
    assert find_chromium() is None
    assert missing_reason() == f"STUNTSET_CHROMIUM={tmp_path / 'absent'} is not an executable file"


def test_without_any_chromium_the_reason_says_how_to_get_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STUNTSET_CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_chromium() is None
    reason = missing_reason()
    assert reason is not None
    assert "apt-get install chromium" in reason


def test_chromium_is_found_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STUNTSET_CHROMIUM", raising=False)
    program = tmp_path / "chromium"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path) + os.pathsep + "/nonexistent")
    assert find_chromium() == str(program)


def test_launch_args_keep_chromium_off_the_network() -> None:
    assert "--headless" in LAUNCH_ARGS
    assert "--disable-background-networking" in LAUNCH_ARGS


def test_without_playwright_the_reason_says_which_extra_brings_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "playwright", None)  # as if it were not installed
    assert missing_reason() == "Playwright is not installed (pip install 'stuntset[browser]')"


def test_launching_without_a_chromium_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STUNTSET_CHROMIUM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"no Chromium found .*apt-get install chromium"):
        launch(playwright=None)  # never reached: the executable is looked for first
