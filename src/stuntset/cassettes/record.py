"""Recording real traffic: a proxy in front of the real upstream that passes every request
through, streams the response back as it arrives, and keeps it *as streamed* — each SSE event
its own frame, with its offset from the request — for a cassette.

::

    with record("https://api.openai.com/v1", "tests/cassettes/test_x.jsonl") as recording:
        client = OpenAI(base_url=recording.url)
        ...                       # on exit: scrubbed, scanned, written atomically

Nothing is written when the block fails (a half-recorded session would replay wrongly).
Forwards with ``httpx2`` (a base dependency).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from stuntset.cassettes._loopback import read_body, serving
from stuntset.cassettes.format import (
    Cassette,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    wire_of,
)
from stuntset.cassettes.recording_file import FileState, write_recording
from stuntset.cassettes.scrub import Scrubber
from stuntset.wires import stream_framing

__all__ = ["Recording", "RecordingProxy", "record", "wire_of"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

#: Not forwarded in either direction (per-connection, or recomputed by the client library).
_HOP = frozenset(
    {
        "host",
        "content-length",
        "connection",
        "keep-alive",
        "transfer-encoding",
        "content-encoding",
        "upgrade",
    }
)


def _json_or_text(data: bytes) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return data.decode("utf-8", errors="replace")


class RecordingProxy:
    """An ASGI app forwarding to ``upstream`` and recording each exchange.

    Every request goes through one pooled ``httpx2.AsyncClient`` (keep-alive to the upstream,
    one TLS set-up per connection, not per request), made on the first request and closed
    when the server's lifespan ends (``record`` runs it with ``lifespan="on"``) or by
    ``aclose()``."""

    def __init__(self, upstream: str, *, timeout: float = 600.0) -> None:
        self.upstream = upstream.rstrip("/")
        self.timeout = timeout
        self.interactions: list[Interaction] = []
        self._lock = threading.Lock()
        self._client: Any = None

    async def aclose(self) -> None:
        """Close the pooled client (a later request makes a new one)."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        import httpx2

        if self._client is None:
            self._client = httpx2.AsyncClient(timeout=self.timeout)
        client = self._client
        body = await read_body(receive)
        path = scope["path"]
        query = scope.get("query_string", b"").decode()
        headers = {
            k.decode().lower(): v.decode()
            for k, v in scope["headers"]
            if k.decode().lower() not in _HOP
        }
        url = self.upstream + path + (f"?{query}" if query else "")
        start = time.monotonic()
        frames: list[Frame] = []
        raw = b""
        async with client.stream(scope["method"], url, content=body, headers=headers) as response:
            out_headers = [
                (k.encode(), v.encode())
                for k, v in response.headers.multi_items()
                if k.lower() not in _HOP
            ]
            await send(
                {
                    "type": "http.response.start",
                    "status": response.status_code,
                    "headers": out_headers,
                }
            )
            framing = stream_framing(response.headers.get("content-type", ""))
            parser = None if framing is None else framing.parser()
            streamed = parser is not None
            # a binary framing's frames are its messages' bytes, as base64
            binary: Literal["base64"] | None = None
            if framing is not None and framing.data_encoding == "base64":
                binary = "base64"
            async for chunk in response.aiter_bytes():
                offset = round(time.monotonic() - start, 6)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if parser is not None:
                    frames += [
                        Frame(t=offset, event=e, data=d, encoding=binary)
                        for e, d in parser.feed(chunk)
                    ]
                else:
                    raw += chunk
            if parser is not None:
                frames += [
                    Frame(t=round(time.monotonic() - start, 6), event=e, data=d, encoding=binary)
                    for e, d in parser.close()
                ]
            # kept before the body ends: once the client has its response, it is recorded
            with self._lock:
                self.interactions.append(
                    Interaction(
                        id=f"i-{len(self.interactions) + 1}",
                        wire=wire_of(path),
                        session=headers.get("x-stuntset-session"),
                        request=RecordedRequest(
                            method=scope["method"],
                            path=path,
                            query=query,
                            headers=headers,
                            body=_json_or_text(body),
                        ),
                        response=RecordedResponse(
                            status=response.status_code,
                            headers=dict(response.headers),
                            frames=frames if streamed else None,
                            body=None if streamed else _json_or_text(raw),
                        ),
                    )
                )
            await send({"type": "http.response.body", "body": b""})

    def cassette(self, *, recorded_by: str = "stuntset record") -> Cassette:
        with self._lock:
            return Cassette(interactions=list(self.interactions), recorded_by=recorded_by)


class Recording:
    """A running recording proxy on ``127.0.0.1``: give clients ``url``."""

    def __init__(self, proxy: RecordingProxy, url: str) -> None:
        self.proxy = proxy
        self.url = url

    def cassette(self) -> Cassette:
        return self.proxy.cassette()

    def stands_for(self) -> str:
        """One line saying which base URL ``url`` stands for and how to give it to a client:
        OpenAI's SDK takes a base URL that ends in ``/v1``, Anthropic's takes the root."""
        upstream = self.proxy.upstream
        path = upstream.split("://", 1)[-1].partition("/")[2].rstrip("/")
        if path.endswith("v1"):
            how = "a client's base URL that ends in /v1 (OpenAI SDK: base_url=...)"
        elif not path:
            how = "a client's root base URL (Anthropic SDK: base_url=...)"
        else:
            how = "a client's base URL"
        return (
            f"{self.url} stands for {upstream}: give it as {how}; "
            f"{self.url}/<path> is forwarded to {upstream}/<path>"
        )


@contextmanager
def record(
    upstream: str,
    path: str | Path | None = None,
    *,
    scrubber: Scrubber | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
) -> Iterator[Recording]:
    """Run a recording proxy for ``upstream``; on a clean exit write the cassette to ``path``."""
    proxy = RecordingProxy(upstream)
    since = FileState.of(path) if path is not None else None
    with serving(proxy, host=host, port=port, name="stuntset-recorder", lifespan="on") as url:
        yield Recording(proxy, url)
    if path is not None and since is not None:
        # under the cassette's lock; merged with what another recorder wrote meanwhile
        write_recording(path, proxy.cassette(), since=since, scrubber=scrubber)
