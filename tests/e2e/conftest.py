"""Fixtures for the daemon tests: a real daemon on a free port, in this process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from stuntset import ScriptedProvider, scenarios
from stuntset.providers import StuckProvider
from stuntset.runtime.daemon import DaemonHandle, start_daemon
from stuntset.script import Script


def _scripted(*names: str) -> ScriptedProvider:
    return ScriptedProvider(Script(turns=[t for n in names for t in scenarios.build(n).turns]))


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[DaemonHandle]:
    """A daemon over ``tmp_path/host.db`` with a fake registry (scripted turns, a stuck one)."""
    handle = start_daemon(
        db=tmp_path / "host.db",
        providers={
            "tools": lambda: _scripted("tool_use", "happy_path"),
            "approval": lambda: _scripted("needs_approval", "happy_path"),
            "stuck": lambda: StuckProvider(),
        },
        token_file=tmp_path / "runtime" / "daemon.json",
    )
    try:
        yield handle
    finally:
        handle.stop()
