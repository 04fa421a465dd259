"""Run by the wheel smoke in the `mcp` extra's environment: the official MCP client, over
stdio, calls a tool of the installed MCP double, which records the call."""

import os
import tempfile
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from stuntset.doubles.mcp import McpDouble, spec_of
from stuntset.script import Script, ToolCall, ToolResult


async def main() -> None:
    script = Script.of([ToolCall("read_file"), ToolResult("hello from the installed MCP double")])
    with McpDouble(spec_of(script, tools=["read_file"]), root=Path(tempfile.mkdtemp())) as double:
        command = double.stdio_command()
        params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("read_file", {"path": "a.txt"})
        print(result.content[0].text)
        assert [c.tool for c in double.tool_calls()] == ["read_file"]


anyio.run(main)
