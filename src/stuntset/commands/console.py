"""The body of ``stuntset console``: the session host (the daemon, over ``--db``) with the
console mounted, and a model double on a second loopback port whose requests the Requests
view shows; the console's address (with its token) is printed once both listen."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from stuntset import scenarios
from stuntset.commands.daemon import quick_switching
from stuntset.console.mount import daemon_console
from stuntset.doubles.model._loopback_server import LoopbackServer
from stuntset.doubles.model.double import ModelDouble
from stuntset.errors import UsageError
from stuntset.runtime.daemon import DaemonInfo, run_daemon
from stuntset.runtime.testing import scenario_registry

__all__ = ["check_cassettes", "run_console_command"]


def check_cassettes(folder: str | None) -> Path | None:
    """``--cassettes``: an existing folder (``UsageError`` naming the option otherwise)."""
    if folder is None:
        return None
    path = Path(folder).absolute()
    if not path.is_dir():
        raise UsageError(f"--cassettes {folder}: not a folder (give the folder of your cassettes)")
    return path


def run_console_command(
    db: str,
    port: int,
    cassettes: str | None,
    echo: Callable[[str], None] = print,
) -> None:
    """Serve until SIGINT or SIGTERM."""
    folder = check_cassettes(cassettes)
    database = db if db == ":memory:" else os.fspath(Path(db).absolute())
    double = ModelDouble(scenarios.build("happy_path"), cycle=True, keep=1000)
    server = LoopbackServer()
    server.attach(double)

    def ready(info: DaemonInfo, stop: Callable[[], None]) -> None:
        echo(f"stuntset console on {info.url}/console/?token={info.token}")
        echo(f"  model double: {server.base_url}/openai/v1 and {server.base_url}/anthropic")
        echo(f"  session host: {info.ws_url} (same token); db {database}")

    try:
        with quick_switching():
            asyncio.run(
                run_daemon(
                    db=database,
                    providers=scenario_registry(),
                    port=port,
                    handle_signals=True,
                    ready=ready,
                    console=daemon_console(double=lambda: double, cassettes=folder),
                )
            )
    finally:
        double.close()
        server.close()
