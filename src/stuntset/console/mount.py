"""Where the console is mounted: in the daemon (``daemon_console``: a factory the daemon
calls with its service, mounted at ``/console`` behind the daemon's guard) and beside a
model double (``with_console``: ``/console`` behind a guard of its own, every other path to
the double, as ``stuntset serve --console`` does)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from stuntset.doubles.model.double import ModelDouble
from stuntset.runtime.security import Guard
from stuntset.runtime.service import SessionService

from .app import ConsoleSources, console_app

__all__ = ["daemon_console", "with_console"]


def daemon_console(
    *,
    double: Callable[[], ModelDouble | None] = lambda: None,
    cassettes: Path | None = None,
) -> Callable[[SessionService], ASGIApp]:
    """The ``console=`` argument of ``run_daemon``/``start_daemon``: the console over the
    daemon's own service (and a model double's journal, and a cassette folder, if given)."""

    def make(service: SessionService) -> ASGIApp:
        return console_app(ConsoleSources(double=double, service=service, cassettes=cassettes))

    return make


def with_console(
    app: ASGIApp,
    double: ModelDouble,
    *,
    port: int,
    token: str,
    cassettes: Path | None = None,
    sources: ConsoleSources | None = None,
) -> ASGIApp:
    """``app`` (a model double) with the console at ``/console`` behind a ``Guard`` (Host,
    Origin, token on ``port``); everything else goes to ``app`` untouched."""
    found = sources or ConsoleSources()
    found = replace(found, double=lambda: double, cassettes=cassettes or found.cassettes)
    mounted = Starlette(routes=[Mount("/console", console_app(found))])
    console = Guard(mounted, port=port, token=token, open_paths=frozenset())

    async def dispatch(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] in ("http", "websocket") and (
            path == "/console" or path.startswith("/console/")
        ):
            await console(scope, receive, send)
        else:
            await app(scope, receive, send)

    return dispatch
