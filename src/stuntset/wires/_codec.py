"""What the three wire modules share: a response plan made from a script segment, the render
context of one request, and the driver that turns a plan plus its fault into a ``Reply``.

Each wire module supplies a ``WireCodec``: how its requests are read and how its events,
bodies and errors are written. Everything about *when* a fault fires (before the status line,
in-band, after k events) is decided here, once for all wires.
"""

from __future__ import annotations

import hashlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, ClassVar, TypeAlias, assert_never

import msgspec

from stuntset.ids import IdGenerator
from stuntset.script import (
    ApprovalRequest,
    AuthExpired,
    Delay,
    Exit,
    FaultStep,
    Garbage,
    HttpError,
    InputRequest,
    MalformedJson,
    OutOfOrder,
    Overloaded,
    RateLimit,
    Reasoning,
    SpawnFailure,
    Stall,
    Step,
    StreamCut,
    Text,
    ToolCall,
    ToolResult,
    TurnRequest,
    Usage,
    Wire,
)

from ._reply import ABORT, RESET, STALL, Action, Framing, Pause, Reply, json_reply

__all__ = [
    "BadRequest",
    "Item",
    "Memo",
    "Plan",
    "RenderContext",
    "StatusFault",
    "TextRun",
    "WireCodec",
    "encode",
    "memoized",
    "plan_of",
    "render",
]

encode = msgspec.json.Encoder().encode
_MEMO_LIMIT = 4096

#: A content step of a response, in the order it streams.
Item: TypeAlias = Text | Reasoning | ToolCall | Delay
#: What a double has made from the steps of its script, e.g. ``(kind, id(step))`` to
#: ``(step, value)`` (the step is kept so that a recycled id never hits).
Memo: TypeAlias = dict[Hashable, tuple[object, Any]]
_STATUS_FAULTS = (HttpError, AuthExpired, RateLimit, Overloaded)
#: The faults that are an HTTP status (before content) or an in-band error (after it).
StatusStep: TypeAlias = HttpError | AuthExpired | RateLimit | Overloaded
#: The headers ``WireCodec.read`` parses a body with (its ``TurnRequest`` is dropped).
_NO_HEADERS: Mapping[str, str] = {}


