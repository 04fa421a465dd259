"""``stuntset drift``'s body: its refusals and its forms, without running a binary."""

from __future__ import annotations

from pathlib import Path

import pytest

from stuntset.cli import main
from stuntset.drift.command import run
from stuntset.drift.runners import CLIS
from stuntset.drift.table import print_drift
from stuntset.errors import UsageError


def test_a_json_report_needs_an_existing_folder(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--json .*/no/r\.json: its folder does not exist"):
        run(("codex",), (), json_path=str(tmp_path / "no" / "r.json"))


def test_live_with_no_scenario_a_model_can_play(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert run(("codex",), ("stuck",), live=True) == 0
    assert capsys.readouterr().err == ("--live: no chosen scenario can be asked of a live model\n")


def test_markdown_and_json_of_an_empty_run(tmp_path: Path) -> None:
    said: list[str] = []
    report = tmp_path / "r.json"
    code = print_drift(["codex"], [], json_path=report, markdown=True, echo=said.append)
    assert code == 0
    assert said[-1] == "| scenario |  |\n|---|\n"  # no cells, no columns
    assert said[0].startswith("real codex: ")  # the binary compared, and its version
    assert "codex-cli" in said[0]
    assert '"cells": []' in report.read_text()


def test_the_command_offers_every_column() -> None:
    command = main.commands["drift"]
    [option] = [p for p in command.params if p.name == "clis"]
    assert tuple(option.type.choices) == CLIS  # type: ignore[attr-defined]
