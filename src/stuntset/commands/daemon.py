"""The body of ``stuntset daemon``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from stuntset.runtime.daemon import ConsoleFactory, DaemonInfo, run_daemon
from stuntset.runtime.security import normalize_origins
from stuntset.runtime.testing import scenario_registry

__all__ = [
    "SWITCH_INTERVAL",
    "default_db",
    "default_token_file",
    "quick_switching",
    "run_daemon_command",
]


def default_token_file() -> Path:
    """``$STUNTSET_RUNTIME_DIR`` or ``$XDG_RUNTIME_DIR/stuntset`` or a per-user temp dir
    (each checked as a private runtime directory when the daemon starts)."""
    base = os.environ.get("STUNTSET_RUNTIME_DIR")
    if base:
        return Path(base).absolute() / "daemon.json"
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "stuntset" / "daemon.json"
    return Path(tempfile.gettempdir()) / f"stuntset-{os.getuid()}" / "daemon.json"


def default_db() -> Path:
    """``$XDG_DATA_HOME/stuntset/host.db``, or ``~/.local/share/stuntset/host.db``: one
    absolute place, whatever the working directory (a relative default made every folder a
    daemon was started from a database of its own)."""
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / "stuntset" / "host.db"


#: The GIL's switch interval in the process of ``stuntset daemon`` and ``stuntset console``.
SWITCH_INTERVAL = 0.0005


@contextlib.contextmanager
def quick_switching() -> Iterator[None]:
    """While a daemon serves: hand the GIL to a waiting thread every 0.5 ms, not 5 ms.

    The console renders on worker threads (a 50 MB cassette's first page is seconds of
    CPU); at CPython's default interval the event loop thread waited up to 5 ms for the GIL
    at each of a request's hand-offs (every read, write and commit), so the daemon's other
    clients saw tens of milliseconds a call while a page rendered (p99 68 ms, measured
    against 23 ms with it: tests/e2e/console/test_console_load.py). Only the commands set it,
    for as long as they serve, and the interval before is put back when they return: a
    command run inside another process (a test's ``CliRunner``) leaves that process's
    setting as it found it, as does a daemon started through the library."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def run_daemon_command(
    db: str | None,
    port: int,
    token_file: str | None,
    echo: Callable[[str], None] = print,
    host: str = "127.0.0.1",
    console: bool = False,
    allowed_origins: tuple[str, ...] = (),
) -> None:
    """Serve the daemon (providers: the catalog scenarios by name, and ``stuck``) until
    ``POST /shutdown``, SIGINT or SIGTERM."""
    origins = normalize_origins(allowed_origins, option="--allow-origin")
    path = Path(token_file).absolute() if token_file else default_token_file()
    if db is None:
        database = default_db()
        database.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    else:
        database = Path(db).absolute()

    def ready(info: DaemonInfo, stop: Callable[[], None]) -> None:
        echo(
            f"stuntset daemon on {info.url} (WebSocket {info.ws_url}); db {database}; "
            f"token in {path} (0600); pid {info.pid}"
        )
        if origins:
            echo(f"also allowed origins: {', '.join(origins)}")
        if console:
            echo(f"console: {info.url}/console/?token=<the token in {path}>")

    with quick_switching():
        asyncio.run(
            run_daemon(
                db=database,
                providers=scenario_registry(),
                host=host,
                port=port,
                token_file=path,
                private_runtime_dir=token_file is None,
                handle_signals=True,
                ready=ready,
                console=_console() if console else None,
                allowed_origins=origins,
            )
        )


def _console() -> ConsoleFactory:
    from stuntset.console import daemon_console

    return daemon_console()
