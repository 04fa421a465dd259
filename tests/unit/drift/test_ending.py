"""Ending a process a drift reader reads: SIGTERM, then SIGKILL once, with its evidence kept."""

from __future__ import annotations

import sys

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from stuntset.drift._ending import Sigterms, last_line, signal_state

pytestmark = pytest.mark.anyio

_DEAF = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)


async def test_sigkill_follows_an_ignored_sigterm_once_and_its_evidence_is_kept() -> None:
    async with await anyio.open_process([sys.executable, "-c", _DEAF]) as process:
        assert process.stdout is not None
        stdout = BufferedByteReceiveStream(process.stdout)
        sigterms = Sigterms()
        assert await sigterms.receive_line(stdout, 1024, process, 0.2) == b"ready"
        assert sigterms.reason(None) == "interrupted"  # nothing sent: nothing to say
        sigterms.send(process)
        with anyio.fail_after(30), pytest.raises((anyio.EndOfStream, anyio.IncompleteRead)):
            await sigterms.receive_line(stdout, 1024, process, 0.2)
        first = sigterms.escalated
        assert first.startswith("SIGKILL: still running 0.2 s after SIGTERM (State ")
        assert "SigIgn" in first
        with pytest.raises((anyio.EndOfStream, anyio.IncompleteRead, anyio.ClosedResourceError)):
            await sigterms.receive_line(stdout, 1024, process, 0.2)
        assert sigterms.escalated == first  # not overwritten by a look at the dead process
        assert sigterms.reason("enough") == f"enough ({first})"
        await process.wait()


def test_a_gone_process_has_no_readable_state_and_no_stderr_says_nothing() -> None:
    assert signal_state(2**22 + 12345) == "its state unreadable"
    assert last_line(None) == ""
