"""The console's ASGI app: three views under one base path, behind the daemon's guard.

``console_app(sources)`` is the Starlette app to mount (the daemon mounts it at
``/console``; ``with_model_double`` puts it beside a model double for ``stuntset serve``).
Every route is behind ``stuntset.runtime.security.Guard`` where it is mounted: Host,
Origin and token. A page opened with ``?token=`` sets the token cookie (``HttpOnly``,
``SameSite=Strict``) and redirects to the same page without it, so the token leaves the
address bar and the page's script reaches the WebSocket with the cookie.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from stuntset.doubles.model.double import ModelDouble
from stuntset.errors import UsageError
from stuntset.runtime.security import token_cookie
from stuntset.runtime.service import SessionService

from . import cassettes_view, requests_view, sessions_view
from ._html import esc, page

__all__ = ["ConsoleSources", "console_app"]

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

    async def index(request: Request) -> Response:
        return login(request, f"{base}/requests") or RedirectResponse(
            f"{base}/requests", status_code=303
        )

    def login(request: Request, path: str | None = None) -> Response | None:
        """Move a ``?token=`` into the cookie (the guard has already checked it) and redirect
        to ``path`` (default: the same page) without it."""
        token = request.query_params.get("token")
        if token is None:
            return None
        rest = [(k, v) for k, v in parse_qsl(request.url.query) if k != "token"]
        target = (path or request.url.path) + (f"?{urlencode(rest)}" if rest else "")
        response = RedirectResponse(target, status_code=303)
        port = request.url.port or 80
        response.set_cookie(token_cookie(port), token, httponly=True, samesite="strict", path="/")
        return response

    async def requests_page(request: Request) -> Response:
        return login(request) or _html(
            page(base, "requests", "Requests", requests_view.render_view(sources.double))
        )

    async def requests_rows(request: Request) -> Response:
        double = sources.double()
        after = _int(request.query_params.get("after", "-1"), "after")
        found = [] if double is None else requests_view.exchanges(double, after)
        last = found[-1].entry.index if found else after
        return (
            _html(requests_view.render_rows(found), 200)
            if found
            else Response(status_code=204, headers={"x-last": str(last)})
        )

    async def sessions_page(request: Request) -> Response:
        return login(request) or _html(
            page(base, "sessions", "Sessions", sessions_view.render_list(base, sources.service))
        )

    async def session_page(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        body = sessions_view.render_session(base, sources.service, session_id)
        if body is None:
            return _not_found(base, "sessions", f"no session {session_id!r}")
        data = f' data-session="{esc(session_id)}" data-ws="{esc(sources.ws_path)}"'
        return login(request) or _html(
            page(base, "sessions", f"Session {session_id}", body, data=data)
        )

    async def cassettes_page(request: Request) -> Response:
        return login(request) or _html(
            page(
                base, "cassettes", "Cassettes", cassettes_view.render_list(base, sources.cassettes)
            )
        )

    async def cassette_page(request: Request) -> Response:
        name = request.query_params.get("name", "")
        try:
            body = cassettes_view.render_one(base, sources.cassettes, name)
        except UsageError as error:
            return _not_found(base, "cassettes", str(error))
        return _html(page(base, "cassettes", f"Cassette {name}", body))

    async def diff_page(request: Request) -> Response:
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        try:
            body = cassettes_view.render_diff(base, sources.cassettes, a, b)
        except UsageError as error:
            return _not_found(base, "cassettes", str(error))
        return _html(page(base, "cassettes", f"{a} → {b}", body))

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return Response("not found", status_code=404)
        data = files("stuntset.console").joinpath("static", name).read_bytes()
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


def _not_found(base: str, view: str, message: str) -> HTMLResponse:
    return _html(page(base, view, "Not found", f'<p role="alert">{esc(message)}</p>'), 404)
