"""A WebSocket fault gate between a page and its server (Playwright's ``route_web_socket``).

Every frame from the page goes to the server untouched; frames from the server pass through
the gate, which can **drop** the next frames, **hold** them (a delay that lasts until
``release()``: no timer), **reorder** the held ones, or **disconnect** the page's socket
after a number of frames (the server's side is closed too). The page sees a real
WebSocket; the gate counts what it forwarded, dropped and closed, for the test to assert on.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

__all__ = ["WebSocketGate"]

#: A ``/ws`` path, with or without a query (the console's socket carries ``?token=``).
_WS = re.compile(r".*/ws(\?.*)?$")


class WebSocketGate:
    """Route the WebSockets of ``page`` whose URL matches ``url`` (a glob or a regular
    expression; default: a path ending ``/ws``, with or without a query) through the gate."""

    def __init__(self, page: Any, url: str | re.Pattern[str] = _WS) -> None:
        self.forwarded = 0
        self.dropped = 0
        self.disconnects = 0
        self.connections = 0
        self._drop = 0
        self._drop_when: Callable[[str], bool] | None = None
        self._holding = False
        self._held: list[tuple[Any, str | bytes]] = []
        self._disconnect_after: int | None = None
        self._routes: list[Any] = []
        self._page = page
        self._servers: dict[int, Any] = {}
        page.route_web_socket(url, self._route)

    # --- what a test asks for ---

    def drop(self, count: int = 1, *, when: Callable[[str], bool] | None = None) -> None:
        """Drop the next ``count`` server frames (those for which ``when`` is true)."""
        self._drop, self._drop_when = count, when

    def hold(self) -> None:
        """Hold server frames from now on, until ``release()``."""
        self._holding = True

    def release(self, *, reverse: bool = False) -> int:
        """Send the held frames (in reverse order with ``reverse``: a reorder); stop holding.
        Returns how many were sent."""
        held, self._held, self._holding = self._held, [], False
        for route, message in reversed(held) if reverse else held:
            self._forward(route, message)
        return len(held)

    def disconnect_after(self, frames: int) -> None:
        """Close the page's socket (code 4000) once ``frames`` more server frames passed."""
        self._disconnect_after = self.forwarded + frames

    def disconnect(self) -> None:
        """Close every open socket now."""
        for route in list(self._routes):
            self._close(route)

    @property
    def held(self) -> int:
        return len(self._held)

    def wait_for(self, condition: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait until ``condition()`` holds (``TimeoutError`` after ``timeout`` s). Playwright's
        sync API runs the gate only while the test is inside one of its calls, so this
        keeps one short call going (``wait_for_timeout``) between looks at ``condition``."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"WebSocketGate: condition not met in {timeout} s")
            self._page.wait_for_timeout(5)

    # --- the routing ---

    def _route(self, route: Any) -> None:
        self.connections += 1
        self._routes.append(route)
        server = route.connect_to_server()
        self._servers[id(route)] = server
        route.on_message(server.send)
        server.on_message(lambda message: self._from_server(route, message))
        route.on_close(lambda code, reason: self._gone(route, server, code, reason))

    def _gone(self, route: Any, server: Any, code: int | None, reason: str | None) -> None:
        if route in self._routes:
            self._routes.remove(route)
        server.close(code=code, reason=reason)

    def _from_server(self, route: Any, message: str | bytes) -> None:
        text = message if isinstance(message, str) else message.decode("utf-8", "replace")
        if self._drop and (self._drop_when is None or self._drop_when(text)):
            self._drop -= 1
            self.dropped += 1
            return
        if self._holding:
            self._held.append((route, message))
            return
        self._forward(route, message)

    def _forward(self, route: Any, message: str | bytes) -> None:
        if route not in self._routes:
            return  # its socket has closed meanwhile
        route.send(message)
        self.forwarded += 1
        if self._disconnect_after is not None and self.forwarded >= self._disconnect_after:
            self._disconnect_after = None
            self._close(route)

    def _close(self, route: Any) -> None:
        if route in self._routes:
            self._routes.remove(route)
            self.disconnects += 1
            route.close(code=4000, reason="stuntset WebSocketGate: disconnect")
            server = self._servers.pop(id(route), None)
            if server is not None:
                server.close()
