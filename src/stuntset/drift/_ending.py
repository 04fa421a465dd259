"""Ending a CLI process a drift adapter reads (``codex exec``, ``gemini -p``): the signal, the
escalation when SIGTERM did not end it, and what its stderr said last.

An interrupted run is sent SIGTERM, as the TypeScript SDKs' abort signals do. If its stdout is
still open ``grace`` s later, the adapter does not wait on: it sends SIGKILL and says so in the
``run.killed`` reason, with the process's signal state as the kernel saw it (so a program
that outlived its SIGTERM is a visible difference with its evidence, never a hung run)."""

from __future__ import annotations

import contextlib
import os
import signal
from typing import IO

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

__all__ = ["Sigterms", "last_line", "signal_state", "stop"]


def stop(process: Process | None, how: int = signal.SIGTERM) -> None:
    """Signal ``process`` unless it is known to be gone. Not ``terminate()``: on asyncio that
    polls first, which reaps an exited child behind the event loop's back (the loop then
    warns "Unknown child process" and reports exit code 255)."""
    if process is not None and process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, how)


def signal_state(pid: int) -> str:
    """The kernel's view of ``pid``'s state and signal masks (Linux ``/proc``), one line."""
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
    except OSError:
        return "its state unreadable"
    keys = ("State", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")
    return ", ".join(f"{key} {fields[key].strip()}" for key in keys if key in fields)


class Sigterms:
    """The SIGTERM a reader's ``interrupt()`` sent its process: when, and, if that was not
    enough, what the SIGKILL after it found (kept from the first escalation on)."""

    def __init__(self) -> None:
        self.sent_at: float | None = None  # anyio.current_time()
        self.escalated = ""

    def send(self, process: Process | None) -> None:
        """SIGTERM to ``process``, if it has been started (else nothing to signal yet)."""
        if process is not None:
            self.sent_at = anyio.current_time()
            stop(process)

    async def receive_line(
        self, stdout: BufferedByteReceiveStream, limit: int, process: Process | None, grace: float
    ) -> bytes:
        """The next stdout line. Once the signalled process keeps stdout open past ``grace``
        s: SIGKILL, what was seen of it kept, and the line read from what is left (stdout
        ends). Raises what ``receive_until`` raises."""
        if self.sent_at is None or self.escalated or process is None:
            return await stdout.receive_until(b"\n", limit)
        with anyio.move_on_after(self.sent_at + grace - anyio.current_time()):
            return await stdout.receive_until(b"\n", limit)
        seen = signal_state(process.pid)
        stop(process, signal.SIGKILL)
        self.escalated = f"SIGKILL: still running {grace:g} s after SIGTERM ({seen})"
        return await stdout.receive_until(b"\n", limit)

    def reason(self, killed: str | None) -> str:
        """The ``run.killed`` reason: the interrupt's, and the escalation if there was one."""
        reason = killed or "interrupted"
        return f"{reason} ({self.escalated})" if self.escalated else reason


def last_line(stderr: IO[bytes] | None) -> str:
    """The last line the process wrote on stderr (a file: it has exited)."""
    if stderr is None:
        return ""
    stderr.seek(0)
    lines = stderr.read().decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:500] if lines else ""
