"""The server's fast lane (``_lane``): a whole, fault-free reply is written inside the HTTP
parser's callbacks, with the bytes uvicorn's own path sends; everything else — streams,
faults, errors the double raises, requests the lane does not take — goes through uvicorn's
path with the reply the double already made, in order, each request answered once.

Two servers answer side by side over real sockets: the model double's (with the lane) and
plain uvicorn (httptools) running the same ``ModelApp``, each with a deterministic double,
so their responses can be compared byte for byte (the ``date`` header aside)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from stuntset import scenarios
from stuntset.clock import FakeClock
from stuntset.doubles.model._lane import lane_protocol, written_whole
from stuntset.doubles.model._loopback_server import _listening_socket
from stuntset.doubles.model._server import Guard, guarded_protocol
from stuntset.doubles.model.app import ModelApp
from stuntset.doubles.model.double import ModelDouble
from stuntset.ids import SequentialIds
from stuntset.script import HttpError, Match, Script, Text, Turn, TurnRequest
from stuntset.wires._reply import Pause, Reply


def post(path: str, body: object, *, extra: bytes = b"", version: bytes = b"1.1") -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return (
        b"POST %s HTTP/%s\r\nhost: stand-in\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n%s\r\n%s" % (path.encode(), version, len(data), extra, data)
    )


CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
CHAT_STREAM = {**CHAT, "stream": True}
RESPONSES = {"model": "m", "input": "hi"}
ANTHROPIC = {"model": "c", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
GEMINI = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
REQUEST = post("/openai/v1/chat/completions", CHAT)


def double() -> ModelDouble:
    return ModelDouble(
        scenarios.build("happy_path"),
        clock=FakeClock(1_800_000_000),
        ids=SequentialIds(),
        cycle=True,
    )


class Server:
    """uvicorn on a thread with ``http`` as its protocol, serving ``app``."""

    def __init__(self, app: ModelApp, http: Any) -> None:
        self.sock = _listening_socket("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(
            app, http=http, loop="asyncio", lifespan="off", log_config=None, access_log=False
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.thread.start()
        while not self.server.started:  # started within milliseconds; the thread sets it
            self.thread.join(0.01)
            assert self.thread.is_alive()

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()


@pytest.fixture
def pair() -> Iterator[Callable[[bytes], tuple[bytes, bytes]]]:
    """Send the same bytes to the lane's server and to plain uvicorn (each with its own,
    identical double); their raw responses, ``date`` header masked."""
    lane_app, plain_app = ModelApp(double()), ModelApp(double())
    lane, plain = Server(lane_app, lane_protocol(lane_app)), Server(plain_app, "httptools")

    def ask(data: bytes) -> tuple[bytes, bytes]:
        answers = []
        for server in (lane, plain):
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
                answers.append(exchange(sock, data))
        return answers[0], answers[1]

    try:
        yield ask
    finally:
        lane.close()
        plain.close()


def read_response(sock: socket.socket, buffer: bytearray) -> bytes:
    """One whole response from ``sock`` (``Content-Length``, chunked, or to the close);
    bytes of the next response stay in ``buffer``."""
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError(f"closed before a response head: {bytes(buffer)!r}")
        buffer += chunk
    end = buffer.index(b"\r\n\r\n") + 4
    head = bytes(buffer[:end]).lower()
    if head.startswith(b"http/1.1 100 "):  # an interim response: no body, the real one next
        interim = bytes(buffer[:end])
        del buffer[:end]
        return interim + read_response(sock, buffer)
    found = re.search(rb"content-length: (\d+)", head)
    if found:
        total = end + int(found.group(1))
        while len(buffer) < total:
            buffer += sock.recv(65536)
    elif b"transfer-encoding: chunked" in head:
        total = end
        while True:  # chunk by chunk: a pipelined response may follow in the same read
            while b"\r\n" not in buffer[total:]:
                buffer += sock.recv(65536)
            line_end = buffer.index(b"\r\n", total)
            size = int(buffer[total:line_end], 16)
            total = line_end + 2 + size + 2
            while len(buffer) < total:
                buffer += sock.recv(65536)
            if size == 0:
                break
    else:
        while chunk := sock.recv(65536):
            buffer += chunk
        total = len(buffer)
    whole = bytes(buffer[:total])
    del buffer[:total]
    return re.sub(rb"date: [^\r]*\r\n", b"date: <masked>\r\n", whole)


def exchange(sock: socket.socket, data: bytes, count: int = 1) -> bytes:
    sock.sendall(data)
    buffer = bytearray()
    return b"".join(read_response(sock, buffer) for _ in range(count))


@pytest.mark.parametrize(
    "request_bytes",
    [
        REQUEST,
        post("/openai/v1/responses", RESPONSES),
        post("/anthropic/v1/messages", ANTHROPIC, extra=b"anthropic-version: 2023-06-01\r\n"),
        post("/gemini/v1beta/models/g:generateContent", GEMINI),
        post("/openai/v1/chat/completions?x=1", CHAT),
        post("/scenarios/rate_limited/openai/v1/chat/completions", CHAT),
        post("/scenarios/tool_use/anthropic/v1/messages", ANTHROPIC),
        post("/openai/v1/chat/completions", CHAT_STREAM),
        post("/openai/v1/chat/completions", b"{not json"),
        post("/openai/v1/chat/completions", {"model": "m"}),
        post("/openai/v1/nowhere", CHAT),
        post("/openai/v1/chat/completions", CHAT, extra=b"connection: close\r\n"),
        post("/openai/v1/chat/completions", CHAT, extra=b"expect: 100-continue\r\n"),
        post("/openai/v1/chat/completions", CHAT, version=b"1.0"),
        post("/openai/v1/chat%2Fcompletions", CHAT),
        b"GET /openai/v1/models HTTP/1.1\r\nhost: stand-in\r\n\r\n",
        b"POST /openai/v1/chat/completions HTTP/1.1\r\nhost: stand-in\r\n\r\n",
    ],
    ids=[
        "chat",
        "responses",
        "anthropic",
        "gemini",
        "query",
        "rate-limited",
        "tool-use",
        "stream",
        "not-json",
        "no-messages",
        "no-route",
        "connection-close",
        "expect-continue",
        "http-1.0",
        "percent-path",
        "models",
        "no-body",
    ],
)
def test_the_lane_sends_the_bytes_uvicorns_path_sends(
    pair: Callable[[bytes], tuple[bytes, bytes]], request_bytes: bytes
) -> None:
    for _ in range(2):  # the second time from the templates made the first
        lane, plain = pair(request_bytes)
        assert lane == plain
        assert lane.startswith(b"HTTP/1.1 ")


@pytest.mark.parametrize(
    ("script", "requests"),
    [
        (  # the tool round trip's second request, and a matched script: ``handle``'s
            # whole replies, written by the lane
            scenarios.build("tool_use"),
            [
                post("/openai/v1/chat/completions", CHAT),
                post(
                    "/openai/v1/chat/completions",
                    {
                        "model": "m",
                        "messages": [
                            {"role": "user", "content": "hi"},
                            {"role": "tool", "tool_call_id": "call-1", "content": "ok"},
                        ],
                    },
                ),
            ],
        ),
        (
            Script.of(Turn(steps=(Text("for m"),), match=Match(model="m"), times=3)),
            [REQUEST, REQUEST, post("/openai/v1/chat/completions", {**CHAT, "model": "x"})],
        ),
    ],
    ids=["tool-round-trip", "matched"],
)
def test_replies_handle_made_are_written_as_uvicorns_path_writes_them(
    script: Script, requests: list[bytes]
) -> None:
    def make() -> ModelDouble:
        return ModelDouble(script, clock=FakeClock(1_800_000_000), ids=SequentialIds())

    lane_app, plain_app = ModelApp(make()), ModelApp(make())
    lane, plain = Server(lane_app, lane_protocol(lane_app)), Server(plain_app, "httptools")
    try:
        answers = []
        for server in (lane, plain):
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
                answers.append([exchange(sock, data) for data in requests])
    finally:
        lane.close()
        plain.close()
    assert answers[0] == answers[1]
    assert all(a.startswith(b"HTTP/1.1 ") for a in answers[0])


def test_a_whole_reply_is_written_only_if_uvicorn_would_send_it_as_it_is() -> None:
    whole = Reply(
        200,
        [("content-type", "application/json")],
        [b"{}"],
        encoded=[(b"Content-Type", b"application/json"), (b"content-length", b"2")],
    )
    assert written_whole(whole) == (
        b"HTTP/1.1 200 OK\r\n",
        (b"content-type: application/json\r\ncontent-length: 2\r\n\r\n", b"{}"),
    )
    for changed in (
        replace(whole, encoded=None),  # no head yet
        replace(whole, wait=0.5),
        replace(whole, streaming=True),
        replace(whole, status=None),
        replace(whole, actions=[b"{", b"}"]),
        replace(whole, actions=[Pause(1.0)]),
        replace(whole, encoded=[(b"x y", b"1")]),  # a name uvicorn refuses
        replace(whole, encoded=[(b"x-a", b"1\r\n2")]),  # a value it refuses
        replace(whole, encoded=[(b"Connection", b"close")]),  # uvicorn closes after it
    ):
        assert written_whole(changed) is None


def test_a_chunked_body_is_answered_as_uvicorns_path_answers_it(
    pair: Callable[[bytes], tuple[bytes, bytes]],
) -> None:
    data = json.dumps(CHAT).encode()
    chunked = (
        b"POST /openai/v1/chat/completions HTTP/1.1\r\nhost: stand-in\r\n"
        b"transfer-encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)
    )
    lane, plain = pair(chunked)
    assert lane == plain
    assert lane.startswith(b"HTTP/1.1 200 OK\r\n")


def test_pipelined_requests_are_answered_in_order_once_each() -> None:
    app = ModelApp(double())
    server = Server(app, lane_protocol(app))
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            streamed = post("/openai/v1/chat/completions", CHAT_STREAM)
            # a stream (uvicorn's path) with a whole reply pipelined behind it, then two
            # whole replies in one packet
            first = exchange(sock, streamed + REQUEST, count=2)
            second = exchange(sock, REQUEST + REQUEST, count=2)
    finally:
        server.close()
    assert first.index(b"text/event-stream") < first.index(b'"object":"chat.completion"')
    ids = list(dict.fromkeys(re.findall(rb'"id":"(chatcmpl-\d+)"', first + second)))
    assert ids == [b"chatcmpl-1", b"chatcmpl-2", b"chatcmpl-3", b"chatcmpl-4"]
    assert [entry.index for entry in app.double.requests] == [0, 1, 2, 3]  # type: ignore[union-attr]


class Boom(Exception):
    pass


def test_an_error_the_double_raises_is_logged_and_answered_500_as_before(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def explode(request: TurnRequest) -> Turn:
        raise Boom("the turn function broke")

    app = ModelApp(ModelDouble(Script(function=explode)))
    server = Server(app, lane_protocol(app))
    try:
        with (
            caplog.at_level(logging.ERROR, "uvicorn.error"),
            socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock,
        ):
            response = exchange(sock, REQUEST)
    finally:
        server.close()
    assert response.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
    assert response.endswith(b"\r\n\r\nInternal Server Error")
    errors = [r for r in caplog.records if r.getMessage() == "Exception in ASGI application\n"]
    assert len(errors) == 1
    assert isinstance(errors[0].exc_info and errors[0].exc_info[1], Boom)
    assert len(app.double.requests) == 1  # type: ignore[union-attr]


# --- the protocol driven directly: what is written before the event loop runs again ---


class FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return {"sockname": ("127.0.0.1", 1), "peername": ("127.0.0.1", 2)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass


def connection(script: Script | None = None, *, guard: bool = False) -> tuple[Any, FakeTransport]:
    made = ModelDouble(script or scenarios.build("happy_path"), ids=SequentialIds(), cycle=True)
    app = ModelApp(made)
    protocol_class: Any = lane_protocol(app)
    if guard:
        protocol_class = guarded_protocol(
            Guard(request_timeout=10, max_connections=10), protocol_class
        )
    config = uvicorn.Config(app, http=protocol_class, lifespan="off", log_config=None)
    config.load()
    state = ServerState()
    state.default_headers = [(b"date", b"Tue, 01 Dec 2026 00:00:00 GMT"), (b"server", b"x")]
    loop = asyncio.new_event_loop()
    protocol = protocol_class(config=config, server_state=state, app_state={}, _loop=loop)
    transport = FakeTransport()
    protocol.connection_made(transport)
    return protocol, transport


def test_a_whole_reply_is_written_inside_the_parser_callback() -> None:
    for guard in (False, True):
        protocol, transport = connection(guard=guard)
        try:
            protocol.data_received(REQUEST)
            protocol.data_received(REQUEST[:50])
            protocol.data_received(REQUEST[50:])  # a request in two reads
            assert len(transport.writes) == 2  # no task to wait for: written already
            assert not protocol.tasks
            for written in transport.writes:
                assert written.startswith(
                    b"HTTP/1.1 200 OK\r\ndate: Tue, 01 Dec 2026 00:00:00 GMT\r\nserver: x\r\n"
                    b"content-type: application/json\r\nx-request-id: req-"
                )
                assert b'"content":"Hello! How can I help you today?"' in written
            assert protocol.server_state.total_requests == 2
        finally:
            protocol.connection_lost(None)
            protocol.loop.close()


def test_a_request_is_answered_by_the_double_attached_when_its_headers_came() -> None:
    protocol, transport = connection()
    try:
        app = protocol.lane_app
        first = app.double
        protocol.data_received(REQUEST[:-10])
        app.double = None  # detached (the loopback server between tests) mid-body
        protocol.data_received(REQUEST[-10:])
        assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
        assert len(first.requests) == 1
    finally:
        protocol.connection_lost(None)
        protocol.loop.close()


def test_the_request_targets_a_server_remembers_are_bounded() -> None:
    protocol, transport = connection()
    try:
        small = type(protocol)
        small.lane_url_limit = 2
        for n in range(5):
            protocol.data_received(post(f"/openai/v1/chat/completions?n={n}", CHAT))
        assert len(small.lane_urls) <= 2
        assert len(transport.writes) == 5  # each answered on the lane all the same
    finally:
        protocol.connection_lost(None)
        protocol.loop.close()


def test_a_fault_or_a_paused_writer_takes_uvicorns_path() -> None:
    protocol, transport = connection(Script.of([HttpError(status=500)], [Text("ok")]))
    try:
        protocol.data_received(REQUEST)  # an error reply: no pre-encoded head
        assert transport.writes == []
        assert len(protocol.tasks) == 1
        protocol.loop.run_until_complete(asyncio.gather(*protocol.tasks))
        assert transport.writes[0].startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
        del transport.writes[:]
        protocol.pause_writing()
        protocol.data_received(REQUEST)  # the lane writes nothing while writes are paused
        assert transport.writes == []
        assert len(protocol.tasks) == 1
        protocol.resume_writing()
        protocol.loop.run_until_complete(asyncio.gather(*protocol.tasks))
        assert transport.writes[0].startswith(b"HTTP/1.1 200 OK\r\n")
    finally:
        protocol.connection_lost(None)
        protocol.loop.close()


# --- keep-alive: one timer per idle period, the same deadline ---


class Timer:
    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when, self.callback, self.cancelled = when, callback, False

    def cancel(self) -> None:
        self.cancelled = True


class FakeLoop:
    """The loop calls the protocol makes for keep-alive, on a clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0
        self.timers: list[Timer] = []

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        timer = Timer(when, callback)
        self.timers.append(timer)
        return timer

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        return self.call_at(self.now + delay, callback)

    def fire(self) -> None:
        """Run the timers due by now."""
        for timer in [t for t in self.timers if t.when <= self.now and not t.cancelled]:
            self.timers.remove(timer)
            timer.callback()


