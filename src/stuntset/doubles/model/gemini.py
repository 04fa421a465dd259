"""The Gemini API (``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse``), streamed and not.

Wire facts (docs/protocol-gemini.md, checked against google-genai 2.34): the model is in the
path, not the body; a request is ``{"contents": [{"role", "parts": [...]}], ...}`` whose parts
are ``text``, ``functionCall`` (``name``, ``args``) and ``functionResponse`` (``name``,
``response``); a response is ``{"candidates": [{"content": {"role": "model", "parts"},
"finishReason", "index"}], "usageMetadata", "modelVersion", "responseId"}``. A stream is
``data:`` lines without ``event:``, each one a whole ``GenerateContentResponse``: text and
thoughts (``"thought": true``) arrive as deltas, a function call whole in one part, and the
last chunk carries ``finishReason`` (``STOP``, also after function calls) and the full usage.
There is no ``[DONE]``: the body ends. Errors are ``{"error": {"code", "message", "status"}}``
with the google.rpc status name; mid-stream the same object is one ``data:`` line.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from stuntset.script import (
    AuthExpired,
    Overloaded,
    RateLimit,
    Reasoning,
    Step,
    Text,
    ToolCall,
    TurnRequest,
)

from ._common import (
    BadRequest,
    Plan,
    RenderContext,
    StatusFault,
    WireCodec,
    encode,
    item_events,
    pause,
    require_object,
)
from ._reply import Action
from .wires import GEMINI

__all__ = ["GEMINI_ID_PREFIX", "GeminiCodec", "gemini_codec", "gemini_status"]

#: The prefix of the ``responseId`` the double mints.
GEMINI_ID_PREFIX: Final = "gen"

#: google.rpc status names by HTTP status, as the Google front end maps them.
_STATUSES: Final = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    412: "FAILED_PRECONDITION",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_UNAUTHENTICATED = (
    "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
    "cookie or other valid authentication credential. See "
    "https://developers.google.com/identity/sign-in/web/devconsole-project."
)
_RATE_LIMITED = "Resource has been exhausted (e.g. check quota)."
_OVERLOADED = "The model is overloaded. Please try again later."
#: Per fault kind: its default message, and what the Gemini API says instead (a message the
#: script chose is sent as it is).
_MESSAGES: Final[dict[type[Step], tuple[str, str]]] = {
    AuthExpired: (AuthExpired().message, _UNAUTHENTICATED),
    RateLimit: (RateLimit().message, _RATE_LIMITED),
    Overloaded: (Overloaded().message, _OVERLOADED),
}

#: ``/v1beta/models/gemini-2.5-flash:streamGenerateContent`` (``v1`` and ``v1alpha`` too).
_PATH = re.compile(r"/(v1|v1beta|v1alpha)/models/([^/:]+):(generateContent|streamGenerateContent)")


def gemini_status(status: int) -> str:
    """The google.rpc ``status`` name the Gemini API gives with HTTP ``status``."""
    return _STATUSES.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")


@functools.lru_cache(maxsize=256)
def gemini_codec(path: str) -> GeminiCodec | None:
    """The codec for a Gemini model method path, or ``None`` for any other path (one codec
    per model and method, so templates keyed by codec stay per model)."""
    found = _PATH.fullmatch(path)
    if found is None:
        return None
    return GeminiCodec(found.group(2), stream=found.group(3) == "streamGenerateContent")


def _parts(content: Any) -> list[dict[str, Any]]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _signature(text: str) -> str:
    """A thought signature as the API sends it: base64 (the SDK decodes it to bytes)."""
    return base64.b64encode(text.encode()).decode()


class GeminiCodec(WireCodec):
    """The Gemini ``generateContent`` wire, for one model and method."""

    wire = GEMINI
    provider: ClassVar[str] = "gemini"
    request_id_header: ClassVar[str] = "x-stuntset-request-id"
    overloaded_status: ClassVar[int] = 503

    def __init__(self, model: str, *, stream: bool) -> None:
        self.model = model
        self.stream = stream

    def streams(self, body: Mapping[str, Any]) -> bool:
        return self.stream

    def parse(self, body: Any, headers: Mapping[str, str]) -> TurnRequest:
        data = require_object(body)
        contents = data.get("contents")
        if not isinstance(contents, list) or not contents:
            raise BadRequest("* GenerateContentRequest.contents: contents is not specified")
        input_text = ""
        for content in reversed(contents):
            if isinstance(content, dict) and content.get("role", "user") == "user":
                input_text = "".join(
                    p["text"] for p in _parts(content) if isinstance(p.get("text"), str)
                )
                if input_text:
                    break
        results = []
        for part in _parts(contents[-1]):
            answer = part.get("functionResponse")
            if isinstance(answer, dict):
                results.append(str(answer.get("id") or answer.get("name") or ""))
        return TurnRequest(
            input_text=input_text,
            model=self.model,
            wire=self.wire.name,
            tool_results=tuple(results),
            body=data,
            headers=headers if isinstance(headers, dict) else dict(headers),
        )

    # --- errors ---

    def error_body(self, status: int, message: str, error_type: str | None) -> object:
        return {
            "error": {
                "code": status,
                "message": message,
                "status": error_type or gemini_status(status),
            }
        }

    def status_fault(self, fault: Step) -> StatusFault:
        found = super().status_fault(fault)
        default, google = _MESSAGES.get(type(fault), (None, None))
        if google is None or found.message != default:
            return found
        return StatusFault(found.status, google, found.error_type, found.headers)

    def in_band_error(self, fault: StatusFault, ctx: RenderContext) -> bytes:
        return ctx.framing.frame(encode(self.error_body(fault.status, fault.message, None)))

    # --- bodies ---

    def _part_list(self, plan: Plan, ctx: RenderContext) -> list[tuple[Any, dict[str, Any]]]:
        key = "gemini_parts"
        if key in ctx.extra:
            cached: list[tuple[Any, dict[str, Any]]] = ctx.extra[key]
            return cached
        parts: list[tuple[Any, dict[str, Any]]] = []
        for step in plan.items:
            if isinstance(step, Text):
                parts.append((step, {"text": step.text}))
            elif isinstance(step, Reasoning):
                signature = step.signature or ctx.signature(step.text)
                part = {
                    "text": step.text,
                    "thought": True,
                    "thoughtSignature": _signature(signature),
                }
                parts.append((step, part))
            elif isinstance(step, ToolCall):
                call: dict[str, Any] = {"name": step.name, "args": step.input}
                if step.id:
                    call["id"] = step.id
                parts.append((step, {"functionCall": call}))
        ctx.extra[key] = parts
        return parts

    def _usage(self, plan: Plan, *, final: bool) -> dict[str, Any]:
        prompt = plan.usage.input_tokens
        if not final:
            return {"promptTokenCount": prompt, "totalTokenCount": prompt}
        output = plan.usage.output_tokens
        return {
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output,
        }

    def _response(
        self,
        ctx: RenderContext,
        parts: list[dict[str, Any]],
        usage: dict[str, Any],
        finish: bool,
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if finish:
            candidate["finishReason"] = "STOP"
        candidate["index"] = 0
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": ctx.model,
            "responseId": ctx.response_id,
        }

    def complete(self, plan: Plan, ctx: RenderContext) -> object:
        parts = [part for _, part in self._part_list(plan, ctx)]
        return self._response(ctx, parts, self._usage(plan, final=True), True)

    def wrong_shape(self, plan: Plan, ctx: RenderContext) -> object:
        # the stream's chunks as a JSON array (what streamGenerateContent sends without
        # alt=sse) where one response object belongs
        return [
            self._response(ctx, [{"text": t}], self._usage(plan, final=False), False)
            for t in ("out", "of order")
        ]

    # --- stream ---

    def _chunk(
        self, ctx: RenderContext, part: dict[str, Any], plan: Plan, *, finish: bool = False
    ) -> bytes:
        usage = self._usage(plan, final=finish)
        return ctx.framing.frame(encode(self._response(ctx, [part], usage, finish)))

    def stream_body(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        out: list[Action] = []
        render = functools.partial(self._part_events, plan=plan, ctx=ctx)
        out += item_events(plan, self._part_list(plan, ctx), render)
        if ctx.framing.unknown_events and out:
            # a chunk with no candidates (what the API sends for a blocked prompt)
            unknown = {"usageMetadata": self._usage(plan, final=False), "modelVersion": ctx.model}
            first = next(i for i, a in enumerate(out) if isinstance(a, bytes))
            out.insert(first + 1, ctx.framing.frame(encode(unknown)))
        return out

    def _part_events(
        self, step: Any, part: dict[str, Any], index: int, plan: Plan, ctx: RenderContext
    ) -> list[Action]:
        if isinstance(step, ToolCall):
            return [self._chunk(ctx, part, plan)]
        out: list[Action] = []
        deltas = self.text_deltas(step, ctx)
        for i, (piece, gap) in enumerate(deltas):
            out += pause(gap)
            delta: dict[str, Any] = {"text": piece}
            if isinstance(step, Reasoning):
                delta["thought"] = True
                if i == len(deltas) - 1:
                    delta["thoughtSignature"] = part["thoughtSignature"]
            out.append(self._chunk(ctx, delta, plan))
        return out

    def stream_terminal(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        return [self._chunk(ctx, {"text": ""}, plan, finish=True)]

    def malformed(self, text: str, ctx: RenderContext) -> bytes:
        return ctx.framing.frame(text.encode())

    def out_of_order(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        # text after the chunk that finished the candidate
        return [
            *self.stream_body(plan, ctx),
            *self.stream_terminal(plan, ctx),
            self._chunk(ctx, {"text": "out of order"}, plan),
        ]
