"""The model double as a raw ASGI application (no framework in the hot path), for uvicorn
or any ASGI server.

It plays a ``Reply`` over ASGI: the status line after ``reply.wait``, each write as its own
body message, pauses on the double's clock, a stall that lasts until the client disconnects
(or the double closes), and an abort that drops the TCP connection. Dropping a connection is
not part of ASGI: under uvicorn the app reaches the connection's transport through ``send``;
elsewhere it falls back to ending the response early.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import anyio.lowlevel

from stuntset._resources import STREAMS
from stuntset.wires import Abort, Pause, Reply, Stall

from .double import ModelDouble
from .journal import StallHold

__all__ = ["ANSWER_KEY", "ModelApp"]

#: A scope key the server's fast lane (``_lane``) sets when the double already answered the
#: request: the ``Reply`` to play, or the exception the double raised (raised again here).
ANSWER_KEY = "stuntset.answer"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_POLL = 0.05  # how often a stalled response looks at the double's closing flag


class _Disconnected(Exception):
    pass


class ModelApp:
    """ASGI app answering from ``double`` (swap it with ``app.double = …``; ``None`` answers
    503 until a double is attached). ``max_body`` (bytes) answers a larger request body with
    the provider's 413 instead of reading it."""

    def __init__(self, double: ModelDouble | None = None, *, max_body: int | None = None) -> None:
        self.double = double
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self._lifespan(receive, send)
            return
        double = self.double
        if double is None:
            await _plain(send, 503, b"stuntset: no model double is attached to this server")
            return
        answer = scope.get(ANSWER_KEY)
        if answer is not None:  # the fast lane asked the double already (its body was read)
            if isinstance(answer, BaseException):
                raise answer
            with contextlib.suppress(_Disconnected):
                await self._play(double, answer, receive, send, path=scope["path"])
            return
        headers = _headers(scope["headers"])
        query = scope["query_string"].decode("latin-1") if scope.get("query_string") else ""
        limit = self.max_body
        try:
            body = None
            if limit is None or _declared_length(headers) <= limit:
                body = await _read_body(receive, limit)
            if body is None:  # over the limit: the provider's 413, the body left unread
                assert limit is not None
                reply = double.too_large(scope["method"], scope["path"], query, headers, limit)
            else:
                reply = double.handle(scope["method"], scope["path"], query, headers, body)
            head = reply.encoded
            if head is not None and not reply.wait and not reply.streaming:
                actions = reply.actions
                if len(actions) == 1 and isinstance(actions[0], bytes):
                    # a filled template's whole body, its head already bytes: two messages
                    await send(
                        {"type": "http.response.start", "status": reply.status, "headers": head}
                    )
                    await send({"type": "http.response.body", "body": actions[0]})
                    return
            await self._play(double, reply, receive, send, path=scope["path"])
        except _Disconnected:
            return

    async def _play(
        self, double: ModelDouble, reply: Reply, receive: Receive, send: Send, *, path: str = ""
    ) -> None:
        # the request this reply answers (journaled just now: nothing awaited since)
        index = double.journal.count - 1
        if reply.wait:
            await self._pause(double, reply.wait, receive)
        if reply.status is None:
            for action in reply.actions:
                if isinstance(action, Stall):
                    await self._stall(double, receive, send, index)
                elif isinstance(action, Abort):
                    await _drop(send, reset=action.reset)
            return
        head = reply.encoded
        if head is None:
            head = [(k.encode(), v.encode()) for k, v in reply.header_list()]
        await send({"type": "http.response.start", "status": reply.status, "headers": head})
        actions = reply.actions
        if len(actions) == 1 and isinstance(actions[0], bytes):  # a whole body in one write
            await send({"type": "http.response.body", "body": actions[0], "more_body": False})
            return
        # uvicorn's transport (to stop writing the moment the client has gone: writes to a
        # closed transport are dropped, but asyncio logs a warning for each after the fifth)
        transport = getattr(getattr(send, "__self__", None), "transport", None)
        token = STREAMS.opened(f"{path} (streamed response over loopback)")
        try:
            await self._stream(double, actions, transport, receive, send, index)
        finally:  # a stream the double had to end at its close was never released
            STREAMS.ended(token, released=not double.closing.is_set())

    async def _stream(
        self,
        double: ModelDouble,
        actions: list[Any],
        transport: Any,
        receive: Receive,
        send: Send,
        index: int = -1,
    ) -> None:
        for action in actions:
            if isinstance(action, bytes):
                if transport is not None and transport.is_closing():
                    await _hung_up(receive)
                await send({"type": "http.response.body", "body": action, "more_body": True})
            elif isinstance(action, Pause):
                await self._pause(double, action.seconds, receive)
            elif isinstance(action, Stall):
                await self._stall(double, receive, send, index)
                return
            else:
                double.journal.ended(index)
                await _drop(send, reset=action.reset)
                return
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        double.journal.ended(index)

    async def _pause(self, double: ModelDouble, seconds: float, receive: Receive) -> None:
        await double.clock.sleep(seconds)

    async def _stall(
        self, double: ModelDouble, receive: Receive, send: Send, index: int = -1
    ) -> None:
        """Wait until the client hangs up or the double closes; then drop the connection.
        How long the client held it goes in the journal (``StallHold``)."""
        started = time.monotonic()
        while not double.closing.is_set():
            with anyio.move_on_after(_POLL):
                message = await receive()
                if message["type"] == "http.disconnect":
                    held = StallHold(index, time.monotonic() - started, "client hung up")
                    double.journal.holds.append(held)
                    raise _Disconnected
        double.journal.holds.append(StallHold(index, None, "double closed"))
        await _drop(send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return


def _headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Request headers by name (uvicorn and most servers already lower-case the names)."""
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}


def _declared_length(headers: dict[str, str]) -> int:
    value = headers.get("content-length")
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        return 0  # the server's parser refuses such a request before it gets here


async def _read_body(receive: Receive, limit: int | None) -> bytes | None:
    """The request body; ``None`` if it grew over ``limit`` bytes (``_Disconnected`` if the
    client hung up)."""
    message = await receive()
    if message["type"] == "http.disconnect":
        raise _Disconnected
    body: bytes = message.get("body", b"")
    if not message.get("more_body", False):
        return None if limit is not None and len(body) > limit else body
    chunks = [body]
    size = len(body)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if limit is not None and size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _hung_up(receive: Receive) -> None:
    """The client went away mid-response: let the server see it (so it does not report an
    unfinished reply), then stop playing."""
    with anyio.move_on_after(1):
        while (await receive())["type"] != "http.disconnect":
            pass
    raise _Disconnected


async def _plain(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _drop(send: Send, *, reset: bool = False) -> None:
    """Close the TCP connection now (uvicorn), without finishing the response; with ``reset``
    abort it with ``SO_LINGER`` 0, so the peer gets a TCP RST."""
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if transport is not None and reset:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    elif transport is not None:
        transport.close()
        # let the server see the connection is gone, so it does not report an unfinished reply
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
    raise _Disconnected
