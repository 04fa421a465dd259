"""Real agent binaries call tools of the MCP double, offline: the real ``claude`` (bundled in
claude-agent-sdk, driven through the SDK with ``mcp_servers``) and the real ``codex`` (from
openai-codex, with an ``[mcp_servers.x]`` table in its ``config.toml``), each running over the
model double, whose scripted model calls the MCP tool. The double records the call; the
Claude Code and Codex adapters report it as normalized events naming the server."""

from __future__ import annotations

import json
import os
import subprocess
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
from stuntset.providers.codex import CodexProvider  # noqa: E402

READ_FILE = "mcp__files__read_file"
BUNDLED_CLAUDE = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
needs_bundled_claude = pytest.mark.skipif(
    not BUNDLED_CLAUDE.exists(), reason="this claude-agent-sdk wheel bundles no CLI"
)
pytestmark = [pytest.mark.real_time, pytest.mark.anyio]


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


@pytest.mark.real_cli
@needs_bundled_claude
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
    methods = set(mcp_double.methods())
    assert {"tools/list", "tools/call"} <= methods
    # the handshake: initialize, or the newer server/discover this claude also sends
    assert methods & {"initialize", "server/discover"}
    (answered,) = tool_results(requests[-1].body)
    assert answered["content"][0] == {"type": "text", "text": "hello from MCP\n"}


@pytest.mark.real_cli
@needs_bundled_claude
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


# --- the real codex ---------------------------------------------------------------------------

codex_cli_bin = pytest.importorskip("codex_cli_bin")
REAL_CODEX = Path(codex_cli_bin.__file__).parent / "bin" / "codex"
needs_real_codex = pytest.mark.skipif(not REAL_CODEX.exists(), reason="no codex binary here")


def codex_home(tmp_path: Path, base_url: str, mcp: McpDouble) -> Path:
    """A ``CODEX_HOME`` whose model provider is the Responses stand-in and whose MCP server
    ``files`` is the double."""
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        'model = "gpt-5.1"\n'
        'model_provider = "stand_in"\n'
        "[model_providers.stand_in]\n"
        'name = "stand-in"\n'
        f'base_url = "{base_url}"\n'
        'wire_api = "responses"\n'
        'env_key = "OPENAI_API_KEY"\n' + mcp.codex_config("files")
    )
    return home


# Codex lists an MCP server's tools to the model as the namespace "mcp__<server>"
CODEX_READ_FILE = "mcp__files/read_file"


@pytest.mark.real_cli
@needs_real_codex
@pytest.mark.mcp_double(Script.of([ToolCall("read_file"), ToolResult("hello from MCP")]))
def test_the_real_codex_calls_a_tool_of_the_mcp_double(
    mcp_double: McpDouble, tmp_path: Path
) -> None:
    model = model_calling(CODEX_READ_FILE, {"path": "a.txt"}, "It says hello from MCP")
    with stuntset.serve(model) as stand_in:
        home = codex_home(tmp_path, stand_in.url("openai"), mcp_double)
        env = {**os.environ, "CODEX_HOME": str(home), "OPENAI_API_KEY": "test-key"}
        argv = [str(REAL_CODEX), "exec", "--json", "--skip-git-repo-check", "-C", str(tmp_path)]
        done = subprocess.run(
            [*argv, "read a.txt"], capture_output=True, env=env, timeout=120, check=True
        )
        requests = list(stand_in.requests)
    items = [json.loads(line) for line in done.stdout.splitlines()]
    calls = [
        e["item"]
        for e in items
        if e["type"] == "item.completed" and e["item"]["type"] == "mcp_tool_call"
    ]
    assert [(c["server"], c["tool"], c["arguments"], c["status"]) for c in calls] == [
        ("files", "read_file", {"path": "a.txt"}, "completed")
    ]
    assert calls[0]["result"]["content"] == [{"type": "text", "text": "hello from MCP"}]
    (call,) = mcp_double.tool_calls()
    assert (call.tool, call.arguments, call.outcome) == ("read_file", {"path": "a.txt"}, "result")
    # the model saw the MCP result come back as the function call's output
    outputs = [i for i in requests[-1].body["input"] if i.get("type") == "function_call_output"]
    assert "hello from MCP" in json.dumps(outputs)


@pytest.mark.real_cli
@needs_real_codex
@pytest.mark.mcp_double(
    Script.of(
        [ToolCall("read_file"), ToolResult("hello from MCP")],
        [ToolCall("read_file"), ToolResult("no such file: b.txt", is_error=True)],
    )
)
async def test_the_codex_adapter_reports_mcp_calls_with_their_server(
    mcp_double: McpDouble, tmp_path: Path
) -> None:
    model = Script.of(
        [
            ToolCall(CODEX_READ_FILE, {"path": "a.txt"}),
            ToolResult(""),
            ToolCall(CODEX_READ_FILE, {"path": "b.txt"}),
            ToolResult(""),
            Text("a.txt says hello; b.txt is missing"),
        ]
    )
    with stuntset.serve(model) as stand_in:
        home = codex_home(tmp_path, stand_in.url("openai"), mcp_double)
        provider = CodexProvider(
            str(REAL_CODEX),
            cwd=str(tmp_path),
            env={"CODEX_HOME": str(home), "OPENAI_API_KEY": "test-key"},
        )
        run = provider.start("read a.txt and b.txt")
        events: list[Event] = []
        with anyio.fail_after(120):
            async for event in run:
                events.append(event)
                if isinstance(event, ApprovalRequested):
                    await run.respond(event.request_id, "allow")
        await provider.aclose()
    started = [e for e in events if isinstance(e, ToolStarted)]
    completed = [e for e in events if isinstance(e, ToolCompleted)]
    assert [(e.server, e.name, e.input) for e in started] == [
        ("files", "read_file", {"path": "a.txt"}),
        ("files", "read_file", {"path": "b.txt"}),
    ]
    assert [(e.output, e.is_error) for e in completed] == [
        ("hello from MCP", False),
        ("no such file: b.txt", True),
    ]
    assert events[-1].type == "run.completed"