class BadRequest(Exception):
    """A request the real provider would refuse with 400: answered in its own error shape."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


@dataclass(slots=True)
class Plan:
    """One model response: its content items in order, its usage and the fault that ends it."""

    items: list[Item]
    usage: Usage
    fault: FaultStep | None

    @property
    def has_content(self) -> bool:
        return any(not isinstance(item, Delay) for item in self.items)

    @property
    def has_tool_calls(self) -> bool:
        return any(isinstance(item, ToolCall) for item in self.items)

    def delay(self) -> float:
        return sum(item.seconds for item in self.items if isinstance(item, Delay))


class TextRun(Text, frozen=True, kw_only=True):
    """Consecutive ``Text`` steps of one response, rendered as one message (one output item,
    one text block): the text is what a model says in one go, however it was scripted.
    Each part keeps its own deltas and interval."""

    parts: tuple[Text, ...] = ()


def _merge_texts(items: list[Item]) -> list[Item]:
    merged: list[Item] = []
    for item in items:
        last = merged[-1] if merged else None
        if isinstance(item, Text) and isinstance(last, Text):
            parts = last.parts if isinstance(last, TextRun) else (last,)
            merged[-1] = TextRun(text=last.text + item.text, parts=(*parts, item))
        else:
            merged.append(item)
    return merged


def plan_of(segment: tuple[Step, ...]) -> Plan:
    """The plan of one script segment (usage steps add up; client-side steps are skipped;
    consecutive texts become one ``TextRun``)."""
    items: list[Item] = []
    usage: Usage | None = None
    fault: FaultStep | None = None
    for step in segment:
        if isinstance(step, Text | Reasoning | ToolCall | Delay):
            items.append(step)
        elif isinstance(step, Usage):
            if usage is None:
                usage = step
            else:
                cost = (usage.cost or 0.0) + (step.cost or 0.0)
                usage = Usage(
                    usage.input_tokens + step.input_tokens,
                    usage.output_tokens + step.output_tokens,
                    cost if usage.cost is not None or step.cost is not None else None,
                )
        elif isinstance(step, FaultStep):
            fault = step
        elif isinstance(step, ToolResult | ApprovalRequest | InputRequest):
            pass  # the client's side of the turn: a model response does not carry it
        else:
            assert_never(step)
    return Plan(_merge_texts(items), usage or Usage(), fault)


def memoized(cache: Memo, kind: Hashable, obj: object, make: Callable[[], Any]) -> Any:
    """``make()``, computed once per ``kind`` and ``obj`` (by identity) while ``cache`` lasts."""
    key = (kind, id(obj))
    hit = cache.get(key)
    if hit is not None and hit[0] is obj:
        return hit[1]
    if len(cache) > _MEMO_LIMIT:  # function-made turns make new steps every time
        cache.clear()
    value = make()
    cache[key] = (obj, value)
    return value


@dataclass(slots=True)
class RenderContext:
    """Per-request values: ids, timestamps, the model asked for, stream options."""

    model: str
    response_id: str
    request_id: str
    created: int
    ids: IdGenerator
    seed: int
    framing: Framing
    include_usage: bool = False
    seq: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    #: Per-script memo of what steps render to (shared by the requests of one double).
    cache: Memo = field(default_factory=dict)

    def memo(self, kind: Hashable, step: object, make: Callable[[], Any]) -> Any:
        """``make()``, computed once per step for the life of the script."""
        return memoized(self.cache, kind, step, make)

    def memo_frames(
        self, kind: Hashable, step: object, make: Callable[[], list[Action]]
    ) -> list[Action]:
        """``make()`` for frames no per-request value enters (no id, no timestamp, no model
        name), computed once per step and framing. The list is shared between requests:
        extend from it, never change it."""
        frames: list[Action] = self.memo((kind, self.framing), step, make)
        return frames

    def next_seq(self) -> int:
        value = self.seq
        self.seq += 1
        return value

    def signature(self, text: str) -> str:
        """A deterministic thinking signature for ``text`` under the script's seed."""
        return hashlib.sha256(f"{self.seed}:{text}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class StatusFault:
    """A fault that is an HTTP error status (or, after content, an in-band error)."""

    status: int
    message: str
    error_type: str | None
    headers: list[tuple[str, str]]
    #: The ``google.rpc.ErrorInfo`` reason a Google API gives with it (``API_KEY_INVALID``);
    #: only the Gemini wire sets it.
    reason: str | None = None


def _retry_headers(
    retry_after: float | None,
    retry_after_ms: int | None,
    should_retry: bool | None,
    retry_after_format: str = "seconds",
) -> list[tuple[str, str]]:
    headers: list[tuple[str, str]] = []
    if retry_after_ms is not None:
        headers.append(("retry-after-ms", str(retry_after_ms)))
    if retry_after is not None and retry_after_format == "http-date":
        # an HTTP date is compared with the client's wall clock, so it comes from the real one
        from email.utils import formatdate  # rarely needed: loaded on first use

        headers.append(("retry-after", formatdate(time.time() + retry_after, usegmt=True)))
    elif retry_after is not None:
        text = str(int(retry_after)) if float(retry_after).is_integer() else str(retry_after)
        headers.append(("retry-after", text))
    if should_retry is not None:
        headers.append(("x-should-retry", "true" if should_retry else "false"))
    return headers


def reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Overloaded" if status == 529 else f"Error {status}"


class WireCodec(ABC):
    """How one wire reads requests and writes responses. Subclasses are stateless."""

    wire: ClassVar[Wire]
    provider: ClassVar[str]
    request_id_header: ClassVar[str]
    overloaded_status: ClassVar[int]
    #: what the ids of its responses start with (``chatcmpl``-…)
    id_prefix: ClassVar[str]
    #: the model ``GET /v1/models`` lists when the script names none
    default_model: ClassVar[str] = "gpt-stuntset"
    #: the error ``type`` of its 413 for a body over the server's limit
    too_large_type: ClassVar[str | None] = None
    #: whether a turn's ``RateLimits`` are sent as response headers (what Codex reads)
    sends_rate_limits: ClassVar[bool] = False
    #: whether a fault-free stream can be made once and its ids filled in per request (not
    #: when its frames hold them behind checksums or base64: Bedrock's event stream)
    templated_streams: ClassVar[bool] = True
    #: whether its fault-free replies can be made once and filled in per request (the
    #: double's templates fill ids and the ``created`` second; a wire that writes the second
    #: as a date cannot be)
    templated: ClassVar[bool] = True

    # --- requests ---

    @abstractmethod
    def parse(self, body: Any, headers: Mapping[str, str]) -> TurnRequest:
        """The wire-neutral request; ``BadRequest`` if the real API would refuse it."""

    def read(self, body: Any) -> tuple[str | None, tuple[str, ...]]:
        """What the server's fast lane needs of a request body: the model it asks for and the
        ids of the tool results it carries; ``BadRequest`` wherever ``parse`` raises it (a
        wire may read them without making the whole ``TurnRequest``)."""
        request = self.parse(body, _NO_HEADERS)
        return request.model, request.tool_results

    def streams(self, body: Mapping[str, Any]) -> bool:
        """Whether the request asks for a stream (Gemini says so in its path instead)."""
        return body.get("stream") is True

    def models_body(self, names: list[str], created: int) -> object:
        """The body of ``GET /v1/models`` listing ``names`` (OpenAI's list shape)."""
        listing = [
            {"id": n, "object": "model", "created": created, "owned_by": "stuntset"} for n in names
        ]
        return {"object": "list", "data": listing}

    # --- errors ---

    @abstractmethod
    def error_body(self, status: int, message: str, error_type: str | None) -> object: ...

    @abstractmethod
    def in_band_error(self, fault: StatusFault, ctx: RenderContext) -> bytes: ...

    def error_reply(
        self,
        status: int,
        message: str,
        error_type: str | None = None,
        headers: list[tuple[str, str]] | None = None,
        request_id: str | None = None,
    ) -> Reply:
        extra = [(self.request_id_header, request_id)] if request_id else []
        if request_id:
            extra += self.response_headers(request_id)
        body = self.error_body(status, message, error_type)
        if request_id and self.provider == "anthropic" and isinstance(body, dict):
            body["request_id"] = request_id  # Anthropic repeats it in the body
        return json_reply(status, body, [*extra, *(headers or [])])

    def fault_reply(self, fault: StatusFault, request_id: str | None) -> Reply:
        """The error reply for a status fault that fires before any content."""
        return self.error_reply(
            fault.status, fault.message, fault.error_type, fault.headers, request_id
        )

    def refuses(self, plan: Plan) -> str | None:
        """Why this endpoint cannot answer with ``plan`` (a 400 in its error shape), or None.
        Ollama's ``/api/generate`` returns no tool calls."""
        return None

    #: whether ``refuses_query`` may refuse a request (the server's fast lane then leaves
    #: the request to the general path, which asks it)
    checks_query: ClassVar[bool] = False

    def refuses_query(self, path: str, query: str) -> tuple[int, str, str | None] | None:
        """The provider's refusal of a request to ``path`` for its ``query`` alone, before the
        body is read and no turn played — ``(status, message, error type)``, answered in its
        error shape — or None. Azure OpenAI checks its ``api-version``."""
        return None

    def response_headers(self, request_id: str) -> list[tuple[str, str]]:
        """Headers the provider adds to every reply after the request id (Azure's
        ``apim-request-id`` and ``x-ms-region``); none by default."""
        return []

    def stream_headers(self) -> list[tuple[str, str]]:
        """The headers of a streamed reply (before the request id)."""
        return [("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache")]

    def repeat_frame(self, frame: bytes) -> bytes:
        """``frame`` (a stream's first) as sent again right after itself (``repeat_first_event``)."""
        return frame

    def status_fault(self, fault: StatusStep) -> StatusFault:
        if isinstance(fault, HttpError):
            headers = _retry_headers(
                fault.retry_after,
                fault.retry_after_ms,
                fault.should_retry,
                fault.retry_after_format,
            )
            message = fault.message or reason(fault.status)
            return StatusFault(fault.status, message, fault.error_type, headers)
        if isinstance(fault, AuthExpired):
            return StatusFault(401, fault.message, None, [])
        if isinstance(fault, RateLimit):
            headers = _retry_headers(
                fault.retry_after, fault.retry_after_ms, None, fault.retry_after_format
            )
            return StatusFault(429, fault.message, None, headers)
        if isinstance(fault, Overloaded):
            headers = _retry_headers(None, fault.retry_after_ms, None)
            return StatusFault(self.overloaded_status, fault.message, None, headers)
        assert_never(fault)

    # --- bodies and streams ---

    @abstractmethod
    def complete(self, plan: Plan, ctx: RenderContext) -> object:
        """The non-streaming response body."""

    @abstractmethod
    def wrong_shape(self, plan: Plan, ctx: RenderContext) -> object:
        """A 200 body of the wrong shape (what ``OutOfOrder`` means without a stream)."""

    @abstractmethod
    def stream_body(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        """The stream up to, not including, its terminal events."""

    @abstractmethod
    def stream_terminal(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        """The events that end a complete stream."""

    @abstractmethod
    def malformed(self, text: str, ctx: RenderContext) -> bytes:
        """A frame whose data does not parse as JSON."""

    @abstractmethod
    def out_of_order(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        """A complete stream whose events come in an impossible order."""

    # --- shared helpers for subclasses ---

    @staticmethod
    def text_deltas(step: Text | Reasoning, ctx: RenderContext) -> list[tuple[str, float]]:
        """``(delta, pause before it)`` pairs: ``interval`` between deltas, none before."""

        def make() -> list[tuple[str, float]]:
            parts = step.parts if isinstance(step, TextRun) else (step,)
            return [
                (d, part.interval if i else 0.0)
                for part in parts
                for i, d in enumerate(part.deltas())
            ]

        deltas: list[tuple[str, float]] = ctx.memo("deltas", step, make)
        return deltas

    @staticmethod
    def fragments(step: ToolCall, ctx: RenderContext) -> list[str]:
        """The call's argument JSON in its streamed fragments."""
        pieces: list[str] = ctx.memo("fragments", step, step.argument_fragments)
        return pieces

    @staticmethod
    def arguments(step: ToolCall, ctx: RenderContext) -> str:
        """The call's arguments as one JSON string."""
        text: str = ctx.memo("arguments", step, step.arguments)
        return text


def render(codec: WireCodec, plan: Plan, streaming: bool, ctx: RenderContext) -> Reply:
    """The reply for ``plan`` on ``codec``'s wire, with its fault placed where it belongs."""
    id_headers = [
        (codec.request_id_header, ctx.request_id),
        *codec.response_headers(ctx.request_id),
    ]
    fault = plan.fault
    refused = codec.refuses(plan)
    if refused is not None:
        return codec.error_reply(400, refused, request_id=ctx.request_id)
    if isinstance(fault, _STATUS_FAULTS) and not (streaming and plan.has_content):
        reply = codec.fault_reply(codec.status_fault(fault), ctx.request_id)
        reply.wait = plan.delay()
        return reply
    if not streaming:
        return _render_complete(codec, plan, ctx, fault, id_headers)
    headers = [*codec.stream_headers(), *id_headers]
    actions = _render_stream(codec, plan, ctx, fault)
    return Reply(200, headers, ctx.framing.split(actions), streaming=True)


def _render_complete(
    codec: WireCodec,
    plan: Plan,
    ctx: RenderContext,
    fault: FaultStep | None,
    id_headers: list[tuple[str, str]],
) -> Reply:
    wait = plan.delay()
    json_type = ("content-type", "application/json")
    if isinstance(fault, _STATUS_FAULTS):  # ``render`` answers these before any body
        reply = codec.fault_reply(codec.status_fault(fault), ctx.request_id)
    elif fault is None:
        reply = json_reply(200, codec.complete(plan, ctx), id_headers)
    elif isinstance(fault, StreamCut):
        full = encode(codec.complete(plan, ctx))
        half = full[: len(full) // 2]
        if fault.clean:
            reply = Reply(200, [json_type, *id_headers], [half])
        else:
            reply = Reply(200, [json_type, *id_headers], [half, ABORT], content_length=len(full))
    elif isinstance(fault, MalformedJson):
        reply = Reply(200, [json_type, *id_headers], [fault.text.encode()])
    elif isinstance(fault, Garbage):
        reply = Reply(200, [("content-type", "text/html"), *id_headers], [fault.payload()])
    elif isinstance(fault, OutOfOrder):
        reply = json_reply(200, codec.wrong_shape(plan, ctx), id_headers)
    elif isinstance(fault, Stall):
        reply = Reply(None, [], [STALL])
    elif isinstance(fault, Exit):
        reply = Reply(None, [], [RESET if fault.reset else ABORT])
    elif isinstance(fault, SpawnFailure):
        raise _unrenderable(fault)
    else:
        assert_never(fault)
    reply.wait = wait
    return reply


def _frames(actions: list[Action]) -> int:
    return sum(isinstance(a, bytes) for a in actions)


def _first_frames(actions: list[Action], count: int) -> list[Action]:
    kept: list[Action] = []
    for action in actions:
        if isinstance(action, bytes):
            if count <= 0:
                break
            count -= 1
        kept.append(action)
    return kept


def _unrenderable(fault: FaultStep) -> AssertionError:
    """A fault no model wire renders: ``check_script`` refused it when the double was made."""
    return AssertionError(f"{fault!r} reached a model wire: check_script refuses it")


def _render_stream(
    codec: WireCodec, plan: Plan, ctx: RenderContext, fault: FaultStep | None
) -> list[Action]:
    if isinstance(fault, OutOfOrder):
        return codec.out_of_order(plan, ctx)
    body = codec.stream_body(plan, ctx)
    if ctx.framing.repeat_first_event and body and isinstance(body[0], bytes):
        body = [body[0], codec.repeat_frame(body[0]), *body[1:]]
    if fault is None:
        return body + codec.stream_terminal(plan, ctx)
    if isinstance(fault, _STATUS_FAULTS):
        return [*body, codec.in_band_error(codec.status_fault(fault), ctx)]
    if isinstance(fault, StreamCut):
        if fault.after_events is None:
            kept = body
        else:
            full = body + codec.stream_terminal(plan, ctx)
            kept = _first_frames(full, min(fault.after_events, _frames(full) - 1))
        return kept if fault.clean else [*kept, ABORT]
    if isinstance(fault, MalformedJson):
        return [*body, codec.malformed(fault.text, ctx)]
    if isinstance(fault, Garbage):
        return [*body, fault.payload()]
    if isinstance(fault, Stall):
        return [*body, STALL]
    if isinstance(fault, Exit):
        return [*body, RESET if fault.reset else ABORT]
    if isinstance(fault, SpawnFailure):
        raise _unrenderable(fault)
    assert_never(fault)


def pause(seconds: float) -> list[Action]:
    """A pause action, or nothing for zero."""
    return [Pause(seconds)] if seconds > 0 else []


def item_events(
    plan: Plan,
    parts: list[tuple[Any, dict[str, Any]]],
    render: Callable[[Any, dict[str, Any], int], list[Action]],
) -> list[Action]:
    """The plan's content steps rendered in order with the parts built for them
    (``render(step, part, index)``); delays in between become pauses."""
    built = iter(parts)
    out: list[Action] = []
    index = 0
    for step in plan.items:
        if isinstance(step, Delay):
            out += pause(step.seconds)
            continue
        _, part = next(built)
        out += render(step, part, index)
        index += 1
    return out


def text_of(content: Any) -> str:
    """The text of a message ``content``: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str) and part.get("type") in (
                    None,
                    "text",
                    "input_text",
                    "output_text",
                ):
                    parts.append(text)
        return "".join(parts)
    return ""


def retry_count(headers: Mapping[str, str]) -> int:
    """The client's retry counter from ``x-stainless-retry-count`` (0 when absent or bad)."""
    try:
        return int(headers.get("x-stainless-retry-count", "0"))
    except ValueError:
        return 0


def require_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    return body


def require_model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("you must provide a model parameter", "model")
    return model
