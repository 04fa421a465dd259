"""The session and the turn as the other modules of the fake ``claude`` see them, for the
type checker only.

``run.Session`` owns the process's state (options, the model, spent budget, the control
channel); ``turn.TurnRun`` owns one turn's (its message, calls, tokens, retries, what its
hooks decided). The modules that read or change them (``common``, ``turn``, ``tools``,
``endings``, ``faults``, ``hooks``) name these faces, ``SessionState`` and ``TurnState``,
never the modules that call them, so no import circle closes, not even under
``TYPE_CHECKING`` (tests/unit/test_structure.py). Each field a module sets is listed here
once: what a turn's state is can be read in one place.

Runs in the fake process (built-ins only, see ``_runtime``): nothing here is defined at run
time.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from stuntset.doubles.cli._runtime import Ids, Runtime

    class SessionState(Protocol):
        """One fake ``claude`` process (``run.Session``), as its turns and hooks use it."""

        rt: Runtime
        model: str
        permission_mode: str
        partial: bool
        stdio_prompt: bool
        allowed: list[str]
        disallowed: list[str]
        tools: list[str]
        unlisted: list[str]
        mcp_servers: list[dict[str, Any]]
        max_turns: int
        budget: float | None
        spent: float
        cwd: str
        session_id: str
        turns_in_session: int
        hooks: dict[str, Any]
        settings_hooks: Any
        interrupted: bool

        def send(self, message: dict[str, Any]) -> None: ...

        def request(self, request: dict[str, Any]) -> dict[str, Any] | None: ...

        def wait(self, seconds: float | None) -> None: ...

        def state_changed(self, state: str, ids: Ids) -> None: ...

        def result_error(
            self, subtype: str, errors: list[str], num_turns: int, ids: Ids, **extra: Any
        ) -> dict[str, Any]: ...

    class TurnState(Protocol):
        """One turn (``turn.TurnRun``), as its tools, endings, faults and hooks play it."""

        s: SessionState
        ids: Ids
        prompt: str
        index: int
        has_results: bool
        retry_of: int
        retries: int
        retry_results: bool
        message_id: str | None
        message_has_tool: bool
        api_messages: int
        final_text: str
        calls: dict[str, dict[str, Any]]
        waiting: list[str]
        last_call: str | None
        done: set[str]
        checked: set[str]
        denials: list[dict[str, Any]]
        input_tokens: int
        output_tokens: int
        delay_ms: float
        hook_denial: str
        prompt_blocked: dict[str, Any] | None
        stop_feedback: str | None
        stop_hook_active: bool
        hook_stop: bool

        def emit(self, message: dict[str, Any], *, final: bool = False) -> None: ...

        def open_message(self) -> None: ...

        def close_message(self) -> None: ...

        def block_out(
            self,
            block: dict[str, Any],
            start: dict[str, Any],
            deltas: list[dict[str, Any]],
            interval: float,
        ) -> None: ...

        def pause(self, seconds: float) -> None: ...

        def next_turn(self, has_results: bool) -> tuple[int, dict[str, Any] | None, str | None]: ...

        def hooks(self, event: str, tool: str | None, payload: dict[str, Any]) -> str | None: ...

        def prompt_id(self) -> str: ...
