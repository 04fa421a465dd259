"""``stuntset cli <program>``: the fake CLI as a command (``commands/fake_cli.py``)."""

from __future__ import annotations

import pytest

from stuntset.commands.fake_cli import run_fake_cli


def test_a_spawn_failure_scenario_is_a_missing_binary_exit_127(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run_fake_cli("claude", None, "spawn_missing", ["-p", "hi"]) == 127
    assert capsys.readouterr().out == (
        "claude: No such file or directory (the script's spawn_failure)\n"
    )


def test_the_default_scenario_answers_and_exits_0(capfd: pytest.CaptureFixture[str]) -> None:
    assert run_fake_cli("claude", None, None, ["-p", "hi"]) == 0
    assert capfd.readouterr().out == "Hello! How can I help you today?\n"
