"""The WebSocket gate's routing, without a browser: a fake of the part of Playwright's
WebSocketRoute API the gate uses (a page routing sockets, a route and its server side), so
every path runs on every machine and every run (the browser tests reach them by timing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from stuntset.browser import WebSocketGate


class FakeServer:
    def __init__(self) -> None:
        self.sent: list[str | bytes] = []
        self.closed: list[tuple[Any, Any]] = []
        self.on_message_handler: Callable[[str | bytes], None] | None = None

    def send(self, message: str | bytes) -> None:
        self.sent.append(message)

    def on_message(self, handler: Callable[[str | bytes], None]) -> None:
        self.on_message_handler = handler

    def close(self, code: Any = None, reason: Any = None) -> None:
        self.closed.append((code, reason))


class FakeRoute:
    def __init__(self) -> None:
        self.server = FakeServer()
        self.received: list[str | bytes] = []
        self.closed: list[tuple[int, str]] = []
        self.page_handler: Callable[[str | bytes], None] | None = None
        self.close_handler: Callable[[Any, Any], None] | None = None

    def connect_to_server(self) -> FakeServer:
        return self.server

    def on_message(self, handler: Callable[[str | bytes], None]) -> None:
        self.page_handler = handler

    def on_close(self, handler: Callable[[Any, Any], None]) -> None:
        self.close_handler = handler

    def send(self, message: str | bytes) -> None:
        self.received.append(message)

    def close(self, code: int, reason: str) -> None:
        self.closed.append((code, reason))

    def from_server(self, *messages: str | bytes) -> None:
        assert self.server.on_message_handler is not None
        for message in messages:
            self.server.on_message_handler(message)


class FakePage:
    def __init__(self) -> None:
        self.handler: Callable[[Any], None] | None = None
        self.waited = 0

    def route_web_socket(self, url: str, handler: Callable[[Any], None]) -> None:
        self.handler = handler

    def wait_for_timeout(self, ms: float) -> None:
        self.waited += 1

    def connect(self) -> FakeRoute:
        route = FakeRoute()
        assert self.handler is not None
        self.handler(route)
        return route


def gate_and_route() -> tuple[WebSocketGate, FakeRoute, FakePage]:
    page = FakePage()
    gate = WebSocketGate(page)
    return gate, page.connect(), page


def test_frames_pass_both_ways_untouched() -> None:
    gate, route, _ = gate_and_route()
    assert route.page_handler is not None
    route.page_handler("hello server")
    route.from_server("one", b"two")
    assert route.server.sent == ["hello server"]
    assert route.received == ["one", b"two"]
    assert (gate.connections, gate.forwarded, gate.dropped) == (1, 2, 0)


def test_drop_only_the_frames_asked_for() -> None:
    gate, route, _ = gate_and_route()
    gate.drop(1, when=lambda text: "seq" in text)
    route.from_server("ping", '{"seq": 1}', '{"seq": 2}')
    assert route.received == ["ping", '{"seq": 2}']
    assert gate.dropped == 1


def test_hold_then_release_in_order_or_reversed() -> None:
    gate, route, _ = gate_and_route()
    gate.hold()
    route.from_server("a", "b", "c")
    assert (route.received, gate.held) == ([], 3)
    assert gate.release(reverse=True) == 3
    route.from_server("d")
    assert route.received == ["c", "b", "a", "d"]


def test_a_frame_held_for_a_socket_that_closed_is_not_sent() -> None:
    gate, route, _ = gate_and_route()
    gate.hold()
    route.from_server("late")
    assert route.close_handler is not None
    route.close_handler(1000, "bye")  # the page closed its socket
    assert route.server.closed == [(1000, "bye")]
    assert gate.release() == 1
    assert route.received == []


def test_disconnect_after_n_frames_closes_both_sides_once() -> None:
    gate, route, _ = gate_and_route()
    gate.disconnect_after(2)
    route.from_server("a", "b", "c")
    assert route.received == ["a", "b"]  # the third came after the close
    assert route.closed == [(4000, "stuntset WebSocketGate: disconnect")]
    assert route.server.closed == [(None, None)]
    assert gate.disconnects == 1
    gate.disconnect()  # nothing open any more
    assert gate.disconnects == 1


def test_disconnect_now_closes_every_open_socket() -> None:
    gate, first, page = gate_and_route()
    second = page.connect()
    gate.disconnect()
    assert first.closed == second.closed == [(4000, "stuntset WebSocketGate: disconnect")]
    assert gate.disconnects == 2


def test_wait_for_keeps_the_page_busy_and_times_out_naming_itself() -> None:
    gate, _, page = gate_and_route()
    looks = iter([False, False, True])
    gate.wait_for(lambda: next(looks))
    assert page.waited == 2
    with pytest.raises(TimeoutError, match="condition not met in 0 s"):
        gate.wait_for(lambda: False, timeout=0)
