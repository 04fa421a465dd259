"""What the fake ``claude``'s session loop (``run``), its turns (``turn``, ``tools``,
``endings``), its faults (``faults``) and its hooks (``hooks``) share: the choice of the
scripted turn that answers a request, the turn-abort signal, the hook-turn error, the interrupt
message and the usage block.

Runs in the fake process (built-ins only, see ``_runtime``).
"""

from __future__ import annotations

from stuntset.doubles.cli._runtime import take_turn

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli.claude._process.faces import SessionState

__all__ = ["INTERRUPTED", "Abort", "HookTurnError", "choose_turn", "usage"]

INTERRUPTED = "[Request interrupted by user]"


class Abort(Exception):
    """The turn ends early (an interrupt, or a deny with ``interrupt: true``)."""


class HookTurnError(Exception):
    """A prompt or agent hook got no scripted turn, or one the fake cannot play: the turn ends
    with an error result naming it (as when the script has no turn for a request)."""


def usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
    }


def choose_turn(
    session: SessionState, prompt: str, has_results: bool, model: str | None = None
) -> tuple[int, dict[str, Any] | None, str | None]:
    """The first scripted turn with uses left that accepts the prompt (as ``ScriptPlayer``
    chooses), counted in the double's shared state; or an error text naming the miss.
    ``model``: the request's model when it is not the session's (a prompt hook's)."""
    index, error = take_turn(
        session.rt,
        prompt,
        model or session.model,
        "claude",
        has_results=has_results,
        session_id=session.session_id,
    )
    return index, (session.rt.turn(index) if index >= 0 else None), error
