"""The daemon's guard: who may talk to it (see ``reliability.md`` §4.5).

Binding to 127.0.0.1 does not stop a browser: a DNS-rebound page talks to it as
``Host: evil.example:PORT``, and any page may open a WebSocket to it (CORS does not apply
to WebSockets). So every request passes three checks, *before* a WebSocket is accepted:

1. **Host** is one of ``127.0.0.1:PORT``, ``localhost:PORT``, ``[::1]:PORT`` (400 otherwise).
2. **Origin**, when present (browsers), is the daemon's own origin (403 otherwise) — on
   WebSockets and on state-changing HTTP requests.
3. **Token**: ``Authorization: Bearer <token>`` (or ``?token=`` for a browser WebSocket),
   compared in constant time (401 otherwise). Only ``GET /health`` is open without it.

No CORS headers are ever sent.
"""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import parse_qs

import msgspec
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["Guard", "new_token"]


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


class Guard:
    """ASGI middleware enforcing the Host, Origin and token checks above."""

    def __init__(self, app: ASGIApp, *, port: int, token: str, open_paths: frozenset[str]) -> None:
        self.app = app
        self.token = token
        self.open_paths = open_paths
        self.hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"})
        self.origins = frozenset(f"http://{host}" for host in self.hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self.check(scope, headers)
        if refusal is None:
            await self.app(scope, receive, send)
        else:
            await _refuse(scope, receive, send, *refusal)

    def check(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """``(status, reason)`` when the request must be refused, else ``None``."""
        host = headers.get("host")
        if host not in self.hosts:
            return 400, f"host {host!r} is not allowed (use 127.0.0.1 or localhost)"
        websocket = scope["type"] == "websocket"
        if (
            not websocket
            and scope["method"] in ("GET", "HEAD")
            and scope["path"] in self.open_paths
        ):
            return None
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins:
            return 403, f"origin {origin!r} is not allowed"
        if not self._token_ok(scope, headers):
            return 401, "a valid token is required (Authorization: Bearer <token>)"
        return None

    def _token_ok(self, scope: Scope, headers: dict[str, str]) -> bool:
        given = ""
        authorization = headers.get("authorization", "")
        if authorization.lower().startswith("bearer "):
            given = authorization[7:].strip()
        elif scope["type"] == "websocket":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0]
        return bool(given) and secrets.compare_digest(given.encode(), self.token.encode())


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, reason: str) -> None:
    if scope["type"] == "websocket":
        message: Any = await receive()  # websocket.connect
        if message["type"] == "websocket.connect":
            # Closing before accepting makes the server answer the handshake with 403.
            await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
        return
    body = msgspec.json.encode({"error": reason})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
