"""``StandIn``, the object tests hold: a model double with its in-process transport and, on
first use of ``url()``, a loopback server (uvicorn, in ``_loopback_server``, imported only
then). The server stops by itself when the ``StandIn`` closes, ending any stalled response
first.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from stuntset.errors import UsageError
from stuntset.script import Script
from stuntset.wires import API_PROVIDERS, Framing, ProviderName

from .double import ModelDouble
from .journal import JournalEntry
from .transport import ModelTransport, script_of

if TYPE_CHECKING:
    from ._loopback_server import LoopbackServer

__all__ = ["LoopbackServer", "StandIn", "serve"]

Provider = ProviderName


def __getattr__(name: str) -> object:
    # the server (uvicorn) loads when first needed: a stand-in used in-process never starts it
    if name in ("LoopbackServer", "_Server", "_listening_socket"):
        from . import _loopback_server

        return getattr(_loopback_server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class StandIn:
    """A model double for one test (or one ``with`` block): a script player, a request
    journal, an in-process transport and, on first use of ``url()``, a loopback server (its
    own, or one shared through ``server_factory``).

    ``url(provider)`` is the base URL for that provider's clients, for each of
    ``stuntset.wires.API_PROVIDERS``: ``url("openai")`` is ``…/openai/v1`` (Chat and Responses),
    and so on (``ApiProvider.client_path``); ``scenario=`` gives the base URL of one catalog
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
        """Answer from ``script`` from now on, replacing the current one (in pytest, the
        ``stand_in`` marker's): its unused turns are dropped and not reported at teardown,
        where only ``script``'s turns must all be used. The journal keeps the requests already
        received, and ``url()``/``transport()`` stay the same, so a client made earlier keeps
        working. Returns the stand-in, for ``stand_in.play(script).url("openai")``."""
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
                from ._loopback_server import LoopbackServer

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
        known = {api.name: api for api in API_PROVIDERS}
        if provider not in known:
            *rest, last = [f"{api.name!r} ({api.speaks})" for api in API_PROVIDERS]
            speaks = f"{', '.join(rest)} and {last}" if rest else last
            raise UsageError(f"url({provider!r}): the model double speaks {speaks}")
        prefix = f"/scenarios/{scenario}" if scenario else ""
        return self.base_url + prefix + known[provider].client_path

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
    script: Script | str | os.PathLike[str] | None = None,
    *,
    framing: Framing | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    **scenario_params: Any,
) -> StandIn:
    """A ``StandIn`` playing ``script`` with its loopback server already running::

    with stuntset.serve(script) as stand_in:
        client = OpenAI(base_url=stand_in.url("openai"), api_key="test")

    ``script`` is what the ``stand_in`` marker takes: a ``Script``, a scenario name (with its
    parameters as keywords: ``serve("rate_limited", retry_after_ms=10)``) or a ``.toml`` /
    ``.json`` script path (a relative one from the current directory).
    """
    played = script_of(script, scenario_params, "serve()")
    return StandIn(played, framing=framing, host=host, port=port).start()
