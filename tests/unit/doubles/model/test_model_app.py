"""The ASGI app driven by a fake server (an object whose ``send`` is a bound method with a
``transport``, as uvicorn's is): it stops writing the moment the client has gone, reads no
body over ``max_body``, and answers it with the provider's 413."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from stuntset.doubles.model import ModelDouble
from stuntset.doubles.model.app import ModelApp
from stuntset.script import Script, Text, Turn

pytestmark = pytest.mark.anyio

CHAT = json.dumps(
    {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
).encode()


class FakeTransport:
    def __init__(self, closes_after: int | None) -> None:
        self.closes_after = closes_after
        self.writes = 0

    def is_closing(self) -> bool:
        return self.closes_after is not None and self.writes >= self.closes_after


class FakeServer:
    """One request's side of a server: body messages in, response messages out."""

    def __init__(self, body: bytes, *, closes_after: int | None = None, parts: int = 1) -> None:
        self.transport = FakeTransport(closes_after)
        size = max(1, len(body) // parts)
        pieces = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
        self.incoming: list[dict[str, Any]] = [
            {"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1}
            for i, piece in enumerate(pieces)
        ]
        self.read = 0
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        if self.read < len(self.incoming):
            self.read += 1
            return self.incoming[self.read - 1]
        return {"type": "http.disconnect"}  # after the body: the client has gone

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)
        if message["type"] == "http.response.body":
            self.transport.writes += 1


def scope(path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {
        "type": "http",
        "method": "POST",
        "path": path,
        "query_string": b"",
        "headers": headers,
    }


async def test_a_stream_stops_when_the_client_has_gone() -> None:
    script = Script.of(Turn(steps=(Text("x " * 100, chunks=100),), times=2))
    app = ModelApp(ModelDouble(script))
    whole = FakeServer(CHAT)
    await app(scope("/v1/chat/completions", []), whole.receive, whole.send)
    cut = FakeServer(CHAT, closes_after=5)
    await app(scope("/v1/chat/completions", []), cut.receive, cut.send)
    assert whole.transport.writes > 100
    assert cut.transport.writes == 5  # nothing written once the transport was closing


async def test_a_body_over_max_body_gets_the_providers_413_unread() -> None:
    double = ModelDouble(Script.of(Turn(steps=(Text("ok"),), times=5)))
    app = ModelApp(double, max_body=len(CHAT) - 1)
    declared = FakeServer(CHAT)
    headers = [(b"content-length", str(len(CHAT)).encode())]
    await app(scope("/anthropic/v1/messages", headers), declared.receive, declared.send)
    assert declared.read == 0  # refused on its content-length, nothing read
    start, body = declared.sent[0], json.loads(declared.sent[1]["body"])
    assert start["status"] == 413
    assert (b"connection", b"close") in start["headers"]
    assert body["error"]["type"] == "request_too_large"
    streamed = FakeServer(CHAT, parts=4)  # no content-length: counted as it arrives
    await app(scope("/v1/chat/completions", []), streamed.receive, streamed.send)
    assert streamed.sent[0]["status"] == 413
    assert "at most" in json.loads(streamed.sent[1]["body"])["error"]["message"]
    assert [r.status for r in double.requests] == [413, 413]
    fits = FakeServer(CHAT, parts=3)  # exactly the limit
    app.max_body = len(CHAT)
    await app(scope("/v1/chat/completions", []), fits.receive, fits.send)
    assert fits.sent[0]["status"] == 200


async def test_a_client_gone_before_its_body_arrived_gets_nothing() -> None:
    double = ModelDouble(Script.of([Text("never")]))
    app = ModelApp(double, max_body=10**6)
    gone = FakeServer(CHAT, parts=2)
    gone.incoming = gone.incoming[:1]
    await app(scope("/v1/chat/completions", []), gone.receive, gone.send)
    assert gone.sent == []
    assert double.requests == []
    await anyio.lowlevel.checkpoint()


class DroppingTransport(FakeTransport):
    """A transport that can be closed or aborted, as uvicorn's is when the double drops."""

    def __init__(self) -> None:
        super().__init__(None)
        self.ended: str | None = None

    def get_extra_info(self, name: str) -> object:
        return None  # no socket to set SO_LINGER on: abort alone

    def close(self) -> None:
        self.ended = "closed"

    def abort(self) -> None:
        self.ended = "aborted"


class PatientServer(FakeServer):
    """A client that never hangs up by itself."""

    async def receive(self) -> dict[str, Any]:
        if self.read < len(self.incoming):
            return await super().receive()
        await anyio.Event().wait()
        raise AssertionError("unreachable")


async def test_lifespan_is_answered_and_other_scopes_are_ignored() -> None:
    incoming = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return next(incoming)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    app = ModelApp(ModelDouble(Script.of([Text("x")])))
    await app({"type": "lifespan"}, receive, send)
    await app({"type": "websocket"}, receive, send)
    assert sent == [{"type": "lifespan.startup.complete"}, {"type": "lifespan.shutdown.complete"}]


async def test_without_a_double_the_server_says_so_with_503() -> None:
    server = FakeServer(CHAT)
    await ModelApp()(scope("/v1/chat/completions", []), server.receive, server.send)
    assert server.sent[0]["status"] == 503
    assert b"no model double is attached" in server.sent[1]["body"]


async def test_a_content_length_that_is_no_number_is_read_as_the_body_says() -> None:
    server = FakeServer(CHAT)
    app = ModelApp(ModelDouble(Script.of([Text("ok")])), max_body=len(CHAT))
    await app(
        scope("/v1/chat/completions", [(b"content-length", b"lots")]), server.receive, server.send
    )
    assert server.sent[0]["status"] == 200


@pytest.mark.parametrize(("reset", "ended"), [(False, "closed"), (True, "aborted")])
async def test_an_exit_mid_stream_drops_the_connection(reset: bool, ended: str) -> None:
    from stuntset.script import Exit

    double = ModelDouble(Script.of([Text("partial answer", chunks=3), Exit(reset=reset)]))
    server = FakeServer(CHAT)
    server.transport = DroppingTransport()
    await ModelApp(double)(scope("/v1/chat/completions", []), server.receive, server.send)
    assert server.transport.ended == ended
    assert server.sent[0]["status"] == 200
    assert not any(m.get("more_body") is False for m in server.sent)  # never finished


async def test_a_stalled_stream_ends_when_the_client_hangs_up() -> None:
    from stuntset.script import Stall

    double = ModelDouble(Script.of([Text("thinking", chunks=2), Stall()]))
    server = FakeServer(CHAT)  # hangs up once its body is read
    with anyio.fail_after(5):
        await ModelApp(double)(scope("/v1/chat/completions", []), server.receive, server.send)
    assert server.sent[0]["status"] == 200
    assert not any(m.get("more_body") is False for m in server.sent)


async def test_a_stalled_stream_is_dropped_when_the_double_closes() -> None:
    from stuntset.script import Stall

    double = ModelDouble(Script.of([Stall()]))
    server = PatientServer(CHAT)
    server.transport = DroppingTransport()
    app = ModelApp(double)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(app, scope("/v1/chat/completions", []), server.receive, server.send)
            await anyio.lowlevel.checkpoint()
            double.closing.set()
    assert server.transport.ended == "closed"


async def test_delays_pass_on_the_doubles_clock_before_and_inside_the_stream() -> None:
    from stuntset.clock import FakeClock
    from stuntset.script import Delay

    clock = FakeClock()
    script = Script.of([Delay(2.0), Text("a"), Delay(3.0), Text("b")])
    server = FakeServer(CHAT)
    await ModelApp(ModelDouble(script, clock=clock))(
        scope("/v1/chat/completions", []), server.receive, server.send
    )
    assert clock.monotonic() == 5.0
    assert server.sent[0]["status"] == 200
    assert server.sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


@pytest.mark.parametrize("fault", ["stall", "exit"])
async def test_a_fault_before_the_status_line_sends_no_response_at_all(fault: str) -> None:
    from stuntset.script import Exit, Stall

    step = Stall() if fault == "stall" else Exit()
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    server = FakeServer(body)  # not streamed: the fault comes before any byte
    server.transport = DroppingTransport()
    with anyio.fail_after(5):
        await ModelApp(ModelDouble(Script.of([step])))(
            scope("/v1/chat/completions", []), server.receive, server.send
        )
    assert server.sent == []
    assert server.transport.ended == (None if fault == "stall" else "closed")
