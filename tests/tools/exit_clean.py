"""Run a command (a pytest tier) and fail it if its output says a resource was left unclosed.

``python tests/tools/exit_clean.py pytest -n auto …`` passes the command's stdout and stderr
through line by line, as they come, and watches them for what Python prints of a resource
nobody closed: ``ResourceWarning: unclosed …`` (a socket, a file, an event loop, a
subprocess), printed after ``[100%]`` at the interpreter's exit, or by a worker, or in the
warnings summary. A run that printed one fails (exit 1, with the lines counted) even though
every test passed: the suite must leak nothing, which is what the plugin fails users' tests
for (issue 31). The command's own failing status is kept as it is.

The Makefile's ``PYTEST`` runs every tier through it.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import IO

#: What Python prints of a resource left unclosed.
MARK = "ResourceWarning: unclosed"


def _copy(source: IO[bytes], sink: IO[bytes], found: list[str]) -> None:
    for line in iter(source.readline, b""):
        sink.write(line)
        sink.flush()
        text = line.decode("utf-8", "replace")
        if MARK in text:
            found.append(text.strip())


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: exit_clean.py COMMAND [ARG ...]", file=sys.stderr)
        return 2
    try:
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as error:
        print(f"exit_clean: cannot run {argv[0]}: {error}", file=sys.stderr)
        return 2
    assert child.stdout is not None
    assert child.stderr is not None
    found: list[str] = []
    copies = [
        threading.Thread(target=_copy, args=(child.stdout, sys.stdout.buffer, found)),
        threading.Thread(target=_copy, args=(child.stderr, sys.stderr.buffer, found)),
    ]
    for copy in copies:
        copy.start()
    try:
        status = child.wait()
    except KeyboardInterrupt:
        child.terminate()
        status = child.wait()
    for copy in copies:
        copy.join()
    if found and status == 0:
        print(
            f"exit_clean: the run passed but left {len(found)} resource(s) unclosed "
            f"(the lines with {MARK!r} above); close them where they are made",
            file=sys.stderr,
        )
        return 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
