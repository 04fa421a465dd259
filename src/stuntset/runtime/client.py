"""``DaemonClient``: a small synchronous WebSocket client of the daemon, for tests and demos.

It needs the ``websockets`` package (a test dependency, imported on first use).
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from typing import Any

from stuntset.errors import DaemonError
from stuntset.runtime.protocol import MAX_MESSAGE, DaemonInfo

__all__ = ["DaemonClient", "DaemonError"]


class DaemonClient:
    """One WebSocket connection to a daemon. ``call`` requests; ``next_message`` reads
    subscription messages (events received while waiting for a reply are kept in order)."""

    def __init__(
        self,
        info: DaemonInfo,
        *,
        token: str | None = None,
        origin: str | None = None,
        timeout: float = 5.0,
    ) -> None:
        from websockets.sync.client import connect  # a base dependency, loaded when used

        headers = {"Authorization": f"Bearer {token if token is not None else info.token}"}
        self.timeout = timeout
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
        self._ids = itertools.count(1)
        self._pending: deque[dict[str, Any]] = deque()
        self._positions: dict[str, tuple[int, int]] = {}

    def send_raw(self, data: str) -> None:
        """Send ``data`` as is (to test how the daemon meets bad input)."""
        self._ws.send(data)

    def _recv(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self._ws.recv(timeout=self.timeout))
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
