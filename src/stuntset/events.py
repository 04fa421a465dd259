"""The normalized agent event vocabulary: the one contract every provider adapter emits and
every check consumes.

Events are immutable, typed structs tagged by ``type`` (``"message.delta"``…). Each carries
``run_id``, ``ts`` (seconds since the epoch, from the clock seam) and, once persisted in a
session log, a per-session ``seq``. ``encode``/``decode`` round-trip every event exactly.

A run is many small events, never "one whole message": ``run.started``, then deltas, tool
calls, requests and their resolutions, usage, and exactly one terminal event —
``run.completed``, ``run.crashed`` or ``run.killed``. ``stuntset.contract`` checks that grammar.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, Literal, TypeAlias

import msgspec

__all__ = [
    "TERMINAL_TYPES",
    "ApprovalRequested",
    "ApprovalResolved",
    "CrashKind",
    "Decision",
    "Event",
    "EventBase",
    "InputRequested",
    "InputResolved",
    "MessageCompleted",
    "MessageDelta",
    "ReasoningCompleted",
    "ReasoningDelta",
    "RunCompleted",
    "RunCrashed",
    "RunKilled",
    "RunStarted",
    "ToolCompleted",
    "ToolStarted",
    "Usage",
    "decode",
    "decode_lines",
    "encode",
    "encode_lines",
    "is_terminal",
    "to_builtins",
    "type_of",
    "with_seq",
]

#: How a run crashed, as far as a caller needs to know to decide what to do next.
CrashKind: TypeAlias = Literal[
    "spawn_failed",  # the runtime could not be started (missing binary, bad path)
    "auth",  # credentials missing, invalid or expired
    "rate_limited",  # 429 or the runtime's equivalent
    "overloaded",  # 529 / 503 / in-band overloaded_error
    "http",  # another HTTP status error
    "protocol",  # the wire broke: cut stream, malformed JSON, garbage, out-of-order events
    "exited",  # the runtime process exited without finishing the run
    "timeout",  # the runtime did not answer in time
    "internal",  # anything else
]

#: An approval decision.
Decision: TypeAlias = Literal["allow", "deny"]


class EventBase(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", omit_defaults=True):
    """Fields every event carries."""

    run_id: str
    ts: float
    seq: int | None = None

    terminal: ClassVar[bool] = False

    @property
    def type(self) -> str:
        """The event's ``type`` tag (``"message.delta"``…)."""
        return str(self.__struct_config__.tag)


class RunStarted(EventBase, frozen=True, kw_only=True, tag="run.started"):
    session_id: str
    provider: str
    model: str | None = None


class MessageDelta(EventBase, frozen=True, kw_only=True, tag="message.delta"):
    item_id: str
    text: str


class MessageCompleted(EventBase, frozen=True, kw_only=True, tag="message.completed"):
    item_id: str
    text: str


class ReasoningDelta(EventBase, frozen=True, kw_only=True, tag="reasoning.delta"):
    item_id: str
    text: str


class ReasoningCompleted(EventBase, frozen=True, kw_only=True, tag="reasoning.completed"):
    item_id: str
    text: str


class ToolStarted(EventBase, frozen=True, kw_only=True, tag="tool.started"):
    tool_call_id: str
    name: str
    input: dict[str, Any] = msgspec.field(default_factory=dict)
    #: The MCP server the call goes to; ``name`` stays the runtime's name for the tool
    #: (Claude Code: ``mcp__<server>__<tool>``; Codex: the server's tool name).
    server: str | None = None


class ToolCompleted(EventBase, frozen=True, kw_only=True, tag="tool.completed"):
    tool_call_id: str
    output: Any = None
    is_error: bool = False


class ApprovalRequested(EventBase, frozen=True, kw_only=True, tag="approval.requested"):
    request_id: str
    tool_call_id: str | None = None
    tool: str
    input: dict[str, Any] = msgspec.field(default_factory=dict)


class ApprovalResolved(EventBase, frozen=True, kw_only=True, tag="approval.resolved"):
    request_id: str
    decision: Decision
    message: str | None = None


class InputRequested(EventBase, frozen=True, kw_only=True, tag="input.requested"):
    request_id: str
    prompt: str


class InputResolved(EventBase, frozen=True, kw_only=True, tag="input.resolved"):
    request_id: str
    text: str


class Usage(EventBase, frozen=True, kw_only=True, tag="usage"):
    input_tokens: int
    output_tokens: int
    cost: float | None = None


class RunCompleted(EventBase, frozen=True, kw_only=True, tag="run.completed"):
    stop_reason: str = "end_turn"

    terminal: ClassVar[bool] = True


class RunCrashed(EventBase, frozen=True, kw_only=True, tag="run.crashed"):
    kind: CrashKind
    message: str
    retryable: bool = False

    terminal: ClassVar[bool] = True


class RunKilled(EventBase, frozen=True, kw_only=True, tag="run.killed"):
    reason: str = "interrupted"

    terminal: ClassVar[bool] = True


Event: TypeAlias = (
    RunStarted
    | MessageDelta
    | MessageCompleted
    | ReasoningDelta
    | ReasoningCompleted
    | ToolStarted
    | ToolCompleted
    | ApprovalRequested
    | ApprovalResolved
    | InputRequested
    | InputResolved
    | Usage
    | RunCompleted
    | RunCrashed
    | RunKilled
)

#: The ``type`` tags of the three terminal events.
TERMINAL_TYPES = frozenset({"run.completed", "run.crashed", "run.killed"})

_encoder = msgspec.json.Encoder(order="deterministic")
_decoder = msgspec.json.Decoder(Event)


def is_terminal(event: Event) -> bool:
    """True for ``run.completed``, ``run.crashed`` and ``run.killed``."""
    return event.terminal


def type_of(event: Event) -> str:
    """The ``type`` tag of an event (``"message.delta"``…)."""
    return str(type(event).__struct_config__.tag)


def encode(event: Event) -> bytes:
    """One event as compact JSON with sorted keys; ``decode(encode(e)) == e``."""
    return _encoder.encode(event)


def decode(data: bytes | str) -> Event:
    """Parse one event; a ``msgspec.ValidationError`` names the bad field."""
    return _decoder.decode(data)


def encode_lines(events: Iterable[Event]) -> bytes:
    """Events as JSON Lines (one event per line, each ending with ``\\n``)."""
    return b"".join(_encoder.encode(event) + b"\n" for event in events)


def decode_lines(data: bytes | str) -> list[Event]:
    """Parse JSON Lines written by ``encode_lines`` (blank lines are ignored)."""
    raw = data.encode() if isinstance(data, str) else data
    return [_decoder.decode(line) for line in raw.splitlines() if line.strip()]


def to_builtins(event: Event) -> dict[str, Any]:
    """An event as a plain dict (with its ``type``), for assertions and printing."""
    result = msgspec.to_builtins(event)
    assert isinstance(result, dict)
    return result


def with_seq(event: Event, seq: int) -> Event:
    """A copy of ``event`` carrying ``seq``."""
    return msgspec.structs.replace(event, seq=seq)
