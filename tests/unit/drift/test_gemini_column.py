"""The drift ``gemini`` column's wiring, with the fake ``gemini`` only: which binary is the
real one (``--gemini-bin``, ``$STUNTSET_GEMINI_BIN``, the Node tier's), the one line a run
without one prints, the version the report names, and gemini's own tools in the compared
scripts. (The real ``@google/gemini-cli`` against the fake: tests/e2e/test_drift_gemini.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from stuntset import scenarios
from stuntset.cli import main
from stuntset.doubles.cli import install_cli
from stuntset.drift.gemini_cli import REFUSED_QUESTION
from stuntset.drift.live import keys_for
from stuntset.drift.native import native_script
from stuntset.drift.report import drift
from stuntset.drift.runners import BINARY_ENV, CLIS, COLUMNS, chosen_binary, real_binary
from stuntset.drift.table import print_drift
from stuntset.errors import UsageError
from stuntset.script import ApprovalRequest, InputRequest, ToolCall, ToolResult


def _program(path: Path, version: str) -> Path:
    path.write_text(f"#!/bin/sh\necho '{version}'\n")
    path.chmod(0o755)
    return path


def test_gemini_is_a_column_of_its_own_cli() -> None:
    assert "gemini" in CLIS
    assert COLUMNS["gemini"] == "gemini"
    assert BINARY_ENV["gemini"] == "STUNTSET_GEMINI_BIN"


def test_the_real_gemini_comes_from_the_option_then_the_variable_then_the_node_tier(
    tmp_path: Path,
) -> None:
    one, two = _program(tmp_path / "one", "1.0.0"), _program(tmp_path / "two", "2.0.0")
    node = _program(tmp_path / "node-gemini", "0.61.0")
    environ = {"STUNTSET_GEMINI_BIN": str(two)}
    assert chosen_binary("gemini", one, environ, node_gemini=node) == one
    assert chosen_binary("gemini", None, environ, node_gemini=node) == two
    assert chosen_binary("gemini", None, {}, node_gemini=node) == node
    assert chosen_binary("gemini", None, {}, node_gemini=tmp_path / "absent") is None
    assert real_binary("gemini", tmp_path / "absent") is None
    with pytest.raises(UsageError, match=r"STUNTSET_GEMINI_BIN .*/nope: not an executable file"):
        chosen_binary("gemini", None, {"STUNTSET_GEMINI_BIN": str(tmp_path / "nope")})


def test_without_a_real_gemini_its_column_is_not_available_in_one_line_and_the_others_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``--gemini-bin``, no ``$STUNTSET_GEMINI_BIN``, no Node tier: one line says so and
    how to get one; the gemini cells are ``not installed`` (the run does not fail on them) and
    the codex-exec column, whose binary is given, is played."""
    monkeypatch.delenv("STUNTSET_GEMINI_BIN", raising=False)
    codex = _program(tmp_path / "codex", "codex-cli 9.9.9")
    absent = tmp_path / "node_modules" / ".bin" / "gemini"
    said: list[str] = []
    report = tmp_path / "r.json"
    code = print_drift(
        ["codex-exec", "gemini"],
        ["spawn_missing"],
        json_path=report,
        echo=said.append,
        codex_bin=codex,
        node_gemini=absent,
        workdir=tmp_path / "w",
    )
    assert code == 0
    line = (
        "real gemini: not available, its column not played: no real gemini: none given "
        "(--gemini-bin, $STUNTSET_GEMINI_BIN) and the Node tier's @google/gemini-cli is not "
        f"installed ({absent}: make node)"
    )
    assert said[:2] == [f"real codex: {codex} (codex-cli 9.9.9)", line]
    data = json.loads(report.read_text())
    assert data["failed"] is False
    assert data["missing"] == {"gemini": line.split("played: ", 1)[1]}
    cells = {c["cli"]: c for c in data["cells"]}
    assert cells["codex-exec"]["status"] == "same"
    assert cells["gemini"]["status"] == "not installed"
    assert cells["gemini"]["reason"] == data["missing"]["gemini"]


def test_the_column_plays_the_binary_it_is_given_and_names_its_version(tmp_path: Path) -> None:
    """A fake ``gemini`` playing happy_path stands in for the real one (``--gemini-bin``): the
    real side runs it over the model double, the report names it with what its ``--version``
    says, and both sides agree, final result included."""
    stand_in = install_cli("gemini", scenarios.build("happy_path"), bin_dir=tmp_path / "given")
    result = CliRunner().invoke(
        main,
        [
            "drift",
            "--cli",
            "gemini",
            "--scenario",
            "happy_path",
            "--gemini-bin",
            str(stand_in.path),
        ],
        env={"COLUMNS": "30"},
    )
    assert result.exit_code == 0, result.output
    assert f"real gemini: {stand_in.path} (0.61.0)" in result.output.splitlines()
    assert "│ happy_path " in result.output
    assert "same" in result.output
    # a fake plays its script once: another one for the second run
    again = install_cli("gemini", scenarios.build("happy_path"), bin_dir=tmp_path / "again")
    report = drift(["gemini"], ["happy_path"], gemini_bin=again.path, workdir=tmp_path / "w")
    assert report.binaries == {"gemini": f"{again.path} (0.61.0)"}
    (cell,) = report.cells
    assert cell.status == "same", cell.label
    assert cell.real_steps[-1] == {"type": "result", "status": "success", "usage": True}
    assert cell.requests == 0  # the stand-in calls no model API


def test_a_given_gemini_that_is_not_a_program_is_refused_naming_the_option(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(main, ["drift", "--gemini-bin", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: --gemini-bin {tmp_path / 'nope'}: not an executable file"
    ]


def test_live_has_no_gemini_provider() -> None:
    with pytest.raises(UsageError, match=r"--live compares the claude and codex columns"):
        keys_for(["gemini"])


def test_the_catalog_tools_become_gemini_s_own(tmp_path: Path) -> None:
    """read_file with ``file_path`` (its display: nothing), bash as run_shell_command,
    list_files as list_directory (no text display: no output), a question as its ask_user
    (which the headless CLI has not registered), and no approval (``--yolo``)."""

    def steps(name: str) -> list[object]:
        script = native_script(scenarios.build(name), "gemini", tmp_path)
        kept = (ToolCall, ToolResult, ApprovalRequest, InputRequest)
        return [
            (s.name, s.input) if isinstance(s, ToolCall) else (s.output, s.is_error)
            for t in script.turns
            for s in t.steps
            if isinstance(s, kept)
        ]

    assert steps("tool_use") == [("read_file", {"file_path": "a.txt"}), ("", False)]
    assert steps("needs_approval") == [
        ("run_shell_command", {"command": "rm -rf build/"}),
        ("", False),
    ]
    assert steps("auth_expired_mid_run") == [("list_directory", {"dir_path": "."}), (None, False)]
    [ask, refused] = steps("input_request")
    assert ask[0] == "ask_user"
    assert refused == (REFUSED_QUESTION, True)
    assert native_script(scenarios.build("happy_path"), "gemini", tmp_path) == scenarios.build(
        "happy_path"
    )
