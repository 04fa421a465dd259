"""The floor for the load cases: uvicorn (httptools) + a raw ASGI app answering every request
with the same canned response, in its own process; prints its port. The listener is made with
``IPPROTO_TCP`` and ``TCP_NODELAY``, as ``stuntset serve``'s is.

- ``python -m bench.cases._floor_server BODY_FILE``: a whole JSON body (``Content-Length``);
- ``python -m bench.cases._floor_server --stream EVENTS_FILE``: a stream, as a JSON object
  ``{"headers": [[name, value], ...], "events": [event, ...]}`` (text as latin-1): the
  headers, then one ``http.response.body`` send per event (the last one ends the response),
  chunked by uvicorn — the framing a real provider shows, one write per event.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import uvicorn


def _whole(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    body = path.read_bytes()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    start = {"type": "http.response.start", "status": 200, "headers": headers}
    return start, [{"type": "http.response.body", "body": body, "more_body": False}]


def _stream(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    canned = json.loads(path.read_text())
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in canned["headers"]]
    events = [e.encode("latin-1") for e in canned["events"]]
    start = {"type": "http.response.start", "status": 200, "headers": headers}
    bodies = [
        {"type": "http.response.body", "body": event, "more_body": i < len(events) - 1}
        for i, event in enumerate(events)
    ]
    return start, bodies


def main() -> None:
    args = sys.argv[1:]
    start, bodies = _stream(Path(args[1])) if args[0] == "--stream" else _whole(Path(args[0]))

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send(start)
        for body in bodies:
            await send(body)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    print(f"floor on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(
        app, http="httptools", loop="asyncio", lifespan="off", access_log=False, log_config=None
    )
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
