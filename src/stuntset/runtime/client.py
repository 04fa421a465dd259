"""``DaemonClient``: a small synchronous client of the daemon, for tests and demos.

Two transports, one API: a WebSocket to the daemon's port (the default; it needs the
``websockets`` package, imported on first use), or in memory (``DaemonClient(info,
in_process=handle.in_process)``, or ``handle.client(transport="memory")``): no socket, the
client drives the daemon's ASGI app on the daemon's own event loop, through the same guard
(Host, Origin, token) and the same ``/ws`` handler.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import json
import queue
from collections import deque
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

from stuntset.errors import DaemonError
from stuntset.runtime.protocol import MAX_MESSAGE, DaemonInfo

if TYPE_CHECKING:
    from starlette.types import ASGIApp

__all__ = ["DaemonClient", "DaemonError", "InProcess", "Transport"]

#: ``"websocket"`` (a socket to the daemon's port) or ``"memory"`` (its ASGI app, in process).
Transport = Literal["websocket", "memory"]


class _Connection(Protocol):
    def send(self, data: str) -> None: ...
    def recv(self, timeout: float) -> str: ...
    def close(self) -> None: ...


class _WebSocketConnection:
    def __init__(
        self, info: DaemonInfo, headers: dict[str, str], origin: str | None, timeout: float
    ):
        from websockets.sync.client import connect  # a base dependency, loaded when used

        self._ws = connect(
            info.ws_url,
            additional_headers=headers,
            origin=origin,  # type: ignore[arg-type]
            open_timeout=timeout,
            max_size=MAX_MESSAGE,  # the server's limit: events may be large
            # No flow control: a client that leaves mid-stream closes with messages unread.
            # With the default bound (16 frames) the full buffer stops the receiving thread,
            # so it never reads the daemon's answer to its close frame, and close() waits
            # its whole close timeout (10 s) for it.
            max_queue=None,
        )
        # held as a context manager for the client's life (closed in ``close``): websockets
        # 17.1 deprecates a connection used without one (a DeprecationWarning on first use,
        # an error under ``-W error``), and ``legacy=True`` is unknown to 16
        self._ws.__enter__()

    def send(self, data: str) -> None:
        self._ws.send(data)

    def recv(self, timeout: float) -> str:
        data = self._ws.recv(timeout=timeout)
        return data if isinstance(data, str) else data.decode()

    def close(self) -> None:
        self._ws.close()


class InProcess:
    """A running daemon's ASGI app and the event loop it runs on (``DaemonHandle.in_process``):
    what an in-memory ``DaemonClient`` drives."""

    def __init__(self, app: ASGIApp, loop: asyncio.AbstractEventLoop, port: int) -> None:
        self.app = app
        self.loop = loop
        self.port = port


class _MemoryConnection:
    """One ASGI WebSocket session on the daemon's loop; messages cross by queues."""

    def __init__(
        self, target: InProcess, headers: dict[str, str], origin: str | None, timeout: float
    ) -> None:
        self._loop = target.loop
        self._out: queue.Queue[dict[str, Any]] = queue.Queue()  # app -> client
        self._inbox: asyncio.Queue[dict[str, Any]] | None = None  # client -> app
        self._left = False  # the client sent websocket.disconnect
        raw = {"host": f"127.0.0.1:{target.port}", **{k.lower(): v for k, v in headers.items()}}
        if origin is not None:
            raw["origin"] = origin
        scope = {
            "type": "websocket",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "scheme": "ws",
            "server": ("127.0.0.1", target.port),
            "client": ("127.0.0.1", 0),
            "root_path": "",
            "path": "/ws",
            "raw_path": b"/ws",
            "query_string": b"",
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in raw.items()],
            "subprotocols": [],
            "state": {},
        }
        try:
            self._future = asyncio.run_coroutine_threadsafe(
                self._run(target.app, scope), self._loop
            )
        except RuntimeError:  # the loop is closed: the daemon has stopped
            raise DaemonError("the daemon has stopped", field=None) from None
        first = self._get(timeout)
        if first["type"] != "websocket.accept":
            reason = first.get("reason") or "refused"
            self._future.cancel()
            raise DaemonError(f"the daemon refused the connection (403): {reason}", field=None)

    async def _run(self, app: ASGIApp, scope: dict[str, Any]) -> None:
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._inbox = inbox
        inbox.put_nowait({"type": "websocket.connect"})

        async def receive() -> MutableMapping[str, Any]:
            return await inbox.get()

        async def send(message: MutableMapping[str, Any]) -> None:
            if self._left:
                raise OSError("the in-memory client has disconnected")  # as uvicorn does
            self._out.put(dict(message))

        try:
            await app(scope, receive, send)
        finally:
            self._out.put({"type": "_ended"})

    def _get(self, timeout: float) -> dict[str, Any]:
        try:
            return self._out.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no message from the daemon in {timeout} s") from None

    def _push(self, message: dict[str, Any]) -> None:
        inbox = self._inbox
        if inbox is None or self._left:
            raise DaemonError("the connection is closed", field=None)
        try:
            self._loop.call_soon_threadsafe(inbox.put_nowait, message)
        except RuntimeError:  # the loop is closed
            raise DaemonError("the daemon has stopped", field=None) from None

    def send(self, data: str) -> None:
        self._push({"type": "websocket.receive", "text": data})

    def recv(self, timeout: float) -> str:
        message = self._get(timeout)
        if message["type"] == "websocket.send":
            text = message.get("text")
            return text if text is not None else bytes(message["bytes"]).decode()
        self._out.put(message)  # keep answering "closed" to later reads
        raise DaemonError(
            f"the daemon closed the connection ({message.get('code', 1006)})", field=None
        )

    def close(self) -> None:
        if self._left:
            return
        with contextlib.suppress(DaemonError):
            self._push({"type": "websocket.disconnect", "code": 1000})
        self._left = True
        with contextlib.suppress(
            concurrent.futures.TimeoutError, concurrent.futures.CancelledError
        ):
            self._future.result(timeout=5)


