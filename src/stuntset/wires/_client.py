"""A minimal client of a wire, as the demo and the catalog play a scenario through it: the
request it sends, what it reads of each streamed event, and the tool round it sends back.

It reads what any SDK reads and no more, so a fault shows as a client would see it (an
in-band error, an event out of order, no terminal event).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Seen", "WireClient"]


@dataclass
class Seen:
    """What the client saw for one model response."""

    status: int = 0
    events: int = 0
    text: str = ""
    calls: list[tuple[str, str]] = field(default_factory=list)
    terminal: bool = False
    problem: str = ""
    started: int = 0

    def summary(self) -> str:
        if self.problem:
            return self.problem
        if self.status != 200:
            return f"HTTP {self.status}"
        parts = [f"{len(self.text)} chars"] + [f"call {name}" for name, _ in self.calls]
        return ", ".join(parts) + ("" if self.terminal else ", no terminal event")


@dataclass(frozen=True, slots=True)
class WireClient:
    """How the demo client speaks one wire."""

    #: the path (and query) it posts to
    path: str
    #: the streamed request body for a conversation so far
    request: Callable[[list[dict[str, Any]]], dict[str, Any]]
    #: the first message of a conversation
    user: Callable[[str], dict[str, Any]]
    #: one streamed event (its SSE ``event:`` name and JSON payload) into ``Seen``
    apply: Callable[[str, dict[str, Any], Seen], None]
    #: the history items that answer the calls ``Seen`` holds (each with ``ok``)
    tool_round: Callable[[Seen], list[dict[str, Any]]]


def openai_user(prompt: str) -> dict[str, Any]:
    """A user message as OpenAI and Anthropic take it."""
    return {"role": "user", "content": prompt}
