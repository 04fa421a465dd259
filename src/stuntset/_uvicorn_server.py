"""uvicorn on a thread, as the loopback servers run it (the model double's, the recording
proxy's and the replay server's): a ``TCP_NODELAY`` listening socket and a server that says
when its start-up is over.

The listening socket is made here with ``IPPROTO_TCP`` and ``TCP_NODELAY`` (asyncio only sets
``TCP_NODELAY`` on accepted sockets whose listener was created that way; without it every
non-streamed response waits ≈ 40 ms for Nagle and delayed ACK).
"""

from __future__ import annotations

import asyncio
import socket
import threading

import uvicorn

__all__ = ["ReadyServer", "nodelay_socket"]


def nodelay_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0: a free port) with ``TCP_NODELAY``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


class ReadyServer(uvicorn.Server):
    """A uvicorn server that sets ``ready`` once its start-up is over (or failed)."""

    def __init__(self, config: uvicorn.Config, ready: threading.Event) -> None:
        super().__init__(config)
        self._ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        try:
            await super().startup(sockets)
        finally:
            self._ready.set()

    def run(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            super().run(sockets=sockets)
        finally:  # ended before its start-up (it raised): nobody waits out the 30 s
            self._ready.set()
