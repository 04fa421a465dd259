"""A cassette served on a real port, for clients that are not in this process — a real agent
CLI, a Node or Go client — with the same matching, sessions, pace and checks as the
in-process transport.

::

    with replay_server("cassettes/test_x.jsonl") as server:
        env = {"ANTHROPIC_BASE_URL": server.url, "OPENAI_BASE_URL": server.url + "/v1"}
        ...                                  # the recorded responses, frame by frame
        server.replayer.verify()             # mismatches and unused interactions

Any base-URL prefix works (``/v1``, ``/anthropic``…): requests are matched by their API
endpoint. A request the cassette does not have gets ``400`` with an error body naming the
nearest recorded one (``x-should-retry: false``, so SDKs do not retry it) and stays in
``replayer.mismatches`` for ``verify()``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager

from stuntset.cassettes._loopback import read_body, serving
from stuntset.cassettes.format import Cassette, load_cassette
from stuntset.cassettes.record import Receive, Scope, Send
from stuntset.cassettes.replay import CassetteMismatch, Pace, Replayer

__all__ = ["ReplayApp", "ReplayServer", "replay_server"]


class ReplayApp:
    """An ASGI app serving a ``Replayer``."""

    def __init__(self, replayer: Replayer) -> None:
        self.replayer = replayer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        import anyio

        body = await read_body(receive)
        try:
            interaction, content = self.replayer.respond(scope["method"], scope["path"], body)
        except CassetteMismatch as mismatch:
            error = {"type": "stuntset_cassette_mismatch", "message": str(mismatch)}
            await _whole(send, 400, {"x-should-retry": "false"}, json.dumps({"error": error}))
            return
        status = interaction.response.status
        if isinstance(content, bytes):
            await _whole(send, status, self.replayer.headers(interaction, False), content)
            return
        headers = self.replayer.headers(interaction, True)
        await send({"type": "http.response.start", "status": status, "headers": _raw(headers)})
        for delay, data in self.replayer.delays(content):
            if delay:
                await anyio.sleep(delay)
            await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": b""})


def _raw(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    skip = {"content-length", "transfer-encoding", "content-encoding", "connection"}
    return [(k.encode(), v.encode()) for k, v in headers.items() if k.lower() not in skip]


async def _whole(send: Send, status: int, headers: dict[str, str], body: bytes | str) -> None:
    data = body.encode() if isinstance(body, str) else body
    await send({"type": "http.response.start", "status": status, "headers": _raw(headers)})
    await send({"type": "http.response.body", "body": data})


class ReplayServer:
    """A running replay server: give clients ``url``; ``replayer`` checks what was played."""

    def __init__(self, replayer: Replayer, url: str) -> None:
        self.replayer = replayer
        self.url = url


@contextmanager
def replay_server(
    cassette: Cassette | Replayer | str | os.PathLike[str],
    *,
    pace: Pace = "none",
    scale: float = 1.0,
    host: str = "127.0.0.1",
    port: int = 0,
) -> Iterator[ReplayServer]:
    """Serve ``cassette`` (a file, a loaded cassette, or a ``Replayer`` shared with an
    in-process transport) on ``host:port`` until the block ends."""
    if isinstance(cassette, Replayer):
        replayer = cassette
    else:
        loaded = cassette if isinstance(cassette, Cassette) else load_cassette(cassette)
        replayer = Replayer(loaded, pace=pace, scale=scale)
    with serving(ReplayApp(replayer), host=host, port=port, name="stuntset-replay") as url:
        yield ReplayServer(replayer, url)
