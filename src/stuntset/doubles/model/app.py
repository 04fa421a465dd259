"""The model double as a raw ASGI application (no framework in the hot path), for uvicorn
or any ASGI server.

It plays a ``Reply`` over ASGI: the status line after ``reply.wait``, each write as its own
body message, pauses on the double's clock, a stall that lasts until the client disconnects
(or the double closes), and an abort that drops the TCP connection. Dropping a connection is
not part of ASGI: under uvicorn the app reaches the connection's transport through ``send``;
elsewhere it falls back to ending the response early.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import anyio.lowlevel

from ._reply import Abort, Pause, Reply, Stall
from .double import ModelDouble

__all__ = ["ModelApp"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_POLL = 0.05  # how often a stalled response looks at the double's closing flag


class _Disconnected(Exception):
    pass


class ModelApp:
    """ASGI app answering from ``double`` (swap it with ``app.double = …``; ``None`` answers
    503 until a double is attached)."""

    def __init__(self, double: ModelDouble | None = None) -> None:
        self.double = double

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        double = self.double
        if double is None:
            await _plain(send, 503, b"stuntset: no model double is attached to this server")
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        query = scope.get("query_string", b"").decode("latin-1")
        reply = double.handle(scope["method"], scope["path"], query, headers, b"".join(chunks))
        try:
            await self._play(double, reply, receive, send)
        except _Disconnected:
            return

    async def _play(self, double: ModelDouble, reply: Reply, receive: Receive, send: Send) -> None:
        if reply.wait:
            await self._pause(double, reply.wait, receive)
        if reply.status is None:
            for action in reply.actions:
                if isinstance(action, Stall):
                    await self._stall(double, receive, send)
                elif isinstance(action, Abort):
                    await _drop(send, reset=action.reset)
            return
        await send(
            {
                "type": "http.response.start",
                "status": reply.status,
                "headers": [(k.encode(), v.encode()) for k, v in reply.header_list()],
            }
        )
        for action in reply.actions:
            if isinstance(action, bytes):
                await send({"type": "http.response.body", "body": action, "more_body": True})
            elif isinstance(action, Pause):
                await self._pause(double, action.seconds, receive)
            elif isinstance(action, Stall):
                await self._stall(double, receive, send)
                return
            else:
                await _drop(send, reset=action.reset)
                return
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _pause(self, double: ModelDouble, seconds: float, receive: Receive) -> None:
        await double.clock.sleep(seconds)

    async def _stall(self, double: ModelDouble, receive: Receive, send: Send) -> None:
        """Wait until the client hangs up or the double closes; then drop the connection."""
        while not double.closing.is_set():
            with anyio.move_on_after(_POLL):
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise _Disconnected
        await _drop(send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return


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
