"""The floor for the load cases: uvicorn (httptools) + a raw ASGI app answering every request
with the same canned response, in its own process (``python -m bench.cases._floor_server
BODY_FILE``; prints its port). The listener is made with ``IPPROTO_TCP`` and ``TCP_NODELAY``,
as ``stuntset serve``'s is."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import uvicorn


def main() -> None:
    body = Path(sys.argv[1]).read_bytes()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    start = {"type": "http.response.start", "status": 200, "headers": headers}
    end = {"type": "http.response.body", "body": body, "more_body": False}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send(start)
        await send(end)

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
