"""The MCP double over Streamable HTTP: the SDK's streamable-HTTP app behind a thin ASGI layer
that first refuses a foreign Host or Origin (DNS rebinding, another site's page: 421/403),
a POST that is not JSON (400) and a body over ``max_body`` (413, read no further), all
before anything is read, journaled or played; then it checks the bearer token, records every message and renders scripted faults below the
SDK (a 401, an HTTP error status, a stream that never answers, a malformed event, a dropped
connection). ``McpHttpServer`` runs it with uvicorn on 127.0.0.1 in a thread.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, assert_never

import anyio
import anyio.lowlevel
import msgspec

from stuntset._bind import listening_socket
from stuntset.script import (
    AuthExpired,
    Exit,
    FaultStep,
    Garbage,
    HttpError,
    MalformedJson,
    OutOfOrder,
    Overloaded,
    RateLimit,
    SpawnFailure,
    Stall,
    StreamCut,
)

from ._plan import INTERNAL_ERROR, Dispatcher, Plan, exit_as_scripted, with_token
from ._sdk import build_server

__all__ = ["McpHttpApp", "McpHttpServer"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]


def _challenge(message: str) -> bytes:
    return f'Bearer realm="stuntset-mcp", error="invalid_token", error_description="{message}"'.encode()


async def _respond(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [*headers, (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _drop(send: Send, *, reset: bool) -> None:
    """Close the TCP connection now (uvicorn's transport, reached through ``send``)."""
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if transport is None:  # not uvicorn: end the body early instead
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    if reset:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    else:
        transport.close()
    await anyio.lowlevel.checkpoint()


#: Host names a loopback-bound double answers (any port): what a local client sends.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
#: The largest request body read (the SDK's own limit is 4 MB).
MAX_BODY = 4 * 1024 * 1024


def _host_name(host: str) -> str:
    """``host`` without its port (``[::1]:80`` → ``[::1]``), lowercased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _origin_host(origin: str) -> str | None:
    """The ``host[:port]`` of an ``http(s)://`` origin, else ``None``."""
    for scheme in ("http://", "https://"):
        if origin.lower().startswith(scheme):
            return origin[len(scheme) :].split("/", 1)[0]
    return None


def foreign(
    headers: dict[str, str], allowed_hosts: tuple[str, ...] | None
) -> tuple[int, str] | None:
    """Why a request from another site must be refused (status, reason), else ``None``.

    ``allowed_hosts``: the host names (any port) the double answers; ``None`` (served on a
    non-loopback address with ``--allow-remote``) answers any Host. An ``Origin``, when sent,
    must be one of those hosts too, or (remote) the very host the request was sent to.
    """
    host = headers.get("host", "")
    if not host:
        return 421, "Missing Host header"
    if allowed_hosts is not None and _host_name(host) not in allowed_hosts:
        return 421, "Invalid Host header"
    origin = headers.get("origin")
    if origin is None:
        return None
    origin_host = _origin_host(origin)
    if origin_host is None:
        return 403, "Invalid Origin header"
    if allowed_hosts is None:
        return (
            None if origin_host.lower() == host.strip().lower() else (403, "Invalid Origin header")
        )
    return None if _host_name(origin_host) in allowed_hosts else (403, "Invalid Origin header")


class _TooLarge(Exception):
    pass


def _error_body(ident: Any, message: str) -> bytes:
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "id": ident, "error": {"code": INTERNAL_ERROR, "message": message}}
    )