class DaemonClient:
    """One connection to a daemon. ``call`` requests; ``next_message`` reads subscription
    messages (events received while waiting for a reply are kept in order).

    ``in_process`` (a ``DaemonHandle.in_process``) makes it an in-memory client: no socket,
    the same messages; a refused connection is then a ``DaemonError`` (the WebSocket client
    raises websockets' ``InvalidStatus``)."""

    def __init__(
        self,
        info: DaemonInfo,
        *,
        token: str | None = None,
        origin: str | None = None,
        timeout: float = 5.0,
        in_process: InProcess | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token if token is not None else info.token}"}
        self.timeout = timeout
        self.transport: Transport = "websocket" if in_process is None else "memory"
        self._ws: _Connection
        if in_process is None:
            self._ws = _WebSocketConnection(info, headers, origin, timeout)
        else:
            self._ws = _MemoryConnection(in_process, headers, origin, timeout)
        self._ids = itertools.count(1)
        self._pending: deque[dict[str, Any]] = deque()
        self._positions: dict[str, tuple[int, int]] = {}

    def send_raw(self, data: str) -> None:
        """Send ``data`` as is (to test how the daemon meets bad input)."""
        self._ws.send(data)

    def _recv(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self._ws.recv(self.timeout))
        return message

    def position(self, session_id: str) -> tuple[int, int]:
        """``(epoch, seq)`` of the last event handed out for ``session_id`` (``(0, 0)``: none).

        Keep it across connections and resubscribe with ``epoch=``/``after=`` from it.
        """
        return self._positions.get(session_id, (0, 0))

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send one request and return its reply (``ok`` or ``error``)."""
        request_id = next(self._ids)
        self._ws.send(json.dumps({"op": op, "id": request_id, **fields}))
        return self.reply(request_id)

    def reply(self, request_id: Any) -> dict[str, Any]:
        """The reply to ``request_id`` (or to an unparseable message, with ``id`` null)."""
        while True:
            message = self._recv()
            if message["type"] in ("ok", "error") and message.get("id") == request_id:
                return message
            self._pending.append(message)

    def call(self, op: str, **fields: Any) -> Any:
        """``request``, returning the result or raising ``DaemonError``."""
        reply = self.request(op, **fields)
        if reply["type"] == "error":
            raise DaemonError(
                reply["message"], field=reply.get("field"), resume_at=reply.get("resume_at")
            )
        return reply["result"]

    def next_message(self) -> dict[str, Any]:
        """The next subscription message (``event`` or ``stale``)."""
        message = self._pending.popleft() if self._pending else self._recv()
        if message.get("type") == "event":
            self._positions[message["session_id"]] = (message["epoch"], message["event"]["seq"])
        return message

    def events(self, count: int) -> list[dict[str, Any]]:
        """The next ``count`` events (as dicts with their ``seq``)."""
        events: list[dict[str, Any]] = []
        while len(events) < count:
            message = self.next_message()
            if message["type"] != "event":
                raise AssertionError(f"expected an event, got {message!r}")
            events.append(message["event"])
        return events

    def close(self) -> None:
        self._ws.close()

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
