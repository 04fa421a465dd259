"""Real agent binaries call tools of the MCP double, offline: the real ``claude`` (bundled in
claude-agent-sdk, driven through the SDK with ``mcp_servers``) and the real ``codex`` (from
openai-codex, with an ``[mcp_servers.x]`` table in its ``config.toml``), each running over the
model double, whose scripted model calls the MCP tool. The double records the call; the
Claude Code and Codex adapters report it as normalized events naming the server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

import stuntset
from stuntset.doubles.mcp import McpDouble
from stuntset.events import ApprovalRequested, Event, ToolCompleted, ToolStarted
from stuntset.script import Script, Text, ToolCall, ToolResult, Usage

claude_agent_sdk = pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeAgentOptions,
    ResultMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
    query,
)

from stuntset.providers.claude_code import ClaudeCodeProvider  # noqa: E402

READ_FILE = "mcp__files__read_file"
BUNDLED_CLAUDE = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
needs_bundled_claude = pytest.mark.skipif(
    not BUNDLED_CLAUDE.exists(), reason="this claude-agent-sdk wheel bundles no CLI"
)
pytestmark = [pytest.mark.real_time, pytest.mark.anyio, needs_bundled_claude]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def model_calling(tool: str, arguments: dict[str, Any], answer: str) -> Script:
    """The model calls ``tool``, then answers once the result comes back."""
    return Script.of([ToolCall(tool, arguments), ToolResult(""), Text(answer), Usage(10, 5)])


def claude_options(tmp_path: Path, base_url: str, mcp: McpDouble, **extra: Any) -> Any:
    env = {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "HOME": str(tmp_path / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "home" / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    return ClaudeAgentOptions(
        cli_path=str(BUNDLED_CLAUDE),
        env=env,
        cwd=str(tmp_path),
        model="claude-sonnet-4-5",
        mcp_servers=mcp.claude_config("files")["mcpServers"],
        **extra,
    )


def tool_results(request_body: Any) -> list[Any]:
    """The tool_result blocks of the last user message of an Anthropic request."""
    content = request_body["messages"][-1]["content"]
    return [block for block in content if block.get("type") == "tool_result"]


@pytest.mark.mcp_double(Script.of([ToolCall("read_file"), ToolResult("hello from MCP")]))
async def test_the_real_claude_calls_a_tool_of_the_mcp_double(
    mcp_double: McpDouble, tmp_path: Path
) -> None:
    model = model_calling("mcp__files__read_file", {"path": "a.txt"}, "It says hello from MCP")
    with stuntset.serve(model) as stand_in:
        options = claude_options(
            tmp_path, stand_in.url("anthropic"), mcp_double, allowed_tools=[READ_FILE]
        )
        with anyio.fail_after(120):
            messages = [m async for m in query(prompt="read a.txt", options=options)]
        requests = list(stand_in.requests)
    uses = [
        b
        for m in messages
        if isinstance(m, AssistantMessage)
        for b in m.content
        if isinstance(b, ToolUseBlock)
    ]
    results = [
        b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert [(u.name, u.input) for u in uses] == [("mcp__files__read_file", {"path": "a.txt"})]
    assert [(r.content, r.is_error) for r in results] == [
        ([{"type": "text", "text": "hello from MCP"}], None)
    ]
    assert isinstance(messages[-1], ResultMessage)
    assert messages[-1].subtype == "success"
    # the double saw the call as the MCP client sent it; the model saw the result come back
    (call,) = mcp_double.tool_calls()
    assert (call.tool, call.arguments, call.outcome) == ("read_file", {"path": "a.txt"}, "result")
    assert {"initialize", "tools/list", "tools/call"} <= set(mcp_double.methods())
    (answered,) = tool_results(requests[-1].body)
    assert answered["content"][0] == {"type": "text", "text": "hello from MCP\n"}


@pytest.mark.mcp_double(
    Script.of(
        [ToolCall("read_file"), ToolResult("hello from MCP")],
        [ToolCall("read_file"), ToolResult("no such file: b.txt", is_error=True)],
    )
)
async def test_the_claude_code_adapter_reports_mcp_calls_with_their_server(
    mcp_double: McpDouble, tmp_path: Path
) -> None:
    model = Script.of(
        [
            ToolCall("mcp__files__read_file", {"path": "a.txt"}),
            ToolResult(""),
            ToolCall("mcp__files__read_file", {"path": "b.txt"}),
            ToolResult(""),
            Text("a.txt says hello; b.txt is missing"),
        ]
    )
    with stuntset.serve(model) as stand_in:
        provider = ClaudeCodeProvider(
            claude_options(tmp_path, stand_in.url("anthropic"), mcp_double)
        )
        run = provider.start("read a.txt and b.txt")
        events: list[Event] = []
        with anyio.fail_after(120):
            async for event in run:  # the CLI asks before each MCP call: allow it
                events.append(event)
                if isinstance(event, ApprovalRequested):
                    await run.respond(event.request_id, "allow")
        await provider.aclose()
    started = [e for e in events if isinstance(e, ToolStarted)]
    completed = [e for e in events if isinstance(e, ToolCompleted)]
    assert [(e.server, e.name, e.input) for e in started] == [
        ("files", "mcp__files__read_file", {"path": "a.txt"}),
        ("files", "mcp__files__read_file", {"path": "b.txt"}),
    ]
    first, second = completed
    assert (first.output, first.is_error) == ([{"type": "text", "text": "hello from MCP"}], False)
    # Claude Code hands an MCP error result on as text, with its own advice after it
    assert second.is_error is True
    assert str(second.output).startswith("no such file: b.txt")
    assert [e.tool_call_id for e in completed] == [e.tool_call_id for e in started]
    assert [e.tool for e in events if isinstance(e, ApprovalRequested)] == [READ_FILE] * 2
    assert events[-1].type == "run.completed"
    assert [c.arguments for c in mcp_double.tool_calls("read_file")] == [
        {"path": "a.txt"},
        {"path": "b.txt"},
    ]
