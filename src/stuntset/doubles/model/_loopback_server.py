"""The loopback server itself: uvicorn (httptools) on ``127.0.0.1:<free port>`` in a
background thread. Kept apart from ``serve`` so that in-process use never imports uvicorn.

The listening socket is ``stuntset._bind.listening_socket`` and the thread's server
``stuntset._uvicorn_server``'s (both shared with the cassettes' recording proxy and replay
server). The server stops by itself when it is
closed, ending any stalled response first.
"""

from __future__ import annotations

import asyncio
import threading

import uvicorn

from stuntset._bind import listening_socket
from stuntset._resources import LONG_LIVED
from stuntset._uvicorn_server import ReadyServer

from ._lane import lane_protocol
from .app import ModelApp
from .double import ModelDouble

__all__ = ["LoopbackServer"]


#: The names this module has always given them (tests and ``serve`` read them here).
_listening_socket = listening_socket
_Server = ReadyServer


class LoopbackServer:
    """uvicorn serving a ``ModelApp`` on a thread. ``attach(double)`` chooses which double
    answers (one server can serve many tests in turn)."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        # it outlives tests (one per session): its listening socket and its loop's self-pipe are
        # not a test's leak, and its client connections are judged by stand_in's own check
        with LONG_LIVED.opened_here():
            self._start(host, port)
        LONG_LIVED.add_server(self.host, self.port)

    def _start(self, host: str, port: int) -> None:
        self.app = ModelApp()
        self._sock = _listening_socket(host, port)
        self.host, self.port = self._sock.getsockname()[:2]
        config = uvicorn.Config(
            self.app,
            http=lane_protocol(self.app),
            loop="asyncio",
            lifespan="off",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=1,
        )
        ready = threading.Event()
        self._server = _Server(config, ready)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._sock]},
            name=f"stuntset-model-double:{self.port}",
            daemon=True,
        )
        self._thread.start()
        ready.wait(30)
        if not self._server.started:
            self.close()
            raise RuntimeError(f"stuntset: the model double could not start on {host}:{port}")

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def attach(self, double: ModelDouble | None) -> None:
        self.app.double = double

    def open_connections(self) -> frozenset[tuple[str, int]]:
        """The peer addresses of the client connections open now (read on the server's loop)."""

        async def peers() -> frozenset[tuple[str, int]]:
            connections = self._server.server_state.connections
            return frozenset(peer for c in connections if (peer := getattr(c, "client", None)))

        if not self._server.started or self._server.should_exit:
            return frozenset()
        return asyncio.run_coroutine_threadsafe(peers(), self._server.loop).result(30)

    def close(self) -> None:
        double = self.app.double
        if double is not None:
            double.closing.set()
        self._server.should_exit = True
        self._thread.join(30)
        self._sock.close()
        LONG_LIVED.remove_server(self.host, self.port)
