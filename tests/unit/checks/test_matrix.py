"""The failure matrix: adapter × scenario → how the run ended, over the doubles."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from stuntset import scenarios
from stuntset.checks.matrix import Cell, _codex, matrix_markdown, provider_matrix
from stuntset.cli import main
from stuntset.errors import UnknownScenario, UsageError


def test_the_scripted_column_covers_the_whole_catalog() -> None:
    (column,) = provider_matrix(["scripted"]).values()
    labels = {name: cell.label for name, cell in column.items()}
    assert labels["happy_path"] == "completed"
    assert labels["stuck"] == "killed"
    assert labels["spawn_missing"] == "crashed: spawn_failed"
    assert labels["rate_limited"] == "crashed: rate_limited (retryable)"
    assert len(labels) == 18


def test_every_adapter_over_the_doubles(tmp_path: Path) -> None:
    table = provider_matrix(scenarios=["spawn_missing", "rate_limited"], workdir=tmp_path)
    labels = {a: {s: c.label for s, c in row.items()} for a, row in table.items()}
    assert labels["pydantic-ai"] == {
        "spawn_missing": "n/a",  # a model API has no process to spawn
        "rate_limited": "completed",  # the openai SDK retried the 429
    }
    assert labels["pydantic-ai-gemini"] == {
        "spawn_missing": "n/a",
        "rate_limited": "crashed: rate_limited (retryable)",  # google-genai: no retry by default
    }
    assert labels["claude-code"] == {
        "spawn_missing": "crashed: spawn_failed",
        "rate_limited": "completed",  # the CLI retried the 429 itself, as the real one does
    }
    assert labels["codex"] == {
        "spawn_missing": "crashed: spawn_failed",
        "rate_limited": "crashed: rate_limited (retryable)",
    }
    markdown = matrix_markdown(table)
    assert markdown.splitlines()[0] == (
        "| scenario | scripted | pydantic-ai | pydantic-ai-gemini | claude-code | codex |"
    )
    assert (
        "| `spawn_missing` | crashed: spawn_failed | n/a | n/a | crashed: spawn_failed "
        "| crashed: spawn_failed |"
    ) in markdown


def test_cell_labels() -> None:
    assert Cell("failed", detail="contract").label == "FAILED contract"
    assert Cell("not installed").label == "not installed"
    assert Cell("ok", "run.crashed", "auth", False).label == "crashed: auth"


def test_unknown_names_are_refused() -> None:
    with pytest.raises(UsageError, match="unknown adapter"):
        provider_matrix(["gemini"])
    with pytest.raises(UnknownScenario):
        provider_matrix(["scripted"], ["happy"])


def test_the_matrix_command_prints_markdown_and_a_table() -> None:
    runner = CliRunner()
    result = runner.invoke(
        main, ["matrix", "--adapter", "scripted", "--scenario", "happy_path", "--markdown"]
    )
    assert result.exit_code == 0, result.output
    assert "| `happy_path` | completed |" in result.output
    result = runner.invoke(main, ["matrix", "--adapter", "scripted", "--scenario", "stuck"])
    assert result.exit_code == 0, result.output
    assert "killed" in result.output


def test_each_script_gets_its_own_fake_codex_even_when_ids_are_recycled(tmp_path: Path) -> None:
    """A script that is collected frees its id for the next one: the codex column once handed
    a new scenario the fake installed for a collected ``spawn_missing`` (so ``rate_limited``
    read ``spawn_failed``, depending on memory layout)."""
    make = _codex(tmp_path)
    for _ in range(10):
        missing = make(scenarios.build("spawn_missing"))  # its script is dropped at once
        assert missing.codex_bin is not None
        assert not Path(missing.codex_bin).exists()
        happy = make(scenarios.build("happy_path"))
        assert happy.codex_bin is not None
        assert Path(happy.codex_bin).exists()


def test_piped_and_narrow_the_table_keeps_whole_scenario_names() -> None:
    result = CliRunner().invoke(
        main,
        ["matrix", "--adapter", "scripted", "--scenario", "interleaved_streaming"],
        env={"COLUMNS": "30"},
    )
    assert result.exit_code == 0, result.output
    assert "│ interleaved_streaming │ completed │" in result.output


def test_sdk_log_lines_are_held_back_and_summarised_after_the_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """claude-agent-sdk logs 'Fatal error in message reader' when the claude process dies;
    Python's last-resort handler would print it between the table's rows. No catalog scenario
    kills the fake claude's process any more (its crash_mid_turn drops the model connection,
    as the real claude meets it), so the SDK's log line is said while the real matrix plays."""
    pytest.importorskip("claude_agent_sdk")
    import logging

    from stuntset.checks import matrix

    real = matrix.provider_matrix

    def logging_matrix(*args: object, **kwargs: object) -> object:
        logging.getLogger("claude_agent_sdk._internal.query").error(
            "Fatal error in message reader: Command failed with exit code 1"
        )
        return real(*args, **kwargs)  # type: ignore[arg-type]

    # lint-mocks: allow: a wrapper that adds the SDK's log line; the matrix itself runs
    monkeypatch.setattr(matrix, "provider_matrix", logging_matrix)
    result = CliRunner().invoke(
        main, ["matrix", "--adapter", "claude-code", "--scenario", "crash_mid_turn"]
    )
    assert result.exit_code == 0, result.output
    assert "Fatal error" not in result.stdout
    assert "crashed: http (retryable)" in result.stdout
    assert result.stderr.startswith("1 log line(s) from the client SDKs held back")
    assert "Fatal error in message reader" in result.stderr
