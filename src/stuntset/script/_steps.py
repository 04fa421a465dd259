"""The steps a scripted turn is made of: content, interaction, timing and faults.

Steps are wire-neutral data. A double turns them into its wire's bytes; the scripted provider
turns them into normalized events. ``kind`` tags each step in files (``{kind = "text", …}``).
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar, Literal, TypeAlias

import msgspec

__all__ = [
    "FAULT_KINDS",
    "STEP_KINDS",
    "ApprovalRequest",
    "AuthExpired",
    "Delay",
    "Exit",
    "Garbage",
    "HttpError",
    "InputRequest",
    "MalformedJson",
    "OutOfOrder",
    "Overloaded",
    "RateLimit",
    "Reasoning",
    "SpawnFailure",
    "Stall",
    "Step",
    "StreamCut",
    "Text",
    "ToolCall",
    "ToolResult",
    "Usage",
    "kind_of",
    "split_text",
]

#: A scripted ``retry-after`` above this many seconds is refused unless asked for explicitly:
#: anthropic 2.x sleeps the whole value, openai 3.x gives up above 120 s.
MAX_RETRY_AFTER = 60.0

_WORDS = re.compile(r"\s*\S+|\s+")


def split_text(text: str, *, chunks: int | None = None, chunk_size: int | None = None) -> list[str]:
    """Split ``text`` into stream deltas whose concatenation is ``text``.

    By default one delta per word, with the whitespace before it (as model tokens are);
    ``chunk_size`` cuts every N characters; ``chunks`` cuts into N near-equal parts.
    """
    if not text:
        return []
    if chunk_size is not None:
        return [text[i : i + chunk_size] for i in range(0, len(text), chunk_size)]
    if chunks is not None:
        count = min(chunks, len(text))
        bounds = [round(i * len(text) / count) for i in range(count + 1)]
        return [text[bounds[i] : bounds[i + 1]] for i in range(count)]
    return _WORDS.findall(text)


def _positive(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise ValueError(f"{name} must be at least 1, got {value!r}")


#: The longest duration a script may give (one day): ``1e308`` passed the finite check and
#: then overflowed the event loop's timer when played.
MAX_SECONDS = 86_400.0


def _seconds(name: str, value: float | None) -> None:
    """A duration: finite, not negative (``nan`` would stall a double forever) and at most
    ``MAX_SECONDS``."""
    if value is not None and not (math.isfinite(value) and 0 <= value <= MAX_SECONDS):
        raise ValueError(
            f"{name} must not be negative, and finite (seconds, at most {MAX_SECONDS:g}: one "
            f"day), got {value!r}"
        )


def _count(name: str, value: int | float | None) -> None:
    if value is None:
        return
    if not (value >= 0 if isinstance(value, int) else math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must not be negative, got {value!r}")


class StepBase(
    msgspec.Struct, frozen=True, tag_field="kind", forbid_unknown_fields=True, omit_defaults=True
):
    """Fields and flags shared by all steps."""

    #: A fault step ends its turn: nothing may follow it.
    ends_turn: ClassVar[bool] = False
    #: The step simulates a failure.
    fault: ClassVar[bool] = False


# --- content ---------------------------------------------------------------------------------


class Text(StepBase, frozen=True, tag="text"):
    """Assistant text, streamed as deltas (one per word unless ``chunks``/``chunk_size``).

    ``interval`` is a pause (seconds, on the clock seam) between deltas.
    """

    text: str
    chunks: int | None = None
    chunk_size: int | None = None
    interval: float = 0.0

    def __post_init__(self) -> None:
        _positive("chunks", self.chunks)
        _positive("chunk_size", self.chunk_size)
        _seconds("interval", self.interval)

    def deltas(self) -> list[str]:
        return split_text(self.text, chunks=self.chunks, chunk_size=self.chunk_size)


class Reasoning(StepBase, frozen=True, tag="reasoning"):
    """Reasoning / thinking text, streamed as deltas. ``signature`` is what the Anthropic wire
    sends as the thinking block's signature (a deterministic one is made when omitted)."""

    text: str
    signature: str | None = None
    chunks: int | None = None
    chunk_size: int | None = None
    interval: float = 0.0

    def __post_init__(self) -> None:
        _positive("chunks", self.chunks)
        _positive("chunk_size", self.chunk_size)
        _seconds("interval", self.interval)

    def deltas(self) -> list[str]:
        return split_text(self.text, chunks=self.chunks, chunk_size=self.chunk_size)


class ToolCall(StepBase, frozen=True, tag="tool_call"):
    """The model calls a tool. On model wires its JSON arguments stream in ``fragments``
    pieces. ``id`` is minted (``call-1``…) when omitted."""

    name: str
    input: dict[str, Any] = msgspec.field(default_factory=dict)
    id: str | None = None
    fragments: int = 3

    def __post_init__(self) -> None:
        _positive("fragments", self.fragments)

    def arguments(self) -> str:
        """The input as the compact JSON string a model streams."""
        return msgspec.json.encode(self.input).decode()

    def argument_fragments(self) -> list[str]:
        return split_text(self.arguments(), chunks=self.fragments)


