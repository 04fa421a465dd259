"""The logic behind the ``stand_in`` fixture and marker, kept out of the pytest plugin so the
plugin stays a few lines and this stays usable (and testable) without pytest.

Marker: ``@pytest.mark.stand_in(script_or_scenario_or_path=None, *, allow_unused_turns=False,
framing=None, **scenario_params)``. Without a marker the fixture starts with an empty script:
call ``stand_in.play(script)``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stuntset._plugin_support import script_from
from stuntset.errors import UsageError
from stuntset.script import Script
from stuntset.wires import Framing

from .serve import StandIn

if TYPE_CHECKING:
    from ._loopback_server import LoopbackServer

__all__ = ["MARKER_HELP", "SharedServer", "stand_in_from_marker"]

MARKER_HELP = (
    "stand_in(script_or_scenario_or_path=None, *, allow_unused_turns=False, framing=None, "
    "**scenario_params): configure the stand_in fixture (a model double: OpenAI Chat, "
    "Responses and Anthropic Messages, in-process via .transport() or over loopback via .url())"
)


class SharedServer:
    """One loopback server per test session (per xdist worker), started on first use; each
    test's ``StandIn`` attaches its own double to it, so tests never share turns or journal."""

    def __init__(self) -> None:
        self._server: LoopbackServer | None = None
        self._lock = threading.Lock()

    def get(self) -> LoopbackServer:
        with self._lock:
            if self._server is None:
                from ._loopback_server import LoopbackServer  # uvicorn: only when used

                self._server = LoopbackServer()
            return self._server

    def open_connections(self) -> frozenset[tuple[str, int]]:
        """The client connections open on the server now (none if it has not started)."""
        with self._lock:
            server = self._server
        return server.open_connections() if server is not None else frozenset()

    def close(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.close()
                self._server = None


def stand_in_from_marker(
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    where: str,
    server: SharedServer | None = None,
    base: Path | None = None,
) -> tuple[StandIn, bool | list[str]]:
    """The fixture's ``StandIn`` and its ``allow_unused_turns`` option, from a marker."""
    options = dict(kwargs)
    allow = options.pop("allow_unused_turns", False)
    if not isinstance(allow, bool) and not (
        isinstance(allow, list | tuple) and all(isinstance(n, str) for n in allow)
    ):
        raise UsageError(
            f"{where}: allow_unused_turns must be True/False or a list of turn names, got {allow!r}"
        )
    framing = options.pop("framing", None)
    if framing is not None and not isinstance(framing, Framing):
        raise UsageError(
            f"{where}: framing must be a stuntset.doubles.model.Framing, got {framing!r}"
        )
    script: Script | None = script_from(args[0], options, where, base) if args else None
    if not args and options:
        raise UsageError(f"{where}: scenario parameters {sorted(options)} given without a scenario")
    stand_in = StandIn(script, framing=framing, server_factory=server.get if server else None)
    return stand_in, allow if isinstance(allow, bool) else list(allow)