class ClosingTransport(FakeTransport):
    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


def idle_connection() -> tuple[Any, ClosingTransport, FakeLoop]:
    app = ModelApp(ModelDouble(scenarios.build("happy_path"), ids=SequentialIds(), cycle=True))
    protocol_class: Any = lane_protocol(app)
    config = uvicorn.Config(
        app, http=protocol_class, lifespan="off", log_config=None, timeout_keep_alive=5
    )
    config.load()
    loop = FakeLoop()
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={}, _loop=loop)
    transport = ClosingTransport()
    protocol.connection_made(transport)
    return protocol, transport, loop


def test_keep_alive_arms_one_timer_per_idle_period_with_uvicorns_deadline() -> None:
    protocol, transport, loop = idle_connection()
    for _ in range(100):
        protocol.data_received(REQUEST)
    assert len(transport.writes) == 100
    assert len(loop.timers) == 1  # uvicorn's protocol: 100 timers made and 99 cancelled
    loop.now = 103.0
    protocol.data_received(REQUEST)  # idle again from 103: the deadline moves to 108
    loop.now = 105.0
    loop.fire()
    assert not transport.closed
    assert [t.when for t in loop.timers] == [108.0]
    loop.now = 107.9
    loop.fire()
    assert not transport.closed
    loop.now = 108.0
    loop.fire()
    assert transport.closed  # idle for timeout_keep_alive since its last response


def test_keep_alive_never_closes_a_connection_with_a_request_on_it() -> None:
    protocol, transport, loop = idle_connection()
    protocol.data_received(REQUEST)
    loop.now = 104.0
    protocol.data_received(REQUEST[:40])  # a request under way when the timer fires
    loop.now = 120.0
    loop.fire()
    assert not transport.closed
    assert loop.timers == []
    protocol.data_received(REQUEST[40:])  # its response done: idle again, timer armed
    assert [t.when for t in loop.timers] == [125.0]
    protocol.connection_lost(None)
    assert loop.timers[0].cancelled
