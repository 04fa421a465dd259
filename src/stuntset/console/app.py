"""The console's ASGI app: three views under one base path, behind the daemon's guard.

``console_app(sources)`` is the Starlette app to mount (the daemon mounts it at
``/console``; ``with_model_double`` puts it beside a model double for ``stuntset serve``).
Every route is behind ``stuntset.runtime.security.Guard`` where it is mounted: Host,
Origin and token. A page opened with ``?token=`` carries the token on in its links, forms,
fetches and WebSocket (``_html``); no cookie is set, since a browser would send a cookie
for 127.0.0.1 to every other server on 127.0.0.1, whatever its port.

The views read files, the journal and the session store: that work runs on a worker
thread (``RENDER_THREADS`` at a time), never on the event loop it is served from (the
daemon's, which every client of the daemon shares), and a cassette is shown a bounded page
at a time (``cassettes_view.PAGE_LINES``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from stuntset.doubles.model.double import ModelDouble
from stuntset.errors import UsageError
from stuntset.runtime.service import SessionService

from . import cassettes_view, requests_view, sessions_view
from ._html import esc, href, page

__all__ = ["RENDER_THREADS", "ConsoleSources", "console_app"]

#: How many views render at once (on worker threads); more wait their turn.
RENDER_THREADS = 2

_T = TypeVar("_T")

_STATIC = {"console.js": "text/javascript", "console.css": "text/css"}
_SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
        "base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


@dataclass
class ConsoleSources:
    """What the console shows: the model double whose journal is the Requests view, the
    session host of the Sessions view, and the folder of the Cassettes view (each may be
    missing; the view then says how to get one). ``ws_path`` is the daemon's WebSocket."""

    double: Callable[[], ModelDouble | None] = lambda: None
    service: SessionService | None = None
    cassettes: Path | None = None
    base: str = "/console"
    ws_path: str = "/ws"


def _html(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers=_SECURITY_HEADERS)


def console_app(sources: ConsoleSources) -> Starlette:
    """The console as an ASGI app (mount it at ``sources.base``, behind a ``Guard``)."""
    base = sources.base
    limiter: list[anyio.CapacityLimiter] = []

    async def off_loop(work: Callable[[], _T]) -> _T:
        """``work()`` on a worker thread, at most ``RENDER_THREADS`` at a time."""
        if not limiter:  # made on first use, inside the loop that serves the console
            limiter.append(anyio.CapacityLimiter(RENDER_THREADS))
        return await anyio.to_thread.run_sync(work, limiter=limiter[0])

    def token_of(request: Request) -> str | None:
        """The token the page was opened with (the guard has checked it), to carry on."""
        return request.query_params.get("token") or None

    async def index(request: Request) -> Response:
        return RedirectResponse(href(base, "/requests", token=token_of(request)), status_code=303)

    async def requests_page(request: Request) -> Response:
        token = token_of(request)
        body = await off_loop(lambda: requests_view.render_view(sources.double))
        return _html(page(base, "requests", "Requests", body, token=token))

    async def requests_rows(request: Request) -> Response:
        after = _int(request.query_params.get("after", "-1"), "after")

        def rows() -> Response:
            double = sources.double()
            found = [] if double is None else requests_view.exchanges(double, after)
            last = found[-1].entry.index if found else after
            return (
                _html(requests_view.render_rows(found), 200)
                if found
                else Response(status_code=204, headers={"x-last": str(last)})
            )

        return await off_loop(rows)

    async def sessions_page(request: Request) -> Response:
        token = token_of(request)
        body = await off_loop(lambda: sessions_view.render_list(base, sources.service, token=token))
        return _html(page(base, "sessions", "Sessions", body, token=token))

    async def session_page(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        token = token_of(request)
        body = await off_loop(
            lambda: sessions_view.render_session(base, sources.service, session_id, token=token)
        )
        if body is None:
            return _not_found(base, "sessions", f"no session {session_id!r}", token)
        data = f' data-session="{esc(session_id)}" data-ws="{esc(sources.ws_path)}"'
        return _html(page(base, "sessions", f"Session {session_id}", body, data=data, token=token))

    async def cassettes_page(request: Request) -> Response:
        token = token_of(request)
        body = await off_loop(
            lambda: cassettes_view.render_list(base, sources.cassettes, token=token)
        )
        return _html(page(base, "cassettes", "Cassettes", body, token=token))

    async def cassette_page(request: Request) -> Response:
        name = request.query_params.get("name", "")
        number = _int(request.query_params.get("page", "1"), "page")
        token = token_of(request)
        try:
            body = await off_loop(
                lambda: cassettes_view.render_one(
                    base, sources.cassettes, name, page=number, token=token
                )
            )
        except UsageError as error:
            return _not_found(base, "cassettes", str(error), token)
        return _html(page(base, "cassettes", f"Cassette {name}", body, token=token))

    async def diff_page(request: Request) -> Response:
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        token = token_of(request)
        try:
            body = await off_loop(
                lambda: cassettes_view.render_diff(base, sources.cassettes, a, b, token=token)
            )
        except UsageError as error:
            return _not_found(base, "cassettes", str(error), token)
        return _html(page(base, "cassettes", f"{a} → {b}", body, token=token))

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return Response("not found", status_code=404)
        data = await off_loop(files("stuntset.console").joinpath("static", name).read_bytes)
        return Response(data, media_type=_STATIC[name], headers=_SECURITY_HEADERS)

    return Starlette(
        routes=[
            Route("/", index, methods=["GET"]),
            Route("/requests", requests_page, methods=["GET"]),
            Route("/requests/rows", requests_rows, methods=["GET"]),
            Route("/sessions", sessions_page, methods=["GET"]),
            Route("/sessions/{session_id}", session_page, methods=["GET"]),
            Route("/cassettes", cassettes_page, methods=["GET"]),
            Route("/cassettes/show", cassette_page, methods=["GET"]),
            Route("/cassettes/diff", diff_page, methods=["GET"]),
            Route("/static/{name}", static, methods=["GET"]),
        ]
    )


def _int(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        return -1


def _not_found(base: str, view: str, message: str, token: str | None) -> HTMLResponse:
    body = f'<p role="alert">{esc(message)}</p>'
    return _html(page(base, view, "Not found", body, token=token), 404)
