"""The tiers' exit guard (``tests/tools/exit_clean.py``) fails a run that left a resource
unclosed, and only such a run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GUARD = Path(__file__).with_name("exit_clean.py")


def guarded(*code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GUARD), sys.executable, "-X", "dev", "-c", "\n".join(code)],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_a_socket_left_for_the_exit_fails_the_run() -> None:
    done = guarded("import socket", "KEPT = socket.socket()", "print('all passed')")
    assert done.returncode == 1
    assert "all passed" in done.stdout  # the output passed through
    assert "ResourceWarning: unclosed <socket.socket" in done.stderr
    assert "exit_clean: the run passed but left 1 resource(s) unclosed" in done.stderr


def test_a_clean_run_passes_with_its_output() -> None:
    done = guarded("import socket", "with socket.socket():", "    pass", "print('all passed')")
    assert (done.returncode, done.stdout, done.stderr) == (0, "all passed\n", "")


def test_a_failing_run_keeps_its_own_status() -> None:
    done = guarded("import socket, sys", "KEPT = socket.socket()", "sys.exit(3)")
    assert done.returncode == 3
    assert "exit_clean:" not in done.stderr


def test_a_command_that_cannot_run_is_named() -> None:
    done = subprocess.run(
        [sys.executable, str(GUARD), "/nonexistent/pytest"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.startswith("exit_clean: cannot run /nonexistent/pytest:")
