"""The server's fast lane for streams (``_lane``): a fault-free streamed reply is written by
the lane itself, one write per event — the head with the first event's chunk, each later
event alone, the terminating chunk with the last — and the bytes are those uvicorn's own path
sends for it; a stream with pauses, stalls, drops or faults, or under framing stress, still
takes uvicorn's path; a transport that pauses writing holds the rest of the stream back.

The differential test draws fault-free turns and sends the same streamed request to two
servers over real loopback sockets — the model double's (with the lane), its transport
recording every write, and plain uvicorn (httptools) running the same ``ModelApp`` — each with
its own deterministic double, and compares the bytes (the ``date`` header masked), the events
(the body's chunks), the writes and the journals."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import uvicorn
from hypothesis import given, settings
from hypothesis import strategies as st
from uvicorn.server import ServerState

from stuntset._resources import STREAMS
from stuntset.clock import FakeClock
from stuntset.doubles.model._lane import lane_protocol, written_stream
from stuntset.doubles.model._loopback_server import _listening_socket
from stuntset.doubles.model._server import Guard, guarded_protocol
from stuntset.doubles.model.app import ModelApp
from stuntset.doubles.model.double import ModelDouble
from stuntset.ids import SequentialIds
from stuntset.script import (
    Delay,
    Garbage,
    MalformedJson,
    OutOfOrder,
    Reasoning,
    Script,
    Step,
    StreamCut,
    Text,
    ToolCall,
    Turn,
    Usage,
)
from stuntset.wires import Framing
from stuntset.wires._reply import Pause, Reply

MESSAGES = [{"role": "user", "content": "hi"}]
ANTHROPIC_VERSION = b"anthropic-version: 2023-06-01\r\n"
VERTEX = "/vertex/v1/projects/p/locations/l/publishers"

#: A streamed request per wire the lane writes streams for: (name, path, body, extra head).
STREAMED: list[tuple[str, str, dict[str, Any], bytes]] = [
    (
        "chat",
        "/openai/v1/chat/completions",
        {"model": "m", "stream": True, "messages": MESSAGES},
        b"",
    ),
    (
        "chat-usage",
        "/openai/v1/chat/completions",
        {
            "model": "m",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": MESSAGES,
        },
        b"",
    ),
    ("responses", "/openai/v1/responses", {"model": "m", "input": "hi", "stream": True}, b""),
    (
        "anthropic",
        "/anthropic/v1/messages",
        {"model": "c", "max_tokens": 5, "stream": True, "messages": MESSAGES},
        ANTHROPIC_VERSION,
    ),
    (
        "gemini-sse",
        "/gemini/v1beta/models/g:streamGenerateContent?alt=sse",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        b"",
    ),
    (
        "gemini-array",  # no ``alt=sse``: a JSON array, streamed
        "/gemini/v1beta/models/g:streamGenerateContent",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        b"",
    ),
    (
        "azure",
        "/azure/openai/v1/chat/completions",
        {"model": "m", "stream": True, "messages": MESSAGES},
        b"",
    ),
    (
        "vertex-anthropic",
        f"{VERTEX}/anthropic/models/c:streamRawPredict",
        {
            "anthropic_version": "vertex-2023-10-16",
            "max_tokens": 5,
            "stream": True,
            "messages": MESSAGES,
        },
        b"",
    ),
]


def post(path: str, body: object, extra: bytes = b"") -> bytes:
    data = json.dumps(body).encode()
    return (
        b"POST %s HTTP/1.1\r\nhost: stand-in\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n%s\r\n%s" % (path.encode(), len(data), extra, data)
    )


def make_double(script: Script, **options: Any) -> ModelDouble:
    return ModelDouble(
        script, clock=FakeClock(1_800_000_000), ids=SequentialIds(), cycle=True, **options
    )


# --- two servers over real sockets ---


class RecordingTransport:
    """The socket's transport, every write recorded (the lane's and uvicorn's alike)."""

    def __init__(self, transport: asyncio.Transport, writes: list[bytes]) -> None:
        self._transport = transport
        self.writes = writes

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class Server:
    """uvicorn on a thread serving ``app`` with ``http`` as its protocol."""

    def __init__(self, app: ModelApp, http: Any) -> None:
        self.app = app
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

    def ask(self, data: bytes) -> Response:
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as sock:
            sock.sendall(data)
            return read_response(sock)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()


