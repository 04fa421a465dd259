"""The MCP double's journal: every message a client sent, and what the double did with it.

Servers run in the test's process (HTTP) or in a process the client spawned (stdio), so each
server appends JSON lines to its own file in the double's journal folder (one ``write`` per
line, flushed: a server that crashes on purpose leaves its last line behind). The double reads
them all back, in arrival order.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["JournalWriter", "McpCall", "read_journal"]


class McpCall(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One message from a client.

    ``outcome`` says what the double did: ``request`` (served by the SDK), ``notification``,
    ``result`` / ``error_result`` (a scripted tool result), ``fault:<kind>`` (a scripted
    fault, e.g. ``fault:stall``), ``exhausted`` (no turn left: a JSON-RPC error),
    ``unknown_tool``, ``unauthorized`` (HTTP 401), ``unparsed`` (not JSON-RPC).
    """

    transport: str
    session: str
    method: str | None
    outcome: str
    id: str | int | None = None
    params: Any = None
    tool: str | None = None
    arguments: Any = None
    turn: int | None = None
    result: Any = None
    ns: int = 0
    seq: int = 0


class JournalWriter:
    """Appends ``McpCall`` lines to ``<folder>/<pid>-<n>.jsonl`` (no folder: keeps nothing)."""

    _count = 0

    def __init__(self, folder: str | Path | None) -> None:
        JournalWriter._count += 1
        self.path = None
        self._fd = -1
        if folder is not None:
            self.path = Path(folder) / f"{os.getpid()}-{JournalWriter._count}.jsonl"
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._lock = threading.Lock()
        self._seq = 0
        self._encoder = msgspec.json.Encoder()

    def write(self, call: McpCall) -> McpCall:
        with self._lock:
            self._seq += 1
            call = msgspec.structs.replace(call, ns=time.monotonic_ns(), seq=self._seq)
            if self._fd >= 0:
                os.write(self._fd, self._encoder.encode(call) + b"\n")
        return call

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


def read_journal(folder: str | Path) -> list[McpCall]:
    """Every call recorded in ``folder``, in arrival order (a torn last line is skipped)."""
    decoder = msgspec.json.Decoder(McpCall)
    calls: list[tuple[int, str, int, McpCall]] = []
    root = Path(folder)
    if not root.is_dir():
        return []
    for file in sorted(root.glob("*.jsonl")):
        for line in file.read_bytes().splitlines():
            try:
                call = decoder.decode(line)
            except msgspec.DecodeError:
                continue
            calls.append((call.ns, file.name, call.seq, call))
    return [call for *_, call in sorted(calls, key=lambda item: item[:3])]
