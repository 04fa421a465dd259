"""Recording a real agent CLI: a wrapper executable that runs the real binary with the same
arguments, passes stdin and stdout through line by line, and keeps both in a cassette with
their timing — the ``stream-json`` / JSONL transcript of a real ``claude`` or ``codex`` run.

::

    wrapper = install_cli_recorder("claude", real_binary, "cassettes/claude.jsonl", bin_dir=tmp)
    ClaudeAgentOptions(cli_path=wrapper)       # every invocation adds one interaction

An interaction of wire ``<name>-cli`` holds the arguments and every stdin line
(``request.body = {"argv": [...], "stdin": [{"t": …, "data": …}]}``), every stdout line as a
frame, and the exit code as ``response.status``. Invocations append under a file lock; each
write is scrubbed, scanned and atomic like any cassette.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import subprocess
import sys
import threading
import time
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

__all__ = ["install_cli_recorder", "main"]


def _pump_stdin(
    source: IO[bytes], child: IO[bytes], start: float, lines: list[dict[str, Any]]
) -> None:
    try:
        for raw in iter(source.readline, b""):
            lines.append(
                {
                    "t": round(time.monotonic() - start, 6),
                    "data": raw.decode("utf-8", "replace").rstrip("\n"),
                }
            )
            child.write(raw)
            child.flush()
    except (BrokenPipeError, ValueError):
        pass
    finally:
        with contextlib.suppress(BrokenPipeError, OSError):
            child.close()


def main(name: str, real: str, cassette: str, argv: list[str]) -> int:
    """Run ``real`` with ``argv``, teeing its stdio, and add the run to ``cassette``."""
    start = time.monotonic()
    process = subprocess.Popen([real, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdin is not None
    assert process.stdout is not None
    stdin_lines: list[dict[str, Any]] = []
    pump = threading.Thread(
        target=_pump_stdin, args=(sys.stdin.buffer, process.stdin, start, stdin_lines), daemon=True
    )
    pump.start()
    frames: list[Frame] = []
    out = sys.stdout.buffer
    for raw in iter(process.stdout.readline, b""):
        frames.append(
            Frame(
                t=round(time.monotonic() - start, 6),
                data=raw.decode("utf-8", "replace").rstrip("\n"),
            )
        )
        out.write(raw)
        out.flush()
    code = process.wait()
    pump.join(timeout=1.0)  # stdin may stay open after the child is gone: do not wait for it
    _append(
        Path(cassette),
        Interaction(
            id="",
            wire=f"{name}-cli",
            request=RecordedRequest(
                method="EXEC", path=name, body={"argv": argv, "stdin": list(stdin_lines)}
            ),
            response=RecordedResponse(status=code, frames=frames),
        ),
    )
    return code


def _append(path: Path, interaction: Interaction) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "w") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)
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
