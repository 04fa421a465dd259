"""The stdio server seen raw, in this process: newline-delimited JSON-RPC in, what the pipe
carries out, for messages that are not JSON-RPC and for each fault; and its command line."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import pytest

from stuntset.doubles.mcp import spec_of
from stuntset.doubles.mcp.journal import read_journal
from stuntset.doubles.mcp.stdio import main, serve_stdio
from stuntset.script import (
    Delay,
    Garbage,
    OutOfOrder,
    Script,
    StreamCut,
    ToolCall,
    ToolResult,
)

pytestmark = [pytest.mark.anyio, pytest.mark.real_time]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


INIT = line(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
)


def call(ident: int, tool: str) -> bytes:
    return line({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": tool}})


@pytest.fixture
def pipes() -> Iterator[tuple[BinaryIO, BinaryIO, BinaryIO, BinaryIO]]:
    """(server stdin, client writes), (client reads, server stdout)."""
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    files = (
        os.fdopen(r_in, "rb"),
        os.fdopen(w_in, "wb", buffering=0),
        os.fdopen(r_out, "rb"),
        os.fdopen(w_out, "wb", buffering=0),
    )
    yield files
    for file in files:
        if not file.closed:
            file.close()


async def exchange(
    pipes: tuple[BinaryIO, BinaryIO, BinaryIO, BinaryIO],
    tmp_path: Path,
    script: Script,
    *lines: bytes,
    until: bytes,
) -> bytes:
    """Send ``lines``; once the server wrote ``until`` (or closed its end), end stdin.
    Everything the server wrote."""
    stdin, to_server, from_server, stdout = pipes
    spec = spec_of(script)
    out = bytearray()
    seen = anyio.Event()

    def read_all() -> None:
        while chunk := from_server.read1(65536):
            out.extend(chunk)
            if until in out:
                anyio.from_thread.run_sync(seen.set)
        anyio.from_thread.run_sync(seen.set)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(anyio.to_thread.run_sync, read_all)
            async with anyio.create_task_group() as server:
                server.start_soon(lambda: serve_stdio(spec, tmp_path, stdin=stdin, stdout=stdout))
                for each in lines:
                    await anyio.to_thread.run_sync(to_server.write, each)
                await seen.wait()
                await anyio.to_thread.run_sync(to_server.close)
            if not stdout.closed:
                stdout.close()
    return bytes(out)


async def test_what_is_not_json_rpc_gets_the_sdks_answer_and_is_recorded(
    pipes: Any, tmp_path: Path
) -> None:
    out = await exchange(
        pipes,
        tmp_path,
        Script.of([ToolCall("t"), ToolResult("ok")]),
        INIT,
        b"\n",
        b"{not json\n",
        line({"jsonrpc": "2.0", "id": 5, "nonsense": True}),
        call(2, "t"),
        until=b'"id":2',
    )
    replies = [json.loads(raw) for raw in out.splitlines()]
    assert replies[0]["id"] == 1
    assert replies[-1] == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": replies[-1]["result"],
    }
    assert replies[-1]["result"]["content"] == [{"type": "text", "text": "ok"}]
    outcomes = [(c.method, c.outcome) for c in read_journal(tmp_path)]
    assert (None, "unparsed") in outcomes
    assert ("tools/call", "result") in outcomes


async def test_faults_on_the_pipe(pipes: Any, tmp_path: Path) -> None:
    out = await exchange(
        pipes,
        tmp_path,
        Script.of(
            [ToolCall("stray"), OutOfOrder()],
            [ToolCall("junk"), Garbage()],
            [ToolCall("cut"), StreamCut()],
            [ToolCall("after"), ToolResult("never seen")],
        ),
        INIT,
        call(2, "stray"),
        call(3, "junk"),
        call(4, "cut"),
        call(5, "after"),
        until=b"\xff\xff\xff never",  # the reader ends when the server drops its stdout
    )
    assert b'"id": "stuntset-out-of-order-2"' in out or b'"id":"stuntset-out-of-order-2"' in out
    assert out.endswith(Garbage().payload())  # nothing after the drop
    assert b"never seen" not in out
    assert [c.outcome for c in read_journal(tmp_path) if c.method == "tools/call"] == [
        "fault:out_of_order",
        "fault:garbage",
        "fault:stream_cut",
        "result",
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--verbose"], "unexpected argument '--verbose'"),
        (["--spec"], "unexpected argument '--spec'"),
        (["--journal", "j"], "--spec FILE is required"),
    ],
)
def test_bad_command_lines_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


async def test_a_scripted_delay_comes_before_the_fault(pipes: Any, tmp_path: Path) -> None:
    # tests real time: the scripted 0.05 s pause (time_scale 1) before the garbage
    started = time.monotonic()
    out = await exchange(
        pipes,
        tmp_path,
        Script.of([ToolCall("slow"), Delay(0.05), Garbage()]),
        INIT,
        call(2, "slow"),
        until=Garbage().payload(),
    )
    assert time.monotonic() - started >= 0.05
    assert out.endswith(Garbage().payload())


async def test_a_client_that_stopped_reading_ends_the_server_quietly(
    pipes: Any, tmp_path: Path
) -> None:
    stdin, to_server, from_server, stdout = pipes
    from_server.close()  # nobody reads the answers: writing them fails with a broken pipe
    spec = spec_of(Script.of([ToolCall("t"), ToolResult("ok")]))
    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: serve_stdio(spec, tmp_path, stdin=stdin, stdout=stdout))
            for each in (INIT, call(2, "t")):
                await anyio.to_thread.run_sync(to_server.write, each)
            await anyio.to_thread.run_sync(to_server.close)
    # it returned, no broken-pipe error escaping it, having read what it was sent
    assert [(c.method, c.outcome) for c in read_journal(tmp_path)][:1] == [
        ("initialize", "request")
    ]


@pytest.mark.parametrize("params", [[1, 2], "name", 3, {"name": "t", "_meta": "x"}])
async def test_non_object_params_are_a_json_rpc_error_and_the_server_serves_on(
    pipes: Any, tmp_path: Path, params: Any
) -> None:
    bad = line({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params})
    out = await exchange(
        pipes,
        tmp_path,
        Script.of([ToolCall("t"), ToolResult("ok")], [ToolCall("t"), ToolResult("ok")]),
        INIT,
        bad,
        call(4, "t"),
        until=b'"id":4',
    )
    replies = {json.loads(raw)["id"]: json.loads(raw) for raw in out.splitlines()}
    assert 4 in replies, out  # the server lived on after the bad call
    assert replies[4]["result"]["content"] == [{"type": "text", "text": "ok"}]
    if isinstance(params, dict):  # a non-object _meta is ignored: the call is played
        assert replies[3]["result"]["content"] == [{"type": "text", "text": "ok"}]
    else:
        assert replies[3]["error"]["code"] == -32602


async def test_a_line_nested_too_deep_gets_an_answer_and_the_server_serves_on(
    pipes: Any, tmp_path: Path
) -> None:
    # issue #33 (found by test_fuzz_mcp.py): the reader's decode raised RecursionError and
    # the server stopped reading: every later message went unanswered
    out = await exchange(
        pipes,
        tmp_path,
        Script.of([ToolCall("t"), ToolResult("ok")]),
        INIT,
        b"[" * 100_000 + b"\n",
        call(4, "t"),
        until=b'"id":4',
    )
    replies = {json.loads(raw).get("id"): json.loads(raw) for raw in out.splitlines()}
    assert replies[4]["result"]["content"] == [{"type": "text", "text": "ok"}]