class ToolResult(StepBase, frozen=True, tag="tool_result"):
    """The result of a tool call (the earliest still waiting, unless ``tool_call_id`` says which).

    Agent doubles emit it; on model wires it marks where one model response ends and the
    client must send the tool result back before the next response starts.
    """

    output: Any = ""
    is_error: bool = False
    tool_call_id: str | None = None


class ApprovalRequest(StepBase, frozen=True, tag="approval_request"):
    """The agent asks permission to run a tool (the latest tool call unless told otherwise).

    The run blocks until the client answers; a denial completes the tool call as an error and
    skips its scripted result."""

    tool: str | None = None
    input: dict[str, Any] | None = None
    tool_call_id: str | None = None


class InputRequest(StepBase, frozen=True, tag="input_request"):
    """The agent asks the user a question; the run blocks until it is answered."""

    prompt: str


class Usage(StepBase, frozen=True, tag="usage"):
    """Token usage (and optional cost in USD) reported for the turn."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None

    def __post_init__(self) -> None:
        _count("input_tokens", self.input_tokens)
        _count("output_tokens", self.output_tokens)
        _count("cost", self.cost)


class Delay(StepBase, frozen=True, tag="delay"):
    """A pause of ``seconds`` on the clock seam (free under a ``FakeClock``)."""

    seconds: float

    def __post_init__(self) -> None:
        _seconds("seconds", self.seconds)


# --- faults ----------------------------------------------------------------------------------


class _Fault(StepBase, frozen=True):
    ends_turn: ClassVar[bool] = True
    fault: ClassVar[bool] = True


def _check_retry_after(
    retry_after: float | None, allow_long: bool, retry_after_ms: int | None = None
) -> None:
    _seconds("retry_after", retry_after)
    _count("retry_after_ms", retry_after_ms)
    if retry_after is not None and retry_after > MAX_RETRY_AFTER and not allow_long:
        raise ValueError(
            f"retry_after={retry_after!r} s would make the anthropic SDK really sleep that long "
            f"(and openai give up above 120 s); use retry_after_ms with a small value, or pass "
            f"allow_long_retry_after=True if that is the point"
        )


class HttpError(_Fault, frozen=True, tag="http_error"):
    """An HTTP status error with the provider's own error body. First in a response it is the
    response status; after streamed content it is an in-band stream error.

    ``retry_after_format="http-date"`` sends ``retry-after`` as an HTTP date (``retry_after``
    seconds from the real time of the response: clients compare it with their wall clock)."""

    status: int
    message: str | None = None
    error_type: str | None = None
    retry_after: float | None = None
    retry_after_ms: int | None = None
    should_retry: bool | None = None
    allow_long_retry_after: bool = False
    retry_after_format: Literal["seconds", "http-date"] = "seconds"

    def __post_init__(self) -> None:
        if not 400 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP error status (400-599), got {self.status!r}")
        _check_retry_after(self.retry_after, self.allow_long_retry_after, self.retry_after_ms)


class AuthExpired(_Fault, frozen=True, tag="auth_expired"):
    """Credentials stop working mid-run (401 on the OpenAI and Anthropic wires, Gemini's 400
    ``API_KEY_INVALID``; the CLI's auth failure)."""

    message: str = (
        "OAuth token has expired. Please obtain a new token or refresh your existing token."
    )


class RateLimit(_Fault, frozen=True, tag="rate_limit"):
    """429 rate limited. ``retry_after_ms`` defaults small so SDK retries stay fast;
    ``retry_after_format`` as for ``HttpError``."""

    message: str = "Rate limit reached. Please try again later."
    retry_after: float | None = None
    retry_after_ms: int | None = 1
    allow_long_retry_after: bool = False
    retry_after_format: Literal["seconds", "http-date"] = "seconds"

    def __post_init__(self) -> None:
        _check_retry_after(self.retry_after, self.allow_long_retry_after, self.retry_after_ms)


class Overloaded(_Fault, frozen=True, tag="overloaded"):
    """The provider is overloaded (Anthropic 529 ``overloaded_error``; OpenAI 503)."""

    message: str = "Overloaded"
    retry_after_ms: int | None = 1

    def __post_init__(self) -> None:
        _count("retry_after_ms", self.retry_after_ms)


class _StreamFault(_Fault, frozen=True, kw_only=True):
    """A fault of a stream: by default the model API's (a fake CLI renders what the real CLI
    does when its model stream breaks so: it retries); with ``cli=True`` the CLI itself breaks
    its own stdout, which only the CLI doubles render (and then they exit)."""

    #: The CLI process itself breaks (its own stdout), not its model API's stream.
    cli: bool = False


class StreamCut(_StreamFault, frozen=True, tag="stream_cut"):
    """The stream stops here (or after ``after_events`` wire events of the response) without
    its terminal event: the connection drops, or with ``clean`` the body ends normally."""

    after_events: int | None = None
    clean: bool = False

    def __post_init__(self) -> None:
        if self.after_events is not None and self.after_events < 0:
            raise ValueError(f"after_events must not be negative, got {self.after_events!r}")


class MalformedJson(_StreamFault, frozen=True, tag="malformed_json"):
    """A frame whose JSON does not parse."""

    text: str = '{"type": "content_block_delta", "delta": {"text": "trunc'


class Garbage(_StreamFault, frozen=True, tag="garbage"):
    """Bytes that are not the protocol: ``data``, then invalid UTF-8 if ``invalid_utf8``,
    left as a half line (no newline) if ``half_line``."""

    data: str = "<html><body>502 Bad Gateway</body></html>"
    invalid_utf8: bool = True
    half_line: bool = True

    def payload(self) -> bytes:
        raw = self.data.encode()
        if self.invalid_utf8:
            raw += b"\xff\xfe\xc3"
        return raw if self.half_line else raw + b"\n"


class OutOfOrder(_StreamFault, frozen=True, tag="out_of_order"):
    """Events arrive in an impossible order (a delta for a block never started, a completion
    before its start)."""


class Stall(_Fault, frozen=True, tag="stall"):
    """The turn never finishes: no more bytes, no terminal event, until the client gives up."""


class Exit(_Fault, frozen=True, tag="exit"):
    """The process serving the turn dies mid-turn. On HTTP wires the model API's connection is
    dropped mid-response: closed, or with ``reset`` reset (a TCP RST, which clients see as a
    read error rather than an early end); a CLI double shows what the real CLI does when its
    model API drops so (it retries, and with no turn left the model double's 500 ends the
    turn). With ``cli=True`` (CLI doubles only; a model wire refuses it at load) the CLI
    process itself dies: ``stderr`` printed first, then exit ``code``. The scripted provider
    has no model API under it: it renders every ``Exit`` as its runtime exiting with
    ``code`` (``run.crashed kind='exited'``), ``cli`` or not."""

    code: int = 1
    stderr: str = ""
    reset: bool = False
    #: The CLI process itself dies, not its model API's connection.
    cli: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.code <= 255:
            raise ValueError(f"code must be a process exit status (0-255), got {self.code!r}")


class SpawnFailure(_Fault, frozen=True, tag="spawn_failure"):
    """The runtime cannot be started at all (a missing binary). Only as a turn's first step."""

    message: str = "No such file or directory"


Step: TypeAlias = (
    Text
    | Reasoning
    | ToolCall
    | ToolResult
    | ApprovalRequest
    | InputRequest
    | Usage
    | Delay
    | HttpError
    | AuthExpired
    | RateLimit
    | Overloaded
    | StreamCut
    | MalformedJson
    | Garbage
    | OutOfOrder
    | Stall
    | Exit
    | SpawnFailure
)

#: The steps that end a turn with a failure (``fault = True``), as a type: a renderer's
#: dispatch narrows a ``Step`` to it, then ends in ``assert_never`` (docs/design.md, "Adding
#: a fault kind"). A test checks that it lists exactly the kinds of ``FAULT_KINDS``.
FaultStep: TypeAlias = (
    HttpError
    | AuthExpired
    | RateLimit
    | Overloaded
    | StreamCut
    | MalformedJson
    | Garbage
    | OutOfOrder
    | Stall
    | Exit
    | SpawnFailure
)

_STEP_CLASSES: tuple[type[StepBase], ...] = (
    Text,
    Reasoning,
    ToolCall,
    ToolResult,
    ApprovalRequest,
    InputRequest,
    Usage,
    Delay,
    HttpError,
    AuthExpired,
    RateLimit,
    Overloaded,
    StreamCut,
    MalformedJson,
    Garbage,
    OutOfOrder,
    Stall,
    Exit,
    SpawnFailure,
)

#: Every step kind, as written in files.
STEP_KINDS: tuple[str, ...] = tuple(str(cls.__struct_config__.tag) for cls in _STEP_CLASSES)
#: The kinds that simulate failures.
FAULT_KINDS: frozenset[str] = frozenset(
    str(cls.__struct_config__.tag) for cls in _STEP_CLASSES if cls.fault
)
STEP_CLASSES: dict[str, type[StepBase]] = {
    str(cls.__struct_config__.tag): cls for cls in _STEP_CLASSES
}


def kind_of(step: Step) -> str:
    """The ``kind`` tag of a step (``"text"``, ``"tool_call"``…)."""
    return str(type(step).__struct_config__.tag)
