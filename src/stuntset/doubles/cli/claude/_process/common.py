"""What the fake ``claude``'s session loop (``run``), its turns (``turn``), its faults
(``faults``) and its hooks (``hooks``) share: the turn-abort signal, the hook-turn error, the
interrupt message and the usage block.

Runs in the fake process (built-ins only, see ``_runtime``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["INTERRUPTED", "Abort", "HookTurnError", "usage"]

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
