"""What the Node tier's tests share: node and the locked npm packages (``make node`` installs
them with ``npm ci``), found or the test skipped — failed under CI, where a missing node is a
broken machine, not an optional tier — and a ``stuntset serve`` process of their own."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["HERE", "MODULES", "NodeSetup", "need_node", "serving", "stuntset_bin"]

HERE = Path(__file__).resolve().parent
MODULES = HERE / "node_modules"
#: What the suites import; a missing one means ``make node`` has not run.
_PACKAGES = ("openai", "@anthropic-ai/sdk", "@anthropic-ai/claude-agent-sdk", "@openai/codex-sdk")


class NodeSetup:
    """``node`` and the installed packages."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.modules = MODULES

    def entry(self, package: str) -> Path:
        """A package's folder under node_modules."""
        return self.modules / package


def need_node(modules: Path = MODULES) -> NodeSetup:
    """node and every package the suites import (under ``modules``); a skip where they are
    missing (a failure under ``CI=true``), naming what is missing and the command that
    installs it."""
    node = shutil.which("node")
    missing = [p for p in _PACKAGES if not (modules / p / "package.json").is_file()]
    problem = None
    if node is None:
        problem = "node is not on PATH"
    elif missing:
        problem = f"npm packages missing under {modules}: {', '.join(missing)} (run `make node`)"
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Node tier cannot run under CI: {problem}", pytrace=False)
        pytest.skip(problem)
    assert node is not None
    return NodeSetup(node)


def stuntset_bin() -> str:
    """The ``stuntset`` command of this interpreter's environment."""
    return str(Path(sys.executable).with_name("stuntset"))


@contextmanager
def serving() -> Iterator[str]:
    """A ``stuntset serve`` process on a free loopback port: its base URL; stopped (Ctrl-C)
    when the block ends."""
    process = subprocess.Popen(
        [stuntset_bin(), "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # "stuntset model double on http://127.0.0.1:PORT"
        if not first.startswith("stuntset model double on "):
            raise AssertionError(f"stuntset serve did not start: {first!r}")
        yield first.rsplit(" ", 1)[1].strip()
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