class Pair:
    """The lane's server (its writes recorded) and plain uvicorn, each with its own double."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.lane = Server(lane_app := ModelApp(), self._recording(lane_app))
        self.plain = Server(ModelApp(), "httptools")

    def _recording(self, app: ModelApp) -> type[Any]:
        writes = self.writes

        class Recording(lane_protocol(app)):  # type: ignore[misc]
            def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
                super().connection_made(RecordingTransport(transport, writes))

        return Recording

    def play(self, make: Any) -> tuple[ModelDouble, ModelDouble]:
        self.lane.app.double, self.plain.app.double = make(), make()
        del self.writes[:]
        return self.lane.app.double, self.plain.app.double

    def close(self) -> None:
        self.lane.close()
        self.plain.close()


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    servers = Pair()
    try:
        yield servers
    finally:
        servers.close()


@dataclass
class Response:
    head: bytes  # the ``date`` header masked
    chunks: list[bytes] | None  # a chunked body's chunks (``None``: not chunked)
    raw: bytes  # the whole response as sent (``date`` masked)


def read_response(sock: socket.socket) -> Response:
    """One response: its head and body (``Content-Length``, chunked, or to the close)."""
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        data = sock.recv(65536)
        if not data:
            return Response(b"", None, mask(buffer))  # dropped before (or in) the head
        buffer += data
    end = buffer.index(b"\r\n\r\n") + 4
    head = buffer[:end]
    found = re.search(rb"\r\ncontent-length: (\d+)", head.lower())
    if b"\r\ntransfer-encoding: chunked\r\n" not in head.lower():
        while (found is None or len(buffer) < end + int(found.group(1))) and (
            data := sock.recv(65536)
        ):
            buffer += data
        return Response(mask(head), None, mask(buffer))
    chunks: list[bytes] = []
    at = end
    while True:  # chunk by chunk, to the terminating one (or the close)
        while b"\r\n" not in buffer[at:]:
            if not (data := sock.recv(65536)):
                return Response(mask(head), chunks, mask(buffer))
            buffer += data
        line_end = buffer.index(b"\r\n", at)
        size = int(buffer[at:line_end], 16)
        after = line_end + 2 + size + 2
        while len(buffer) < after:
            if not (data := sock.recv(65536)):
                return Response(mask(head), chunks, mask(buffer))
            buffer += data
        assert buffer[after - 2 : after] == b"\r\n"
        if size == 0:
            assert len(buffer) == after  # nothing after the terminating chunk
            return Response(mask(head), chunks, mask(buffer))
        chunks.append(buffer[line_end + 2 : line_end + 2 + size])
        at = after


def mask(data: bytes) -> bytes:
    return re.sub(rb"\r\ndate: [^\r]*\r\n", b"\r\ndate: <masked>\r\n", data)


def chunk(event: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(event), event)


# --- the differential test ---

_WORDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40)
_STEPS = st.one_of(
    st.builds(Text, _WORDS, chunks=st.none() | st.integers(1, 6)),
    st.builds(Reasoning, _WORDS, chunks=st.none() | st.integers(1, 4)),
    st.builds(
        ToolCall,
        st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True),
        st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), _WORDS, max_size=3),
        fragments=st.integers(1, 4),
    ),
    st.builds(Usage, st.integers(0, 10_000), st.integers(0, 10_000)),
)


@settings(max_examples=60)
@given(
    steps=st.lists(_STEPS, min_size=1, max_size=4),
    wire=st.sampled_from(STREAMED),
    times=st.integers(1, 2),
)
def test_a_fault_free_stream_is_the_bytes_uvicorns_path_sends_one_write_per_event(
    pair: Pair, steps: list[Step], wire: tuple[str, str, dict[str, Any], bytes], times: int
) -> None:
    _, path, body, extra = wire
    script = Script.of(Turn(steps=tuple(steps), times=times))
    lane_double, plain_double = pair.play(lambda: make_double(script))
    request = post(path, body, extra)
    for _ in range(times):  # a turn played again: the second time from the templates
        del pair.writes[:]
        lane, plain = pair.lane.ask(request), pair.plain.ask(request)
        assert lane.raw == plain.raw
        assert lane.head.startswith(b"HTTP/1.1 200 OK\r\n")
        assert lane.chunks is not None
        assert lane.chunks == plain.chunks
        # one write per event: the head with the first, the terminating chunk with the last
        writes = pair.writes
        assert len(writes) == len(lane.chunks)
        expected = [chunk(event) for event in lane.chunks]
        expected[0] = lane.head + expected[0]
        expected[-1] += b"0\r\n\r\n"
        assert [mask(w) for w in writes] == expected
    assert lane_double.requests == plain_double.requests
    # every stream's end journaled by the time its client has read it (``ModelApp`` records
    # it after its last write, and not for a stream of one write: not compared)
    assert list(lane_double.journal.stream_ends()) == list(range(times))


# --- streams that keep uvicorn's path ---


@pytest.mark.parametrize(
    "script",
    [
        Script.of([Text("a b"), Delay(0.5), Text("c d")]),
        Script.of(Turn(steps=(Text("a b c", interval=0.1),))),
        Script.of([Text("one two three"), StreamCut(after_events=2)]),
        Script.of([Text("one two three"), StreamCut(after_events=2, clean=True)]),
        Script.of([Text("one two"), MalformedJson()]),
        Script.of([Text("one two"), Garbage()]),
        Script.of([Text("one two"), OutOfOrder()]),
    ],
    ids=[
        "delay",
        "interval",
        "stream-cut",
        "clean-cut",
        "malformed-json",
        "garbage",
        "out-of-order",
    ],
)
def test_a_stream_with_a_pause_or_a_fault_takes_uvicorns_path(pair: Pair, script: Script) -> None:
    _, path, body, extra = STREAMED[0]
    pair.play(lambda: make_double(script))
    lane, plain = pair.lane.ask(post(path, body, extra)), pair.plain.ask(post(path, body, extra))
    assert lane.raw == plain.raw
    assert lane.head.startswith(b"HTTP/1.1 200 OK\r\n")
    # uvicorn's path: the head is a write of its own (no ``CoalescingTransport`` here)
    assert mask(pair.writes[0]) == lane.head


def test_a_stream_under_framing_stress_takes_uvicorns_path(pair: Pair) -> None:
    _, path, body, extra = STREAMED[0]
    script = Script.of([Text("one two three")])
    pair.play(lambda: make_double(script, framing=Framing(keepalive=True)))
    lane, plain = pair.lane.ask(post(path, body, extra)), pair.plain.ask(post(path, body, extra))
    assert lane.raw == plain.raw
    assert b": keep-alive" in lane.raw
    assert mask(pair.writes[0]) == lane.head


def test_a_stream_is_written_by_the_lane_only_if_it_is_fault_free_and_framed_by_uvicorn() -> None:
    stream = Reply(
        200,
        [("content-type", "text/event-stream")],
        [b"data: 1\n\n", b"", b"data: 2\n\n"],
        streaming=True,
        encoded=[(b"Content-Type", b"text/event-stream")],
    )
    assert written_stream(stream) == (
        b"HTTP/1.1 200 OK\r\n",
        b"content-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        [b"data: 1\n\n", b"data: 2\n\n"],  # an empty write frames nothing
    )
    for changed in (
        Reply(200, [], [b"{}"], encoded=[]),  # not a stream
        Reply(200, [], [b"x"], streaming=True),  # no head yet
        Reply(200, [], [b"x"], streaming=True, wait=0.5, encoded=[]),
        Reply(None, [], [b"x"], streaming=True, encoded=[]),
        Reply(204, [], [b"x"], streaming=True, encoded=[]),  # uvicorn sends no body with it
        Reply(200, [], [b"x", Pause(1.0)], streaming=True, encoded=[]),
        Reply(200, [], [b"x"], streaming=True, encoded=[(b"x y", b"1")]),
        Reply(200, [], [b"x"], streaming=True, encoded=[(b"x-a", b"1\r\n2")]),
        Reply(200, [], [b"x"], streaming=True, encoded=[(b"Connection", b"close")]),
        Reply(200, [], [b"x"], streaming=True, encoded=[(b"content-length", b"1")]),
        Reply(200, [], [b"x"], streaming=True, encoded=[(b"transfer-encoding", b"chunked")]),
    ):
        assert written_stream(changed) is None


# --- the protocol driven directly: flow control ---


class PausingTransport:
    """A transport whose buffer goes over its high-water mark after ``room`` writes (it then
    pauses its protocol, as asyncio's does), until ``drain()``."""

    def __init__(self, room: int) -> None:
        self.writes: list[bytes] = []
        self.room = room
        self.protocol: Any = None
        self.paused = False
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)
        if len(self.writes) >= self.room and not self.paused:
            self.paused = True
            self.protocol.pause_writing()

    def drain(self, room: int) -> None:
        """The client read everything: room for ``room`` more writes."""
        self.room = len(self.writes) + room
        self.paused = False
        self.protocol.resume_writing()

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: object = None) -> object:
        return {"sockname": ("127.0.0.1", 1), "peername": ("127.0.0.1", 2)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


WORDS = " ".join(f"w{n}" for n in range(10))  # 10 deltas: 13 events on Chat
STREAM_REQUEST = post(*STREAMED[0][1:3])
WHOLE_REQUEST = post("/openai/v1/chat/completions", {"model": "m", "messages": MESSAGES})


def connection(room: int, *, guard: bool = False) -> tuple[Any, PausingTransport]:
    app = ModelApp(make_double(Script.of([Text(WORDS)])))
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
    transport = PausingTransport(room)
    transport.protocol = protocol
    protocol.connection_made(transport)
    return protocol, transport


def events_of(writes: list[bytes]) -> list[bytes]:
    """The chunks in ``writes`` (a stream's writes, head first)."""
    body = b"".join(writes).split(b"\r\n\r\n", 1)[1]
    found, at = [], 0
    while True:
        line_end = body.index(b"\r\n", at)
        size = int(body[at:line_end], 16)
        if size == 0:
            return found
        found.append(body[line_end + 2 : line_end + 2 + size])
        at = line_end + 2 + size + 2


def test_the_whole_stream_is_written_inside_the_parser_callback() -> None:
    for guard in (False, True):
        protocol, transport = connection(room=1000, guard=guard)
        try:
            protocol.data_received(STREAM_REQUEST)
            assert not protocol.tasks  # no task: written already
            assert len(transport.writes) == 13 == len(events_of(transport.writes))
            assert transport.writes[0].startswith(
                b"HTTP/1.1 200 OK\r\ndate: Tue, 01 Dec 2026 00:00:00 GMT\r\nserver: x\r\n"
                b"content-type: text/event-stream; charset=utf-8\r\n"
            )
            assert transport.writes[-1].endswith(b"data: [DONE]\n\n\r\n0\r\n\r\n")
            assert list(protocol.lane_app.double.journal.stream_ends()) == [0]
            assert protocol.server_state.total_requests == 1
        finally:
            protocol.connection_lost(None)
            protocol.loop.close()


def test_a_paused_transport_holds_the_rest_of_the_stream_until_it_resumes() -> None:
    protocol, transport = connection(room=4)
    mark = STREAMS.watch()
    try:
        journal = protocol.lane_app.double.journal
        protocol.data_received(STREAM_REQUEST + WHOLE_REQUEST)  # a request pipelined behind
        assert len(transport.writes) == 4  # nothing written once the transport paused
        assert journal.stream_ends() == {}
        assert STREAMS.since(mark) == [
            "/openai/v1/chat/completions (streamed response over loopback) (still open)"
        ]
        # the second request read and queued behind the stream (not asked of the double yet)
        assert not protocol.tasks
        assert len(protocol.pipeline) == 1
        assert len(journal.entries()) == 1
        transport.drain(room=5)
        assert len(transport.writes) == 9  # five more, then paused again
        transport.drain(room=100)
        assert len(events_of(transport.writes)) == 13 == len(transport.writes)
        assert list(journal.stream_ends()) == [0]
        assert STREAMS.since(mark) == []
        # the stream out, the pipelined request is answered (uvicorn's path), after it
        assert len(protocol.tasks) == 1
        protocol.loop.run_until_complete(asyncio.gather(*protocol.tasks))
        assert transport.writes[13].startswith(b"HTTP/1.1 200 OK\r\n")
        assert b'"object":"chat.completion"' in b"".join(transport.writes[13:])
        assert protocol.server_state.total_requests == 2
        assert [entry.index for entry in journal.entries()] == [0, 1]
    finally:
        STREAMS.unwatch(mark)
        protocol.connection_lost(None)
        protocol.loop.close()


def test_a_client_gone_while_the_stream_waits_ends_it_unfinished() -> None:
    protocol, transport = connection(room=3)
    mark = STREAMS.watch()
    try:
        protocol.data_received(STREAM_REQUEST)
        assert len(transport.writes) == 3
        transport.closed = True
        protocol.connection_lost(None)
        assert STREAMS.since(mark) == []  # released: the client went away
        assert protocol.lane_app.double.journal.stream_ends() == {}  # never ended
        assert len(transport.writes) == 3
    finally:
        STREAMS.unwatch(mark)
        protocol.loop.close()


def test_a_shutdown_while_the_stream_waits_closes_the_connection_once_it_is_out() -> None:
    protocol, transport = connection(room=3)
    try:
        protocol.data_received(STREAM_REQUEST)
        protocol.shutdown()  # uvicorn's graceful shutdown: a response in flight is finished
        assert not transport.closed
        transport.drain(room=100)
        assert len(events_of(transport.writes)) == 13
        assert transport.closed
    finally:
        protocol.connection_lost(None)
        protocol.loop.close()


def test_a_faulted_stream_takes_uvicorns_path_with_the_reply_already_made() -> None:
    app = ModelApp(make_double(Script.of([Text("a b"), StreamCut(after_events=1)], [Text("ok")])))
    protocol_class: Any = lane_protocol(app)
    config = uvicorn.Config(app, http=protocol_class, lifespan="off", log_config=None)
    config.load()
    loop = asyncio.new_event_loop()
    protocol = protocol_class(config=config, server_state=ServerState(), app_state={}, _loop=loop)
    transport = PausingTransport(room=1000)
    transport.protocol = protocol
    protocol.connection_made(transport)
    try:
        protocol.data_received(STREAM_REQUEST)
        assert transport.writes == []  # nothing written in the callback: a task plays it
        assert len(protocol.tasks) == 1
        loop.run_until_complete(asyncio.gather(*protocol.tasks))
        assert transport.closed  # the scripted drop
        assert len(app.double.requests) == 1  # type: ignore[union-attr]
        assert app.double.player.requests == 1  # type: ignore[union-attr]  # one turn played
    finally:
        protocol.connection_lost(None)
        loop.close()
