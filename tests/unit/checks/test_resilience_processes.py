"""The process rules over the fake CLIs (a stuck CLI, SIGKILL without SIGTERM, a process left
running) and the MCP double's stdio servers: a client that breaks each, and one that does
not. The clients are plain ``subprocess`` users of the fake ``codex exec``."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stuntset.checks.resilience import check_resilience, resilience_verdicts
from stuntset.doubles.cli import InstalledCli, install_cli
from stuntset.script import Script, Stall, Text
from stuntset.waiting import wait_for

EXEC = ("exec", "--json", "--skip-git-repo-check")


@pytest.fixture
def stuck(tmp_path: Path) -> Iterator[tuple[InstalledCli, subprocess.Popen[bytes]]]:
    """A fake ``codex exec`` that went quiet in a stall (its journal says so)."""
    cli = install_cli("codex", Script.of([Text("thinking"), Stall()]), bin_dir=tmp_path / "bin")
    env = {"PATH": "/usr/bin:/bin", "CODEX_HOME": str(tmp_path / "codex-home")}
    proc = subprocess.Popen(
        [str(cli.path), *EXEC, "go"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )

    def stalled() -> bool:
        return any(e.get("event") == "stall" for i in cli.invocations for e in i.events)

    try:
        wait_for(stalled, timeout=10)
        yield cli, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        cli.uninstall()


def rules(*doubles: Any) -> list[str]:
    return [v.rule for v in resilience_verdicts(*doubles)]


def test_a_stuck_cli_left_alone_is_flagged(stuck: Any) -> None:
    cli, proc = stuck
    verdicts = resilience_verdicts(cli)
    assert [v.rule for v in verdicts] == ["stuck_cli_not_interrupted", "left_running"]
    assert f"invocation 0 (pid {proc.pid}, `codex exec --json" in verdicts[0].message
    assert verdicts[0].message.endswith(
        "went quiet in a stall and was never interrupted, signalled or killed"
    )
    assert verdicts[1].message.endswith("is still running")


def test_sigkill_without_sigterm_is_flagged(stuck: Any) -> None:
    cli, proc = stuck
    proc.kill()
    proc.wait(10)
    verdicts = resilience_verdicts(cli)
    assert [v.rule for v in verdicts] == ["sigkill_without_sigterm"]
    assert "was killed with no SIGTERM first" in verdicts[0].message


def test_sigterm_first_passes(stuck: Any) -> None:
    cli, proc = stuck
    proc.terminate()
    assert proc.wait(10) == -signal.SIGTERM
    check_resilience(cli)


def test_sigterm_then_sigkill_passes(stuck: Any) -> None:
    cli, proc = stuck
    proc.send_signal(signal.SIGINT)  # an interrupt counts as the polite request too
    assert proc.wait(10) == 130
    check_resilience(cli)


def test_a_cli_that_ran_to_its_end_passes(tmp_path: Path) -> None:
    with install_cli("codex", Script.of([Text("hi")]), bin_dir=tmp_path / "bin") as cli:
        env = {"PATH": "/usr/bin:/bin", "CODEX_HOME": str(tmp_path / "codex-home")}
        subprocess.run(
            [str(cli.path), *EXEC, "go"], env=env, capture_output=True, timeout=10, check=True
        )
        check_resilience(cli)


@pytest.mark.slow  # the MCP double's stdio server imports the mcp SDK: about a second
def test_an_mcp_stdio_server_left_running_is_flagged_and_one_closed_passes(
    tmp_path: Path,
) -> None:
    pytest.importorskip("mcp")
    from stuntset.doubles.mcp import McpDouble

    with McpDouble(tools=["lookup"], root=tmp_path) as double:
        server = subprocess.Popen(
            double.stdio_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert server.stdin is not None
        assert server.stdout is not None
        hello = (
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
            '"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
        )
        server.stdin.write(hello.encode())
        server.stdin.flush()
        server.stdout.readline()  # the server answered: it runs, its journal is open
        verdicts = resilience_verdicts(double)
        assert [v.rule for v in verdicts] == ["left_running"]
        assert f"the MCP stdio server with pid {server.pid} is still running" in verdicts[0].message
        server.stdin.close()  # what a client closing its session does
        server.wait(20)
        server.stdout.close()
        check_resilience(double)
