"""The official ``mcp`` Python client (``ClientSession`` over ``stdio_client`` and
``streamable_http_client``), unmodified, against the MCP double: the catalog it lists, the
results it gets, and every scripted fault as the client sees it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from stuntset.doubles.mcp import (
    McpDouble,
    McpPrompt,
    McpPromptArgument,
    McpPromptMessage,
    McpResource,
    McpTool,
)
from stuntset.errors import ScriptExhausted
from stuntset.script import (
    AuthExpired,
    Delay,
    Exit,
    Garbage,
    HttpError,
    MalformedJson,
    Script,
    Stall,
    StreamCut,
    Text,
    ToolCall,
    ToolResult,
)

pytestmark = pytest.mark.anyio
TRANSPORTS = ["stdio", "http"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


Make = Callable[..., McpDouble]


@pytest.fixture
def make() -> Iterator[Make]:
    """Makes doubles, closed after the test (their journals stay readable until then)."""
    made: list[McpDouble] = []

    def factory(*args: Any, **kwargs: Any) -> McpDouble:
        made.append(McpDouble(*args, **kwargs))
        return made[-1]

    yield factory
    for double in made:
        double.close()


@asynccontextmanager
async def connect(
    double: McpDouble, transport: str, *, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized session of the official client with the double."""
    with anyio.fail_after(30):
        if transport == "stdio":
            command, *args = double.stdio_command()
            params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                yield s
            return
        server = double.serve_http()
        try:
            async with (
                httpx2.AsyncClient(headers=headers or {}) as http,
                streamable_http_client(server.url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                yield session
        finally:
            server.close()


def leaves(group: BaseException) -> list[Any]:
    """The errors inside (nested) exception groups."""
    if isinstance(group, BaseExceptionGroup):
        return [leaf for inner in group.exceptions for leaf in leaves(inner)]
    return [group]


def text_of(result: Any) -> str:
    return "".join(block.text for block in result.content)


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_catalog_tools_resources_and_prompts(make: Make, transport: str) -> None:
    double = make(
        Script.of([ToolCall("search"), ToolResult("hit")]),
        tools=[McpTool(name="read_file", description="Read a file", input_schema=SCHEMA)],
        resources=[McpResource(uri="file:///notes.txt", name="notes", text="remember")],
        prompts=[
            McpPrompt(
                name="review",
                description="Review code",
                arguments=(McpPromptArgument(name="code", required=True),),
                messages=(McpPromptMessage(text="Review {code} please"),),
            )
        ],
        name="files",
    )
    async with connect(double, transport) as session:
        tools = (await session.list_tools()).tools
        resources = (await session.list_resources()).resources
        read = await session.read_resource("file:///notes.txt")
        prompts = (await session.list_prompts()).prompts
        prompt = await session.get_prompt("review", {"code": "x = 1"})
        with pytest.raises(MCPError) as missing:
            await session.read_resource("file:///missing.txt")
        hit = await session.call_tool("search", {"q": "x"})
    assert [(t.name, t.description, t.input_schema) for t in tools] == [
        ("read_file", "Read a file", SCHEMA),
        ("search", None, {"type": "object"}),
    ]
    assert [(r.uri, r.name, r.mime_type) for r in resources] == [
        ("file:///notes.txt", "notes", "text/plain")
    ]
    assert read.contents[0].text == "remember"  # type: ignore[union-attr]
    assert [(p.name, [a.name for a in p.arguments or []]) for p in prompts] == [
        ("review", ["code"])
    ]
    assert prompt.messages[0].content.text == "Review x = 1 please"  # type: ignore[union-attr]
    assert missing.value.code == -32002
    assert text_of(hit) == "hit"
    assert double.methods()[:2] == ["initialize", "notifications/initialized"]
    assert "resources/read" in double.methods()
    double.check()


SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_results_error_results_and_protocol_errors(make: Make, transport: str) -> None:
    double = make(
        Script.of(
            [ToolCall("add"), ToolResult("3")],
            [ToolCall("add"), ToolResult("division by zero", is_error=True)],
            [ToolCall("add"), ToolResult({"sum": 5})],
            [ToolCall("echo"), Text("said "), Text("twice")],
        )
    )
    async with connect(double, transport) as session:
        plain = await session.call_tool("add", {"a": 1, "b": 2})
        failed = await session.call_tool("add", {"a": 1, "b": 0})
        structured = await session.call_tool("add", {"a": 2, "b": 3})
        echoed = await session.call_tool("echo", {})
        with pytest.raises(MCPError) as unknown:
            await session.call_tool("rm", {"path": "/"})
        with pytest.raises(MCPError) as exhausted:
            await session.call_tool("add", {"a": 9})
    assert (text_of(plain), plain.is_error) == ("3", False)
    assert (text_of(failed), failed.is_error) == ("division by zero", True)
    assert structured.structured_content == {"sum": 5}
    assert text_of(echoed) == "said twice"
    assert (unknown.value.code, unknown.value.message) == (-32602, "Unknown tool: rm")
    assert "has no turn for request" in exhausted.value.message
    calls = double.tool_calls("add")
    assert [c.arguments for c in calls] == [
        {"a": 1, "b": 2},
        {"a": 1, "b": 0},
        {"a": 2, "b": 3},
        {"a": 9},
    ]
    assert [c.outcome for c in calls] == ["result", "error_result", "result", "exhausted"]
    assert [c.turn for c in calls[:3]] == [0, 1, 2]
    with pytest.raises(ScriptExhausted, match="1 MCP tool call"):
        double.check()


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_slow_tool_answers_late_and_times_a_short_wait_out(
    make: Make, transport: str
) -> None:
    double = make(
        Script.of(
            [ToolCall("build"), Delay(0.05), ToolResult("built")],
            [ToolCall("build"), Delay(5), ToolResult("too late")],
        )
    )
    async with connect(double, transport) as session:
        slow = await session.call_tool("build", {})
        with pytest.raises(MCPError, match="timed out"):
            await session.call_tool("build", {}, read_timeout_seconds=0.2)
    assert text_of(slow) == "built"
    assert [c.outcome for c in double.tool_calls()] == ["result", "result"]


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_tool_that_never_answers_times_out_and_the_session_goes_on(
    make: Make, transport: str
) -> None:
    double = make(Script.of([ToolCall("wait"), Stall()], [ToolCall("ping"), ToolResult("pong")]))
    async with connect(double, transport) as session:
        with pytest.raises(MCPError, match="timed out"):
            await session.call_tool("wait", {}, read_timeout_seconds=0.2)
        after = await session.call_tool("ping", {})
    assert text_of(after) == "pong"
    assert double.tool_calls("wait")[0].outcome == "fault:stall"
    assert "notifications/cancelled" in double.methods()


@pytest.mark.slow
async def test_malformed_message_on_stdio_is_skipped_by_the_client_and_the_call_times_out(
    make: Make,
) -> None:
    double = make(Script.of([ToolCall("t"), MalformedJson()], [ToolCall("t"), ToolResult("ok")]))
    async with connect(double, "stdio") as session:
        with pytest.raises(MCPError, match="timed out"):
            await session.call_tool("t", {}, read_timeout_seconds=0.3)
        assert text_of(await session.call_tool("t", {})) == "ok"
    assert double.tool_calls()[0].outcome == "fault:malformed_json"


async def test_malformed_message_over_http_fails_the_call(make: Make) -> None:
    double = make(Script.of([ToolCall("t"), MalformedJson()], [ToolCall("t"), Garbage()]))
    async with connect(double, "http") as session:
        with pytest.raises(MCPError, match="Failed to parse SSE message"):
            await session.call_tool("t", {})
        with pytest.raises(MCPError):
            await session.call_tool("t", {}, read_timeout_seconds=2)
    assert [c.outcome for c in double.tool_calls()] == ["fault:malformed_json", "fault:garbage"]


@pytest.mark.slow
async def test_server_crash_mid_call_on_stdio_closes_the_connection(make: Make) -> None:
    double = make(Script.of([ToolCall("t"), Delay(0.01), Exit(3, stderr="segfault")]))
    async with connect(double, "stdio") as session:
        with pytest.raises(MCPError, match="Connection closed"):
            await session.call_tool("t", {})
    assert double.tool_calls()[0].outcome == "fault:exit"


@pytest.mark.slow
async def test_dropped_stdout_on_stdio_closes_the_connection(make: Make) -> None:
    double = make(Script.of([ToolCall("t"), StreamCut()]))
    async with connect(double, "stdio") as session:
        with pytest.raises(MCPError, match="Connection closed"):
            await session.call_tool("t", {})
    assert double.tool_calls()[0].outcome == "fault:stream_cut"


@pytest.mark.parametrize("step", [Exit(1), Exit(1, reset=True), StreamCut(), StreamCut(clean=True)])
async def test_server_crash_or_dropped_connection_over_http_fails_the_call(
    make: Make, step: Any
) -> None:
    double = make(Script.of([ToolCall("t"), step], [ToolCall("t"), ToolResult("back")]))
    async with connect(double, "http") as session:
        with pytest.raises(MCPError) as failed:
            await session.call_tool("t", {}, read_timeout_seconds=5)
        again = await session.call_tool("t", {})
    assert "timed out" not in failed.value.message
    assert text_of(again) == "back"


@pytest.mark.slow
async def test_auth_failure_over_http_is_401_with_a_challenge(make: Make) -> None:
    double = make(Script.of([ToolCall("t"), ToolResult("ok")]), auth_token="s3cret")
    server = double.serve_http()
    async with httpx2.AsyncClient() as http:
        refused = await http.post(server.url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    with pytest.raises(BaseExceptionGroup) as failed:
        async with connect(double, "http", headers={"Authorization": "Bearer wrong"}):
            pass
    async with connect(double, "http", headers={"Authorization": "Bearer s3cret"}) as session:
        ok = await session.call_tool("t", {})
    server.close()
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith('Bearer realm="stuntset-mcp"')
    assert "invalid_token" in refused.headers["www-authenticate"]
    # the SDK's client (no OAuth provider given) fails the initialize on the 401
    assert [leaf.message for leaf in leaves(failed.value)] == ["Server returned an error response"]
    assert text_of(ok) == "ok"
    unauthorized = [c for c in double.calls if c.outcome == "unauthorized"]
    assert [c.method for c in unauthorized] == ["ping", "initialize"]


async def test_auth_expiring_mid_session_and_http_errors(make: Make) -> None:
    double = make(
        Script.of(
            [ToolCall("t"), ToolResult("ok")],
            [ToolCall("t"), AuthExpired()],
            [ToolCall("t"), HttpError(502, message="bad gateway")],
        )
    )
    async with connect(double, "http") as session:
        assert text_of(await session.call_tool("t", {})) == "ok"
        with pytest.raises(MCPError) as expired:
            await session.call_tool("t", {})
        with pytest.raises(MCPError) as gateway:
            await session.call_tool("t", {})
    # a 401 has no JSON-RPC body; the 502 carries the JSON-RPC error the client reports
    assert expired.value.message == "Server returned an error response"
    assert (gateway.value.code, gateway.value.message) == (-32603, "bad gateway")
    assert [c.outcome for c in double.tool_calls()] == [
        "result",
        "fault:auth_expired",
        "fault:http_error",
    ]


@pytest.mark.slow
async def test_http_only_faults_on_stdio_are_json_rpc_errors(make: Make) -> None:
    double = make(Script.of([ToolCall("t"), AuthExpired(message="token expired")]))
    async with connect(double, "stdio") as session:
        with pytest.raises(MCPError) as expired:
            await session.call_tool("t", {})
    assert (expired.value.code, expired.value.message) == (-32603, "token expired")
    assert double.tool_calls()[0].outcome == "error"
