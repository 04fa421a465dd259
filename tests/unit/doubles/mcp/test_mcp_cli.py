"""``stuntset mcp serve``: on stdio (the default ``echo`` tool) and on a port (a spec whose
``Exit`` really ends the process), driven by the official ``mcp`` client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from stuntset.commands.mcp import default_spec
from stuntset.doubles.mcp import dumps_spec, spec_of
from stuntset.doubles.mcp.journal import read_journal
from stuntset.script import Exit, Script, ToolCall, ToolResult, TurnRequest

pytestmark = [pytest.mark.anyio, pytest.mark.real_time]
STUNTSET = [sys.executable, "-m", "stuntset.cli"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_the_default_spec_echoes_the_arguments() -> None:
    spec = default_spec()
    assert [t.name for t in spec.tools] == ["echo"]
    made = spec.script.turn_from_function(TurnRequest(body={"arguments": {"b": 2, "a": 1}}), 0)
    assert [getattr(step, "text", None) for step in made.steps] == ['{"a": 1, "b": 2}']


@pytest.mark.slow
async def test_serve_on_stdio_answers_echo_and_keeps_a_journal(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    command = [*STUNTSET, "mcp", "serve", "--stdio", "--journal", str(journal)]
    params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            echoed = await session.call_tool("echo", {"say": "hi"})
    assert echoed.content[0].text == '{"say": "hi"}'  # type: ignore[union-attr]
    assert [c.tool for c in read_journal(journal) if c.method == "tools/call"] == ["echo"]


@pytest.mark.slow
async def test_serve_on_a_port_crashes_for_real_on_a_scripted_exit(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    script = Script.of([ToolCall("t"), ToolResult("ok")], [ToolCall("t"), Exit(7, stderr="bye")])
    spec.write_text(dumps_spec(spec_of(script)))
    process = subprocess.Popen(
        [*STUNTSET, "mcp", "serve", "--port", "0", "--spec", str(spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = await anyio.to_thread.run_sync(process.stdout.readline)
        url = first.split(" on ")[1].strip()
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/mcp")
        with anyio.fail_after(60):
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                ok = await session.call_tool("t", {})
                with pytest.raises(MCPError):
                    await session.call_tool("t", {})
        code = await anyio.to_thread.run_sync(lambda: process.wait(30))
    finally:
        process.kill()
        process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    assert ok.content[0].text == "ok"  # type: ignore[union-attr]
    assert code == 7


@pytest.mark.slow
async def test_serve_on_a_port_plays_a_scenario_and_stops_on_sigint(tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    process = subprocess.Popen(
        [
            *STUNTSET,
            "mcp",
            "serve",
            "--port",
            "0",
            "--scenario",
            "happy_path",
            "--journal",
            str(journal),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = await anyio.to_thread.run_sync(process.stdout.readline)
        url = first.split(" on ")[1].strip()
        with anyio.fail_after(60):
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                hello = await session.call_tool("echo", {})
        process.send_signal(signal.SIGINT)
        code = await anyio.to_thread.run_sync(lambda: process.wait(30))
    finally:
        process.kill()
        process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    assert hello.content[0].text == "Hello! How can I help you today?"  # type: ignore[union-attr]
    assert code == 0
    assert [c.outcome for c in read_journal(journal) if c.method == "tools/call"] == ["result"]
