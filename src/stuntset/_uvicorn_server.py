"""uvicorn on a thread, as the loopback servers run it (the model double's, the recording
proxy's and the replay server's): a server that says when its start-up is over.

Their listening socket is ``stuntset._bind.listening_socket`` (one function for every server):
made with ``IPPROTO_TCP`` and ``TCP_NODELAY`` (asyncio only sets ``TCP_NODELAY`` on accepted
sockets whose listener was created that way; without it every non-streamed response waits
≈ 40 ms for Nagle and delayed ACK).

``PromptServer`` stops as soon as it is told to: uvicorn's main loop checks ``should_exit``
on a 0.1 s tick and its shutdown polls the open connections every 0.1 s, so every stop took
0.1–0.3 s; here setting ``should_exit`` (from any thread, or a signal handler) wakes the main
loop, and the shutdown waits on the connections and tasks in 1 ms steps. The tick's other
work (the ``date`` header once a second) still runs every 0.1 s.

``header_deadline(seconds)`` is uvicorn's httptools protocol with a deadline for a request's
headers: uvicorn has none (``timeout_keep_alive`` only closes a connection that sends
nothing after a response), so a client that sends half a request header held its
connection forever. A connection gets ``seconds`` from its accept, and again from the end
of each response, to send a whole request head; else it is closed. (``stuntset serve`` has
its own sweep for this and more: ``stuntset.doubles.model._server``.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HEADER_TIMEOUT", "PromptServer", "ReadyServer", "header_deadline"]

#: Seconds a connection has to send a request's headers (from its accept, or from the end
#: of its last response) before it is closed.
HEADER_TIMEOUT = 10.0


_logger = logging.getLogger("uvicorn.error")

#: The shutdown's poll of open connections and tasks (uvicorn's own: 0.1 s).
_POLL = 0.001


class PromptServer(uvicorn.Server):
    """A uvicorn server whose stop does not wait on a poll tick (see the module's doc)."""

    #: uvicorn's tick: the ``date`` header and the request limit are looked at this often.
    tick = 0.1

    def __init__(self, config: uvicorn.Config) -> None:
        self._wake: asyncio.Event | None = None
        self._wake_loop: asyncio.AbstractEventLoop | None = None
        self._exit = False
        super().__init__(config)

    @property
    def should_exit(self) -> bool:
        return self._exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        self._exit = value
        loop, wake = self._wake_loop, self._wake
        if value and loop is not None and wake is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: already stopped
                loop.call_soon_threadsafe(wake.set)

    async def main_loop(self) -> None:
        self._wake = asyncio.Event()
        self._wake_loop = asyncio.get_running_loop()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.tick)
            should_exit = await self.on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's shutdown, polling every millisecond instead of every 0.1 s."""
        _logger.info("Shutting down")
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        try:
            await asyncio.wait_for(
                self._until_idle(), timeout=self.config.timeout_graceful_shutdown
            )
        except TimeoutError:
            _logger.error(
                "Cancel %s running task(s), timeout graceful shutdown exceeded",
                len(self.server_state.tasks),
            )
            for task in self.server_state.tasks:
                task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
        if not self.force_exit:
            await self.lifespan.shutdown()

    async def _until_idle(self) -> None:
        await asyncio.sleep(0)  # the connections' shutdown callbacks run first
        while self.server_state.connections and not self.force_exit:
            await asyncio.sleep(_POLL)
        while self.server_state.tasks and not self.force_exit:
            await asyncio.sleep(_POLL)
        for server in self.servers:
            await server.wait_closed()


class ReadyServer(PromptServer):
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


def header_deadline(seconds: float = HEADER_TIMEOUT) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol, closing a connection that has not sent a whole request
    head within ``seconds`` of its accept or of the end of its last response (uvicorn's
    ``http=`` option)."""

    class HeaderDeadline(HttpToolsProtocol):
        _deadline: asyncio.TimerHandle | None = None

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(seconds, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and not self.pipeline:
                self._arm()  # the next request's head is due (a pipelined one has come)

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderDeadline
