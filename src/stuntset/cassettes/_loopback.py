"""An ASGI app on ``127.0.0.1:<free port>`` for the length of a ``with`` block: what the
recording proxy and the replay server run on (uvicorn with httptools in a thread, on a
``TCP_NODELAY`` listening socket, ``stuntset._bind.listening_socket``, as the model double's
loopback server)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from stuntset._bind import listening_socket

__all__ = ["read_body", "serving"]


async def read_body(receive: Any) -> bytes:
    """The whole request body of an ASGI ``http`` request."""
    body = b""
    while True:
        message = await receive()
        body += bytes(message.get("body", b""))
        if not message.get("more_body"):
            return body


@contextmanager
def serving(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    name: str,
    lifespan: Literal["on", "off"] = "off",
) -> Iterator[str]:
    """Serve ``app`` until the block ends; yields ``http://host:port``. With ``lifespan="on"``
    the app gets the ASGI lifespan's start-up and shut-down (to close what it opened)."""
    import uvicorn

    from stuntset._uvicorn_server import ReadyServer

    sock = listening_socket(host, port)  # a busy or impossible port: UsageError naming it
    bound_host, bound_port = sock.getsockname()[:2]
    ready = threading.Event()
    config = uvicorn.Config(
        app,
        http="httptools",
        loop="asyncio",
        lifespan=lifespan,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=1,
    )
    server = ReadyServer(config, ready)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"{name}:{bound_port}", daemon=True
    )
    thread.start()
    ready.wait(30)
    try:
        if not server.started:
            raise RuntimeError(f"stuntset: {name} could not start on {host}:{port}")
        yield f"http://{bound_host}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()
