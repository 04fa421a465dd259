"""The MCP double over stdio: one server per process, serving the SDK's low-level ``Server``
on newline-delimited JSON-RPC, with faults rendered on the pipe itself.

Run as ``python -m stuntset.doubles.mcp.stdio --spec SPEC.json --journal DIR`` (what
``McpDouble.stdio_command()`` gives a client to spawn) or ``stuntset mcp serve --stdio``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import BinaryIO, assert_never

import anyio
import msgspec

from stuntset.script import (
    AuthExpired,
    Exit,
    FaultStep,
    Garbage,
    HttpError,
    MalformedJson,
    OutOfOrder,
    Overloaded,
    RateLimit,
    SpawnFailure,
    Stall,
    StreamCut,
)

from ._plan import Dispatcher, Plan, exit_as_scripted, with_token
from ._sdk import build_server, require_mcp
from .journal import JournalWriter
from .spec import McpServerSpec, load_spec

__all__ = ["main", "serve_stdio"]


class _Pipe:
    """The wire to the client: whole lines under a lock; after a scripted drop, nothing."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.lock = anyio.Lock()
        self.dropped = False

    async def write(self, data: bytes) -> None:
        async with self.lock:
            if self.dropped:
                return
            await anyio.to_thread.run_sync(self._write, data)

    def _write(self, data: bytes) -> None:
        self.out.write(data)
        self.out.flush()

    async def drop(self) -> None:
        async with self.lock:
            self.dropped = True
            self.out.close()


async def _render_fault(pipe: _Pipe, plan: Plan, fault: FaultStep) -> None:
    if plan.delay:
        await anyio.sleep(plan.delay)
    if isinstance(fault, Stall):
        return  # never answered
    if isinstance(fault, MalformedJson):
        await pipe.write(fault.text.encode() + b"\n")
    elif isinstance(fault, Garbage):
        await pipe.write(fault.payload())
    elif isinstance(fault, OutOfOrder):
        stray = {"jsonrpc": "2.0", "id": f"stuntset-out-of-order-{plan.id}", "result": {}}
        await pipe.write(msgspec.json.encode(stray) + b"\n")
    elif isinstance(fault, StreamCut):
        await pipe.drop()
    elif isinstance(fault, Exit):
        exit_as_scripted(fault)
    elif isinstance(
        fault, HttpError | AuthExpired | RateLimit | Overloaded | SpawnFailure
    ):  # pragma: no cover - over stdio the plan answers these with a JSON-RPC error, and the
        # spec rejects a spawn failure on load
        raise AssertionError(fault)
    else:
        assert_never(fault)


async def serve_stdio(
    spec: McpServerSpec,
    journal: str | Path | None,
    *,
    stdin: BinaryIO,
    stdout: BinaryIO,
    time_scale: float = 1.0,
) -> None:
    """Serve one client on ``stdin``/``stdout`` until ``stdin`` ends."""
    require_mcp()
    import mcp.types as types
    from mcp.shared._context_streams import create_context_streams
    from mcp.shared.message import SessionMessage

    writer = JournalWriter(journal)
    dispatcher = Dispatcher(spec, writer, transport="stdio", time_scale=time_scale)
    server = build_server(dispatcher)
    session = f"stdio-{os.getpid()}"
    pipe = _Pipe(stdout)
    read_send, read_recv = create_context_streams[SessionMessage | Exception](0)
    write_send, write_recv = create_context_streams[SessionMessage](0)
    lines = anyio.wrap_file(stdin)

    async def read(group: anyio.abc.TaskGroup) -> None:
        async with read_send:
            async for line in lines:
                if not line.strip():
                    continue
                try:
                    data = msgspec.json.decode(line)
                except (msgspec.DecodeError, RecursionError):  # nested too deep, too
                    dispatcher.unparsed(line, session)
                    data = None
                planned = dispatcher.on_message(data, session) if data is not None else None
                if planned is not None:
                    token, plan = planned
                    if plan.fault is not None:
                        group.start_soon(_render_fault, pipe, plan, plan.fault)
                        continue
                    line = msgspec.json.encode(with_token(data, token))
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as error:  # the SDK answers what does not validate
                    await read_send.send(error)
                    continue
                await read_send.send(SessionMessage(message))
        group.cancel_scope.cancel()

    async def write() -> None:
        async with write_recv:
            async for message in write_recv:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await pipe.write(data.encode() + b"\n")
                except (BrokenPipeError, ValueError):
                    return

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read, group)
            group.start_soon(write)
            await server.run(read_recv, write_send, server.create_initialization_options())
    finally:
        writer.close()


def main(argv: list[str] | None = None) -> int:
    """``python -m stuntset.doubles.mcp.stdio --spec FILE --journal DIR [--time-scale X]``."""
    args = list(sys.argv[1:] if argv is None else argv)
    options: dict[str, str] = {}
    while args:
        key = args.pop(0)
        if key not in ("--spec", "--journal", "--time-scale") or not args:
            sys.stderr.write(f"stuntset-mcp: unexpected argument {key!r}\n")
            return 2
        options[key] = args.pop(0)
    if "--spec" not in options:
        sys.stderr.write("stuntset-mcp: --spec FILE is required\n")
        return 2
    spec = load_spec(options["--spec"])
    journal = options.get("--journal")
    run_stdio(
        spec, Path(journal) if journal else None, time_scale=float(options.get("--time-scale", "1"))
    )
    return 0


def run_stdio(spec: McpServerSpec, journal: Path | None, *, time_scale: float = 1.0) -> None:
    """Serve on this process's stdin/stdout (stray prints go to stderr, not the wire)."""
    if journal is not None:
        journal.mkdir(parents=True, exist_ok=True)
    wire = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    anyio.run(
        lambda: serve_stdio(
            spec, journal, stdin=sys.stdin.buffer, stdout=wire, time_scale=time_scale
        )
    )


if __name__ == "__main__":
    raise SystemExit(main())