class McpHttpApp:
    """ASGI: faults and auth here, everything else to the SDK's app (``sdk_app``)."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        sdk_app: App,
        *,
        path: str = "/mcp",
        auth_token: str | None = None,
        crash_process: bool = False,
        allowed_hosts: tuple[str, ...] | None = LOOPBACK_HOSTS,
        max_body: int = MAX_BODY,
    ) -> None:
        self.dispatcher = dispatcher
        #: Host names answered (see ``foreign``); ``None``: any (``--allow-remote``).
        self.allowed_hosts = allowed_hosts
        self.max_body = max_body
        self.sdk_app = sdk_app
        self.path = path
        self.auth_token = auth_token
        #: ``Exit`` ends this process (``stuntset mcp serve``); else it drops the connection.
        self.crash_process = crash_process

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].rstrip("/") != self.path:
            await self.sdk_app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refused = foreign(headers, self.allowed_hosts)
        if refused is not None:  # before reading, journaling or playing anything
            await _respond(
                send, refused[0], refused[1].encode(), [(b"content-type", b"text/plain")]
            )
            return
        session = headers.get("mcp-session-id", "-")
        body = b""
        if scope["method"] == "POST":
            content_type = headers.get("content-type", "").lower()
            if not content_type.startswith("application/json"):
                await _respond(
                    send, 400, b"Invalid Content-Type header", [(b"content-type", b"text/plain")]
                )
                return
            try:
                body = await self._body(receive, headers)
            except _TooLarge:
                await _respond(
                    send, 413, b"Request body too large", [(b"content-type", b"text/plain")]
                )
                return
        data: Any
        try:
            data = msgspec.json.decode(body) if body else None
        except (msgspec.DecodeError, RecursionError):  # nested too deep: not JSON to play
            data = None
        if self.auth_token is not None and headers.get("authorization") != (
            f"Bearer {self.auth_token}"
        ):
            self.dispatcher.on_message(data, session, outcome="unauthorized")
            await self._unauthorized(send, "The access token is missing or invalid")
            return
        planned = None
        if scope["method"] == "POST":
            if data is None:
                self.dispatcher.unparsed(body, session)
            else:
                planned = self.dispatcher.on_message(data, session)
        if planned is not None:
            token, plan = planned
            if plan.fault is not None:
                await self._fault(send, receive, plan, plan.fault)
                return
            body = msgspec.json.encode(with_token(data, token))
            scope = dict(scope)
            scope["headers"] = [
                (k, v) for k, v in scope["headers"] if k.lower() != b"content-length"
            ] + [(b"content-length", str(len(body)).encode())]
        await self.sdk_app(scope, _replay(body, receive), send)

    async def _body(self, receive: Receive, headers: dict[str, str]) -> bytes:
        """The request body; ``_TooLarge`` past ``max_body`` (declared or read), reading no
        more than ``max_body`` plus one chunk."""
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            raise _TooLarge
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        return b"".join(chunks)

    async def _unauthorized(self, send: Send, message: str) -> None:
        body = msgspec.json.encode({"error": "invalid_token", "error_description": message})
        await _respond(
            send,
            401,
            body,
            [(b"content-type", b"application/json"), (b"www-authenticate", _challenge(message))],
        )

    async def _fault(self, send: Send, receive: Receive, plan: Plan, fault: FaultStep) -> None:
        if plan.delay:
            await anyio.sleep(plan.delay)
        if isinstance(fault, AuthExpired):
            await self._unauthorized(send, fault.message)
            return
        if isinstance(fault, HttpError | RateLimit | Overloaded):
            status = fault.status if isinstance(fault, HttpError) else 429
            if isinstance(fault, Overloaded):
                status = 503
            headers = [(b"content-type", b"application/json")]
            seconds = getattr(fault, "retry_after", None)
            if seconds is not None:
                headers.append((b"retry-after", str(int(seconds)).encode()))
            message = getattr(fault, "message", None) or f"HTTP {status}"
            await _respond(send, status, _error_body(plan.id, message), headers)
            return
        await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
        if isinstance(fault, Stall):
            while (await receive())["type"] != "http.disconnect":
                pass
            return
        if isinstance(fault, MalformedJson):
            await send(
                {
                    "type": "http.response.body",
                    "body": b"event: message\ndata: " + fault.text.encode() + b"\n\n",
                    "more_body": True,
                }
            )
        elif isinstance(fault, Garbage):
            await send({"type": "http.response.body", "body": fault.payload(), "more_body": True})
        elif isinstance(fault, OutOfOrder):
            stray = {"jsonrpc": "2.0", "id": f"stuntset-out-of-order-{plan.id}", "result": {}}
            event = b"event: message\ndata: " + msgspec.json.encode(stray) + b"\n\n"
            await send({"type": "http.response.body", "body": event, "more_body": True})
        elif isinstance(fault, Exit):
            if self.crash_process:
                exit_as_scripted(fault)
            await _drop(send, reset=fault.reset)
            return
        elif isinstance(fault, StreamCut):
            if not fault.clean:
                await _drop(send, reset=False)
                return
        elif isinstance(fault, SpawnFailure):  # pragma: no cover - the spec rejects it on load
            raise AssertionError(fault)
        else:
            assert_never(fault)
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def build_http_app(
    dispatcher: Dispatcher,
    *,
    crash_process: bool = False,
    allowed_hosts: tuple[str, ...] | None = LOOPBACK_HOSTS,
) -> McpHttpApp:
    """The whole ASGI app for ``dispatcher.spec`` (its lifespan runs the SDK's sessions).

    ``allowed_hosts``: see ``foreign`` (``None`` for a double served on a non-loopback
    address). The SDK's own Host check is off: this layer does it, before anything is played.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    server = build_server(dispatcher)
    sdk_app = server.streamable_http_app(
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    return McpHttpApp(
        dispatcher,
        sdk_app,
        auth_token=dispatcher.spec.auth_token,
        crash_process=crash_process,
        allowed_hosts=allowed_hosts,
    )


class McpHttpServer:
    """uvicorn serving an ``McpHttpApp`` on ``127.0.0.1:<port>`` in a background thread;
    ``url`` is the MCP endpoint. Stops (ending stalled calls) on ``close()``. A connection
    that does not send a whole request head within ``header_timeout`` seconds (of its
    accept, or of its last response's end) is closed."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        header_timeout: float | None = None,
    ) -> None:
        import uvicorn

        from stuntset._uvicorn_server import HEADER_TIMEOUT, ReadyServer, header_deadline

        self.app = build_http_app(dispatcher)
        self._sock = listening_socket(host, port)
        self.host, self.port = self._sock.getsockname()[:2]
        config = uvicorn.Config(
            self.app,
            loop="asyncio",
            http=header_deadline(HEADER_TIMEOUT if header_timeout is None else header_timeout),
            lifespan="on",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=1,
        )
        self._ready = threading.Event()
        server = ReadyServer(config, self._ready)
        self._server = server
        self._thread = threading.Thread(
            target=server.run,
            kwargs={"sockets": [self._sock]},
            name=f"stuntset-mcp-double:{self.port}",
            daemon=True,
        )
        self._thread.start()
        self._ready.wait(30)
        if not server.started:
            self.close()
            raise RuntimeError(f"stuntset: the MCP double could not start on {host}:{port}")

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{self.app.path}"

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(30)
        self._sock.close()

    def __enter__(self) -> McpHttpServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
