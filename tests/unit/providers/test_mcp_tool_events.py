"""MCP tool calls in the normalized events of the Claude Code and Codex adapters, played by
the fake CLIs (which emit the real CLIs' shapes: a ``mcp__<server>__<tool>`` tool_use for
claude, an ``mcpToolCall`` item with ``server`` and ``tool`` for codex)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from stuntset.doubles.cli import install_cli
from stuntset.events import Event, ToolCompleted, ToolStarted
from stuntset.script import Script, Text, ToolCall, ToolResult

pytest.importorskip("claude_agent_sdk")
pytest.importorskip("openai_codex")

from claude_agent_sdk import ClaudeAgentOptions

from stuntset.providers.claude_code import ClaudeCodeProvider, mcp_server_of
from stuntset.providers.codex import CodexProvider

pytestmark = pytest.mark.anyio
SCRIPT = Script.of(
    [
        ToolCall("mcp__files__read_file", {"path": "a.txt"}),
        ToolResult("hello"),
        ToolCall("bash", {"command": "ls"}),
        ToolResult("a.txt"),
        Text("done"),
    ]
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def events_of(run: object) -> list[Event]:
    with anyio.fail_after(30):
        return [event async for event in run]  # type: ignore[attr-defined]


async def test_claude_code_names_the_mcp_server_of_a_tool_call(tmp_path: Path) -> None:
    cli = install_cli("claude", SCRIPT, bin_dir=tmp_path / "bin", time_scale=0)
    # the server must be given: the real CLI has no tool of a server it was not given
    files: Any = {"files": {"command": sys.executable, "args": ["-c", "pass"]}}
    provider = ClaudeCodeProvider(ClaudeAgentOptions(cli_path=cli.path, mcp_servers=files))
    events = await events_of(provider.start("read a.txt"))
    await provider.aclose()
    started = [e for e in events if isinstance(e, ToolStarted)]
    assert [(e.server, e.name, e.input) for e in started] == [
        ("files", "mcp__files__read_file", {"path": "a.txt"}),
        (None, "Bash", {"command": "ls"}),  # the catalog's bash, as claude's own
    ]
    assert next(e.output for e in events if isinstance(e, ToolCompleted)) == "hello"


async def test_codex_names_the_mcp_server_of_an_mcp_tool_call(tmp_path: Path) -> None:
    cli = install_cli("codex", SCRIPT, bin_dir=tmp_path / "bin", time_scale=0)
    provider = CodexProvider(
        str(cli.path), cwd=str(tmp_path), env={"CODEX_HOME": str(tmp_path / "h")}
    )
    events = await events_of(provider.start("read a.txt"))
    await provider.aclose()
    started = [e for e in events if isinstance(e, ToolStarted)]
    assert [(e.server, e.name, e.input) for e in started] == [
        ("files", "read_file", {"path": "a.txt"}),
        (None, "command_execution", {"command": "/bin/bash -lc ls", "cwd": str(tmp_path)}),
    ]
    assert next(e.output for e in events if isinstance(e, ToolCompleted)) == "hello"


@pytest.mark.parametrize(
    ("name", "server"),
    [
        ("mcp__files__read_file", "files"),
        ("mcp__my_server__a__b", "my_server"),
        ("mcp__files", None),
        ("mcp____x", None),
        ("mcp__files__", None),
        ("read_file", None),
    ],
)
def test_the_server_of_a_claude_code_tool_name(name: str, server: str | None) -> None:
    assert mcp_server_of(name) == server
