"""What the app-server modules share, owned below them all: a started turn waiting in the
queue (``Queued``), and, for the type checker only, the faces of the server and of a turn
that the other modules use.

``app_server.Server`` owns the process's state (its threads, their settings, the queue, the
active turn); ``app_methods`` reads and changes it through ``ServerState``, a turn
(``app_turn.Turn``) plays on it through the same face, and the tool ops (``app_tools``) play
on a turn through ``ToolTurn``. No module names the one that calls it, so no import circle
closes, not even under ``TYPE_CHECKING`` (tests/unit/test_structure.py).

Runs in the fake process (built-ins only, see ``_runtime``): the protocols are read by the
checker and never defined at run time.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from stuntset.doubles.cli._runtime import Ids, Runtime
    from stuntset.doubles.cli.codex._process.common import Clock, Threads

__all__ = ["Queued"]


class Queued:
    """A started turn waiting to play: its thread, id, input and the scripted turn chosen
    for it when it was started (or the error naming why none was)."""

    def __init__(
        self,
        thread: dict[str, Any],
        turn_id: str,
        prompt: str,
        items: list[Any],
        chosen: dict[str, Any] | None,
        error: str | None,
    ) -> None:
        self.thread = thread
        self.turn_id = turn_id
        self.prompt = prompt
        self.items = items
        self.chosen = chosen
        self.error = error


if TYPE_CHECKING:

    class ActiveTurn(Protocol):
        """The turn playing, as the methods see it (``turn/steer``, ``turn/interrupt``)."""

        thread: dict[str, Any]
        id: str
        ended: bool
        interrupted: bool
        steers: list[list[Any]]

    class ServerState(Protocol):
        """The server's state and output, as the methods and the turns use them."""

        rt: Runtime
        client_name: str
        threads: Threads
        loaded: dict[str, dict[str, Any]]
        settings: dict[str, dict[str, Any]]
        queue: list[Queued]
        clock: Clock
        retries: tuple[int, int]
        next_request: int

        @property
        def active(self) -> ActiveTurn | None: ...

        def notify(self, method: str, params: dict[str, Any]) -> None: ...

        def pump(self, timeout: float | None) -> bool: ...

        def server_request(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None: ...

    class ToolTurn(Protocol):
        """A turn as the tool ops play on it (calls, approvals, questions)."""

        server: ServerState
        rt: Runtime
        thread: dict[str, Any]
        id: str
        item_ids: Ids
        calls: dict[str, dict[str, Any]]
        waiting: list[str]
        last_call: str | None
        tools_called: bool
        after_results: bool

        def notify(self, method: str, **params: Any) -> None: ...

        def item(self, method: str, item: dict[str, Any]) -> None: ...

        def resolved(self, request_id: int) -> None: ...

        def new_id(self) -> str: ...
