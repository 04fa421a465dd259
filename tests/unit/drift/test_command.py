"""``stuntset drift``'s body: its refusals and its forms, without running a binary."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from stuntset.cli import main
from stuntset.drift.command import run
from stuntset.drift.report import drift
from stuntset.drift.runners import CLIS, binary_version, chosen_binary, real_binary
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


@pytest.mark.real_cli  # the real codex says its version
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


def test_a_named_binary_that_is_not_executable_is_refused_naming_where(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    result = CliRunner().invoke(main, ["drift", "--claude-bin", str(missing)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: --claude-bin {missing}: not an executable file"
    ]
    text = tmp_path / "codex"
    text.write_text("not a program")  # a file, not executable
    with pytest.raises(UsageError, match=r"STUNTSET_CODEX_BIN .*/codex: not an executable file"):
        chosen_binary("codex", environ={"STUNTSET_CODEX_BIN": str(text)})


def test_the_binary_comes_from_the_option_then_the_variable_then_the_bundle(
    tmp_path: Path,
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for path in (one, two):
        path.write_text("#!/bin/sh\necho 'fake 1.2.3'\n")
        path.chmod(0o755)
    environ = {"STUNTSET_CLAUDE_BIN": str(two)}
    assert chosen_binary("claude", one, environ) == one
    assert chosen_binary("claude", None, environ) == two
    assert chosen_binary("claude", None, {}) == real_binary("claude")
    assert binary_version(one) == "fake 1.2.3"
    assert binary_version(tmp_path / "absent").startswith("version unknown: ")


def test_drift_runs_the_binary_it_is_given(tmp_path: Path) -> None:
    """``--codex-bin`` reaches the run: a "codex" that prints a version and exits is what the
    report names, and the real side of spawn_missing runs its missing twin."""
    codex = tmp_path / "codex"
    codex.write_text("#!/bin/sh\necho 'codex-cli 9.9.9'\n")
    codex.chmod(0o755)
    report = drift(["codex"], ["spawn_missing"], codex_bin=codex, workdir=tmp_path / "w")
    assert report.binaries == {"codex": f"{codex} (codex-cli 9.9.9)"}
    (cell,) = report.cells
    assert cell.status == "same", cell.label
