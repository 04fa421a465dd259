from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from stuntset import scenarios
from stuntset.cli import main


@pytest.fixture
def cli() -> CliRunner:
    return CliRunner()


def test_help_lists_the_commands(cli: CliRunner) -> None:
    result = cli.invoke(main, ["--help"])
    assert result.exit_code == 0
    for command in ("demo", "scenarios", "script"):
        assert command in result.output


def test_version(cli: CliRunner) -> None:
    result = cli.invoke(main, ["--version"])
    assert result.exit_code == 0
    assert "0.1.0" in result.output


def test_scenarios_lists_every_scenario_with_its_description(cli: CliRunner) -> None:
    result = cli.invoke(main, ["scenarios"])
    assert result.exit_code == 0
    for entry in scenarios.all():
        assert entry.name in result.output
    assert "One turn of plain text" in result.output


def test_script_check_summarises_a_good_file(cli: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "ok.toml"
    path.write_text(
        "[[turns]]\nmatch = { contains = 'hi' }\nsteps = [{ text = 'hello' }, { usage = { input_tokens = 1 } }]\n"
    )
    result = cli.invoke(main, ["script", "check", str(path)])
    assert result.exit_code == 0, result.output
    assert "1 turn(s)" in result.output
    assert "contains='hi'" in result.output
    assert "text, usage" in result.output


def test_a_bad_script_file_is_one_clear_line_and_exit_2(cli: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[[turns]]\nsteps = [{ txt = 'hello' }]\n")
    result = cli.invoke(main, ["script", "check", str(path)])
    assert result.exit_code == 2
    assert (
        result.output
        == f"error: {path}, turn 0, step 0: unknown step kind 'txt' (did you mean 'text'?)\n"
    )
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.slow
def test_demo_plays_the_catalog_and_passes(cli: CliRunner) -> None:
    result = cli.invoke(main, ["demo"])
    assert result.exit_code == 0, result.output
    for entry in scenarios.all():
        assert entry.name in result.output
    assert "checks passed" in result.output
    assert "FAILED" not in result.output


def test_demo_exits_1_when_a_check_fails(capsys: pytest.CaptureFixture[str]) -> None:
    from stuntset._demo import DemoRow, run_demo

    def broken() -> list[DemoRow]:
        return [DemoRow("agent (scripted)", "happy_path", 1, 3, "run.completed", False, "rule x")]

    assert run_demo([broken]) == 1
    out = capsys.readouterr().out
    assert "FAILED rule x" in out
    assert "0 of 1 checks passed; failed: happy_path" in out


def test_harness_failures_exit_1_with_one_line(cli: CliRunner) -> None:
    from stuntset.cli import _Group
    from stuntset.errors import ContractViolation

    @click.group(cls=_Group)
    def tool() -> None:
        pass

    @tool.command()
    def check() -> None:
        raise ContractViolation("broken stream", rule="one-terminal", index=1)

    result = cli.invoke(tool, ["check"])
    assert result.exit_code == 1
    assert result.output == "failed: broken stream\n"


def test_a_daemon_command_run_in_process_leaves_the_gil_switch_interval(tmp_path: Path) -> None:
    """``stuntset daemon`` switches the GIL every 0.5 ms while it serves; run inside another
    process (here a ``CliRunner``, as the hostile corpus runs it) and refused, it leaves that
    process's interval as it was (it used to set it for good, in every later test of the
    worker)."""
    import sys

    before = sys.getswitchinterval()
    argv = ["daemon", "--db", f"{tmp_path}/host.db", "--token-file", f"{tmp_path}/d.json"]
    result = CliRunner().invoke(main, [*argv, "--port", "70000"])
    assert result.exit_code == 2
    assert sys.getswitchinterval() == before


def test_quick_switching_puts_the_interval_back() -> None:
    import sys

    from stuntset.commands.daemon import SWITCH_INTERVAL, quick_switching

    before = sys.getswitchinterval()
    with quick_switching():
        assert sys.getswitchinterval() == SWITCH_INTERVAL
    assert sys.getswitchinterval() == before
