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
