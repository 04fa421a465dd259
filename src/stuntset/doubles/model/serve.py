"""The model double on a real port: uvicorn (httptools) on ``127.0.0.1:<free port>`` in a
background thread, and ``StandIn``, the object tests hold.

The listening socket is made here with ``IPPROTO_TCP`` and ``TCP_NODELAY`` (asyncio only sets
``TCP_NODELAY`` on accepted sockets whose listener was created that way; without it every
non-streamed response waits ≈ 40 ms for Nagle and delayed ACK). The server stops by itself
when the ``StandIn`` closes, ending any stalled response first.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Collection
from types import TracebackType
from typing import Literal, Self

import uvicorn

from stuntset.errors import UsageError
from stuntset.script import Script

from ._reply import Framing
from .app import ModelApp
from .double import ModelDouble
from .journal import JournalEntry
from .transport import ModelTransport

__all__ = ["LoopbackServer", "StandIn", "serve"]

Provider = Literal["openai", "anthropic"]


def _listening_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, ready: threading.Event) -> None:
        super().__init__(config)
        self._ready = ready

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets)
        finally:
            self._ready.set()


class LoopbackServer:
    """uvicorn serving a ``ModelApp`` on a thread. ``attach(double)`` chooses which double
    answers (one server can serve many tests in turn)."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.app = ModelApp()
        self._sock = _listening_socket(host, port)
        self.host, self.port = self._sock.getsockname()[:2]
        config = uvicorn.Config(
            self.app,
            http="httptools",
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

    def close(self) -> None:
        double = self.app.double
        if double is not None:
            double.closing.set()
        self._server.should_exit = True
        self._thread.join(30)
        self._sock.close()


class StandIn:
    """A model double for one test (or one ``with`` block): a script player, a request
    journal, an in-process transport and, on first use of ``url()``, a loopback server (its
    own, or one shared through ``server_factory``).

    ``url("openai")`` is a base URL for OpenAI clients (``…/openai/v1``), ``url("anthropic")``
    for Anthropic clients (``…/anthropic``); ``scenario=`` gives the base URL of one catalog
    scenario. ``requests`` is the journal; ``verify()`` fails on unused turns and unanswered
    requests (the pytest fixture calls it at teardown).
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        framing: Framing | None = None,
        server_factory: Callable[[], LoopbackServer] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.double = ModelDouble(script, framing=framing) if framing else ModelDouble(script)
        self._transport = ModelTransport(self.double)
        self._server: LoopbackServer | None = None
        self._factory = server_factory
        self._host, self._port = host, port

    # --- what tests use ---

    def play(self, script: Script) -> Self:
        """Answer from ``script`` from now on."""
        self.double.play(script)
        return self

    @property
    def requests(self) -> list[JournalEntry]:
        """Every request received, in arrival order (secrets redacted)."""
        return self.double.requests

    def transport(self) -> ModelTransport:
        """The in-process transport (``httpx2``/``httpx``, sync and async) of this double."""
        return self._transport

    def start(self) -> Self:
        """Start the loopback server now (``url()`` starts it on first use)."""
        if self._server is None:
            if self._factory is not None:
                self._server = self._factory()
            else:
                self._server = LoopbackServer(host=self._host, port=self._port)
            self._server.attach(self.double)
        return self

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (starts the server)."""
        server = self.start()._server
        assert server is not None
        return server.base_url

    def url(self, provider: Provider = "openai", *, scenario: str | None = None) -> str:
        """The base URL to give a client of ``provider`` (starts the server)."""
        if provider not in ("openai", "anthropic"):
            raise UsageError(
                f"url({provider!r}): the model double speaks 'openai' (Chat Completions and "
                f"Responses) and 'anthropic' (Messages)"
            )
        prefix = f"/scenarios/{scenario}" if scenario else ""
        suffix = "/openai/v1" if provider == "openai" else "/anthropic"
        return self.base_url + prefix + suffix

    def verify(self, *, allow_unused_turns: bool | Collection[str] = False) -> None:
        """``ScriptExhausted`` if a request found no turn; ``UnusedTurns`` if turns were left."""
        __tracebackhide__ = True
        self.double.verify(allow_unused_turns=allow_unused_turns)

    def close(self) -> None:
        """End stalled responses and stop the server if this stand-in started it."""
        self.double.close()
        if self._server is not None:
            if self._factory is None:
                self._server.close()
            else:
                self._server.attach(None)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def serve(
    script: Script | None = None,
    *,
    framing: Framing | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
) -> StandIn:
    """A ``StandIn`` playing ``script`` with its loopback server already running::

    with stuntset.serve(script) as stand_in:
        client = OpenAI(base_url=stand_in.url("openai"), api_key="test")
    """
    return StandIn(script, framing=framing, host=host, port=port).start()
