"""uvicorn on a thread, as the loopback servers run it (the model double's, the recording
proxy's and the replay server's): a server that says when its start-up is over.

Their listening socket is ``stuntset._bind.listening_socket`` (one function for every server):
made with ``IPPROTO_TCP`` and ``TCP_NODELAY`` (asyncio only sets ``TCP_NODELAY`` on accepted
sockets whose listener was created that way; without it every non-streamed response waits
≈ 40 ms for Nagle and delayed ACK).
"""

from __future__ import annotations

import asyncio
import socket
import threading

import uvicorn

__all__ = ["ReadyServer"]


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
