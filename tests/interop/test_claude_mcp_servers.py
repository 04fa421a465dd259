"""The MCP servers ``system/init`` reports, through claude-agent-sdk's ``query()``: the fake
``claude`` given ``mcp_servers`` (an in-process SDK server, the MCP double over stdio and
over HTTP, a command that does not exist) reports them in the ``SystemMessage`` the SDK
yields; and the bundled real ``claude``, over the model double with the same configuration,
reports the same servers, statuses and ``mcp__<server>__<tool>`` names, and answers a failed
server's tool the same way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import stuntset
from stuntset.doubles.cli import install_cli
from stuntset.doubles.mcp import McpDouble
from stuntset.script import Script, Text, ToolCall, ToolResult, Usage

claude_agent_sdk = pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    ClaudeAgentOptions,
    SystemMessage,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)

BUNDLED_CLAUDE = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [pytest.mark.real_time, pytest.mark.anyio]

#: Every tool the servers have is called: the fake lists the tools the script calls.
CALLS = ("mcp__local__echo", "mcp__web__add", "mcp__calc__mul", "mcp__gone__ping")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@tool("mul", "Multiply two numbers", {"a": int, "b": int})
async def mul(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": str(args["a"] * args["b"])}]}


def model() -> Script:
    """The model calls one tool of each server, then answers."""
    return Script.of(
        [
            ToolCall("mcp__local__echo", {"text": "hi"}),
            ToolResult("hi"),
            ToolCall("mcp__web__add", {"a": 1, "b": 2}),
            ToolResult("3"),
            ToolCall("mcp__calc__mul", {"a": 2, "b": 3}),
            ToolResult("6"),
            ToolCall("mcp__gone__ping", {}),
            ToolResult("pong"),
            Text("done"),
            Usage(10, 5),
        ]
    )


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """``mcp_servers`` for ``ClaudeAgentOptions``: in-process, stdio, HTTP, and a missing
    command."""
    local = McpDouble(Script.of([ToolCall("echo"), ToolResult("hi")]), tools=["echo"])
    web = McpDouble(Script.of([ToolCall("add"), ToolResult("3")]), tools=["add"])
    with local, web, web.serve_http() as server:
        yield {
            "calc": create_sdk_mcp_server("calc", tools=[mul]),
            "local": local.claude_config("local")["mcpServers"]["local"],
            "web": {"type": "http", "url": server.url},
            "gone": {"command": str(tmp_path / "no-such-server")},
        }


async def play(cli_path: Path, where: Path, servers: dict[str, Any], **env: str) -> list[Any]:
    (where / "home" / ".claude").mkdir(parents=True)
    options = ClaudeAgentOptions(
        cli_path=str(cli_path),
        cwd=str(where),
        env={
            "HOME": str(where / "home"),
            "CLAUDE_CONFIG_DIR": str(where / "home" / ".claude"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            **env,
        },
        model="claude-sonnet-4-5",
        mcp_servers=servers,
        allowed_tools=list(CALLS),
    )
    with anyio.fail_after(120):
        return [m async for m in query(prompt="use every server", options=options)]


def init(messages: list[Any]) -> dict[str, Any]:
    found = [m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init"]
    return dict(found[0].data)


def failed_tool_results(messages: list[Any]) -> list[tuple[Any, Any]]:
    return [
        (block.content, block.is_error)
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for block in m.content
        if getattr(block, "is_error", False)
    ]


async def test_the_fake_reports_its_servers_in_the_init_message(
    tmp_path: Path, servers: dict[str, Any]
) -> None:
    cli = install_cli("claude", model(), bin_dir=tmp_path / "bin")
    messages = await play(cli.path, tmp_path / "fake", servers)
    data = init(messages)
    assert data["mcp_servers"] == [
        {"name": "local", "status": "connected", "source": "dynamic"},
        {"name": "web", "status": "connected", "source": "dynamic"},
        {"name": "gone", "status": "failed", "source": "dynamic"},
        {"name": "calc", "status": "connected", "source": "sdk"},
    ]
    assert [t for t in data["tools"] if t.startswith("mcp__")] == [
        "mcp__calc__mul",
        "mcp__local__echo",
        "mcp__web__add",
    ]
    assert failed_tool_results(messages) == [
        ("<tool_use_error>Error: No such tool available: mcp__gone__ping</tool_use_error>", True)
    ]
    cli.assert_all_used()


@pytest.mark.real_cli
@pytest.mark.skipif(not BUNDLED_CLAUDE.exists(), reason="this wheel bundles no claude")
async def test_the_real_claude_and_the_fake_report_the_same_servers(
    tmp_path: Path, servers: dict[str, Any]
) -> None:
    with stuntset.serve(model()) as stand_in:
        base = stand_in.url("anthropic")
        real = await play(
            BUNDLED_CLAUDE,
            tmp_path / "real",
            servers,
            ANTHROPIC_BASE_URL=base,
            ANTHROPIC_API_KEY="t",
        )
        stand_in.verify()
    cli = install_cli("claude", model(), bin_dir=tmp_path / "bin")
    fake = await play(cli.path, tmp_path / "fake", servers)
    assert init(fake)["mcp_servers"] == init(real)["mcp_servers"]
    mcp_tools = [[t for t in init(m)["tools"] if t.startswith("mcp__")] for m in (fake, real)]
    assert mcp_tools[0] == mcp_tools[1]
    assert failed_tool_results(fake) == failed_tool_results(real)
