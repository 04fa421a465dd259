"""What the fake ``claude``'s session loop (``run``), its turns (``turn``, ``tools``,
``endings``), its faults (``faults``) and its hooks (``hooks``) share: the choice of the
scripted turn that answers a request, the turn-abort signal, the hook-turn error, the interrupt
message and the usage block.

Runs in the fake process (built-ins only, see ``_runtime``).
"""

from __future__ import annotations

from stuntset.doubles.cli._runtime import no_turn_message

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli.claude._process.run import Session

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


def _accepts(match: dict[str, Any] | None, prompt: str, model: str, has_results: bool) -> bool:
    if not match:
        return True
    contains = match.get("contains")
    wanted_model = match.get("model")
    retry_count = match.get("retry_count")
    tool_result = match.get("tool_result")
    return (
        (contains is None or contains in prompt)
        and (wanted_model is None or wanted_model == model)
        and (retry_count is None or retry_count == 0)
        and (tool_result is None or tool_result == has_results)
    )


def choose_turn(
    session: Session, prompt: str, has_results: bool, model: str | None = None
) -> tuple[int, dict[str, Any] | None, str | None]:
    """The first scripted turn with uses left that accepts the prompt (as ``ScriptPlayer``
    chooses), counted in the double's shared state; or an error text naming the miss.
    ``model``: the request's model when it is not the session's (a prompt hook's)."""
    plan = session.rt.plan
    model = model or session.model
    turns: list[dict[str, Any]] = plan["turns"]

    def take(state: dict[str, Any]) -> tuple[int, str | None]:
        left: list[int] = state.setdefault("left", [t["times"] for t in turns])
        played = state.get("played", 0) + 1
        state["played"] = played
        sessions = state.setdefault("sessions", {})
        sessions[session.session_id] = sessions.get(session.session_id, 0) + 1
        for index, turn in enumerate(turns):
            if left[index] and _accepts(turn["match"], prompt, model, has_results):
                left[index] -= 1
                return index, None
        return -1, no_turn_message(state, plan, left, played, prompt, model, "claude")

    index, error = session.rt.state.update(take)
    return index, (turns[index] if index >= 0 else None), error
