"""Recording a real agent CLI: a wrapper executable that runs the real binary with the same
arguments, passes stdin and stdout through line by line, and keeps both in a cassette with
their timing — the ``stream-json`` / JSONL transcript of a real ``claude`` or ``codex`` run.

::

    wrapper = install_cli_recorder("claude", real_binary, "cassettes/claude.jsonl", bin_dir=tmp)
    ClaudeAgentOptions(cli_path=wrapper)       # every invocation adds one interaction

An interaction of wire ``<name>-cli`` holds, with ``t`` in seconds from the start:

* ``request.body``: ``argv``, the working directory ``cwd``, every stdin line
  (``stdin: [{"t": …, "data": …}]``) and, if the client closed stdin before the process
  ended, when (``stdin_closed``);
* ``response.frames``: every stdout line (a last line the process ended without a newline
  is marked ``event: "partial"``); ``response.body``: ``{"stderr": [{"t", "data"}…]}``;
  ``response.status``: the exit code (negative: killed by that signal).

Lines are decoded as UTF-8 (bytes that are not become U+FFFD). Invocations append under a
file lock; each write is scrubbed, scanned and atomic like any cassette.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from stuntset.cassettes.format import (
    Cassette,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    load_cassette,
    write_cassette,
)
from stuntset.cassettes.recording_file import locked

__all__ = ["install_cli_recorder", "main"]


def _since(start: float) -> float:
    return round(time.monotonic() - start, 6)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace").removesuffix("\n")


def _pump_stdin(source: IO[bytes], child: IO[bytes], start: float, body: dict[str, Any]) -> None:
    lines: list[dict[str, Any]] = body["stdin"]
    try:
        for raw in iter(source.readline, b""):
            lines.append({"t": _since(start), "data": _text(raw)})
            child.write(raw)
            child.flush()
        body["stdin_closed"] = _since(start)
    except (BrokenPipeError, ValueError):
        pass
    finally:
        with contextlib.suppress(BrokenPipeError, OSError):
            child.close()


def _pump_stderr(source: IO[bytes], start: float, lines: list[dict[str, Any]]) -> None:
    out = sys.stderr.buffer
    for raw in iter(source.readline, b""):
        lines.append({"t": _since(start), "data": raw.decode("utf-8", "replace")})
        with contextlib.suppress(OSError, ValueError):
            out.write(raw)
            out.flush()


def main(name: str, real: str, cassette: str, argv: list[str]) -> int:
    """Run ``real`` with ``argv``, teeing its stdio, and add the run to ``cassette``."""
    start = time.monotonic()
    process = subprocess.Popen(
        [real, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_ends_with_parent(os.getpid()),  # set before any thread of ours starts
    )
    assert process.stdin is not None
    assert process.stdout is not None
    assert process.stderr is not None
    _forward_signals(process)
    body: dict[str, Any] = {"argv": argv, "cwd": os.getcwd(), "stdin": []}
    stderr: list[dict[str, Any]] = []
    pumps = [
        threading.Thread(
            target=_pump_stdin, args=(sys.stdin.buffer, process.stdin, start, body), daemon=True
        ),
        threading.Thread(target=_pump_stderr, args=(process.stderr, start, stderr), daemon=True),
    ]
    for pump in pumps:
        pump.start()
    frames: list[Frame] = []
    out = sys.stdout.buffer
    for raw in iter(process.stdout.readline, b""):
        partial = not raw.endswith(b"\n")
        frames.append(Frame(t=_since(start), data=_text(raw), event="partial" if partial else None))
        out.write(raw)
        out.flush()
    code = process.wait()
    pumps[1].join(timeout=5.0)  # the child is gone: its stderr ends now (unless it forked)
    pumps[0].join(timeout=1.0)  # stdin may stay open after the child is gone: do not wait
    process.stdout.close()
    if not pumps[1].is_alive():
        process.stderr.close()
    _append(
        Path(cassette),
        Interaction(
            id="",
            wire=f"{name}-cli",
            request=RecordedRequest(method="EXEC", path=name, body=dict(body)),
            response=RecordedResponse(
                status=code, frames=frames, body={"stderr": list(stderr)} if stderr else None
            ),
        ),
    )
    # killed by a signal: end the same way, so the client sees what it would (tested; a
    # process ending by its own signal saves no coverage data, hence the pragma)
    if code < 0:  # pragma: no cover
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


#: ``prctl`` option: the signal the kernel sends a process when its parent dies.
_PR_SET_PDEATHSIG = 1


def _ends_with_parent(parent: int) -> Callable[[], None] | None:
    """What the real program runs before ``exec`` so that it ends when the recorder dies,
    however it dies (SIGKILL included, which no handler sees): on Linux, ``PR_SET_PDEATHSIG``
    with SIGKILL — and if the recorder is already gone by then, it ends at once. Elsewhere
    nothing (``None``): the program then outlives a killed recorder."""
    if not sys.platform.startswith("linux"):  # pragma: no cover - this suite runs on Linux
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return None

    # runs in the forked child before exec, where coverage cannot see it (tested: the real
    # program dies with a SIGKILLed recorder)
    def arm() -> None:  # pragma: no cover
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the recorder died before the option was set
            os.kill(os.getpid(), signal.SIGKILL)

    return arm


def _forward_signals(process: subprocess.Popen[bytes]) -> None:
    """A client ending the wrapper (``terminate()``) ends the real program instead; the wrapper
    lives on to write the recording, then ends as the program did."""

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)


def _append(path: Path, interaction: Interaction) -> None:
    with locked(path):
        existing = load_cassette(path).interactions if path.exists() else []
        numbered = Interaction(
            id=f"i-{len(existing) + 1}",
            wire=interaction.wire,
            request=interaction.request,
            response=interaction.response,
        )
        write_cassette(
            path, Cassette(interactions=[*existing, numbered], recorded_by="stuntset cli recorder")
        )


def install_cli_recorder(
    name: str,
    real: str | os.PathLike[str],
    cassette: str | os.PathLike[str],
    *,
    bin_dir: str | os.PathLike[str],
) -> Path:
    """Write an executable ``bin_dir/name`` that records every run of ``real`` into ``cassette``."""
    target = Path(bin_dir) / name
    target.parent.mkdir(parents=True, exist_ok=True)
    code = (
        f"#!{sys.executable}\n"
        "import sys\n"
        "from stuntset.cassettes.cli_record import main\n"
        f"sys.exit(main({name!r}, {str(Path(real).resolve())!r}, {str(Path(cassette).resolve())!r}, sys.argv[1:]))\n"
    )
    target.write_text(code)
    target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return target
