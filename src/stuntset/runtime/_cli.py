"""The body of ``stuntset daemon``."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from stuntset.runtime.daemon import DaemonInfo, run_daemon
from stuntset.runtime.testing import scenario_registry

__all__ = ["default_token_file", "run_daemon_command"]


def default_token_file() -> Path:
    """``$STUNTSET_RUNTIME_DIR`` or ``$XDG_RUNTIME_DIR/stuntset`` or a per-user temp dir."""
    base = os.environ.get("STUNTSET_RUNTIME_DIR")
    if base:
        return Path(base) / "daemon.json"
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return Path(xdg) / "stuntset" / "daemon.json"
    return Path(tempfile.gettempdir()) / f"stuntset-{os.getuid()}" / "daemon.json"


def run_daemon_command(
    db: str, port: int, token_file: str | None, echo: Callable[[str], None] = print
) -> None:
    """Serve the daemon (providers: the catalog scenarios by name, and ``stuck``)."""
    path = Path(token_file) if token_file else default_token_file()

    def ready(info: DaemonInfo, stop: Callable[[], None]) -> None:
        echo(f"stuntset daemon on {info.url} (WebSocket {info.ws_url}); token in {path} (0600)")

    asyncio.run(
        run_daemon(db=db, providers=scenario_registry(), port=port, token_file=path, ready=ready)
    )
