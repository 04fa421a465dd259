"""The Gemini API (``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent``, with ``?alt=sse`` or without), streamed and not.

Wire facts (docs/protocol-gemini.md, checked against google-genai 2.34): the model is in the
path, not the body; a request is ``{"contents": [{"role", "parts": [...]}], ...}`` whose parts
are ``text``, ``functionCall`` (``name``, ``args``) and ``functionResponse`` (``name``,
``response``); a response is ``{"candidates": [{"content": {"role": "model", "parts"},
"finishReason", "index"}], "usageMetadata", "modelVersion", "responseId"}``. A stream is
``data:`` lines without ``event:``, each one a whole ``GenerateContentResponse``: text and
thoughts (``"thought": true``) arrive as deltas, a function call whole in one part, and the
last chunk carries ``finishReason`` (``STOP``, also after function calls) and the full usage.
There is no ``[DONE]``: the body ends. Without ``alt=sse`` the same responses are the
elements of one JSON array, written as it grows: ``[`` before the first, ``\\n,\\r\\n``
between two, ``\\n]`` after the last, each element pretty-printed (``application/json``).
Errors are ``{"error": {"code", "message", "status"}}`` with the google.rpc status name;
mid-stream the same object is one ``data:`` line (or one array element); before an array
stream, the array of that one object. An expired API key is a 400 ``INVALID_ARGUMENT`` whose
``details`` carry the ``google.rpc.ErrorInfo`` reason ``API_KEY_INVALID``.
"""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Final
from urllib.parse import parse_qsl

import msgspec

from stuntset.script import (
    AuthExpired,
    HttpError,
    Overloaded,
    RateLimit,
    Reasoning,
    Step,
    Text,
    ToolCall,
    TurnRequest,
)

from ._client import Seen, WireClient
from ._codec import (
    BadRequest,
    Plan,
    RenderContext,
    StatusFault,
    StatusStep,
    WireCodec,
    encode,
    item_events,
    pause,
    require_object,
)
from ._declared import GEMINI
from ._readback import ResponseReader, error_object, error_step, frame_json
from ._reply import Action, Reply, json_reply
from ._spec import ApiProvider, FrameLike, HistoryCall, ModelWire, PrefixView
from ._views import cache_of, declared_tools

__all__ = [
    "GEMINI_ID_PREFIX",
    "WIRE",
    "GeminiCodec",
    "asks_for_sse",
    "gemini_codec",
    "gemini_status",
]

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
_RATE_LIMITED = "Resource has been exhausted (e.g. check quota)."
_OVERLOADED = "The model is overloaded. Please try again later."
#: What the Developer API says of an expired key (a 400, docs/protocol-gemini.md#errors).
_KEY_EXPIRED = "API key expired. Please renew the API key."
_KEY_INVALID = "API_KEY_INVALID"
#: Per fault kind: its default message, and what the Gemini API says instead (a message the
#: script chose is sent as it is).
_MESSAGES: Final[dict[type[Step], tuple[str, str]]] = {
    AuthExpired: (AuthExpired().message, _KEY_EXPIRED),
    RateLimit: (RateLimit().message, _RATE_LIMITED),
    Overloaded: (Overloaded().message, _OVERLOADED),
}

#: ``/v1beta/models/gemini-2.5-flash:streamGenerateContent`` (``v1`` and ``v1alpha`` too).
_PATH = re.compile(r"/(v1|v1beta|v1alpha)/models/([^/:]+):(generateContent|streamGenerateContent)")


#: A stream without ``alt=sse``: one JSON array, its elements pretty-printed, ``[`` before
#: the first, this between two, ``\n]`` after the last (docs/protocol-gemini.md#streams).
_SEPARATOR: Final = b"\n,\r\n"
_CLOSE: Final = b"\n]"
_ARRAY_TYPE: Final = "application/json; charset=UTF-8"
_OPENED: Final = "gemini_array_opened"


def gemini_status(status: int) -> str:
    """The google.rpc ``status`` name the Gemini API gives with HTTP ``status``."""
    return _STATUSES.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")


def asks_for_sse(query: str) -> bool:
    """Whether a ``streamGenerateContent`` query asks for SSE (``alt=sse``; Google's front end
    also reads ``$alt``, with options after ``;``). Without it the stream is a JSON array."""
    return any(
        key in ("alt", "$alt") and value.partition(";")[0] == "sse"
        for key, value in parse_qsl(query)
    )


@functools.lru_cache(maxsize=256)
def gemini_codec(path: str, *, sse: bool = True) -> GeminiCodec | None:
    """The codec for a Gemini model method path, or ``None`` for any other path (one codec
    per model, method and stream form, so templates keyed by codec stay per model). ``sse``:
    the request asked for SSE (``asks_for_sse``); it only matters to a stream."""
    found = _PATH.fullmatch(path)
    if found is None:
        return None
    stream = found.group(3) == "streamGenerateContent"
    return GeminiCodec(found.group(2), stream=stream, sse=sse or not stream)


def _pretty(data: bytes) -> bytes:
    """JSON bytes as the API pretty-prints them: two-space indent, ``"key": value``."""
    try:
        return msgspec.json.format(data, indent=2)
    except msgspec.DecodeError:  # a malformed frame is sent as it is
        return data


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
    id_prefix: ClassVar[str] = GEMINI_ID_PREFIX

    def __init__(self, model: str, *, stream: bool, sse: bool = True) -> None:
        self.model = model
        self.stream = stream
        #: a stream without ``alt=sse``: the responses as the elements of one JSON array
        self.array = stream and not sse

    def streams(self, body: Mapping[str, Any]) -> bool:
        return self.stream

    def stream_headers(self) -> list[tuple[str, str]]:
        if self.array:
            return [("content-type", _ARRAY_TYPE)]
        return super().stream_headers()

    def repeat_frame(self, frame: bytes) -> bytes:
        if self.array and frame.startswith(b"["):  # the repeat is the array's second element
            return _SEPARATOR + frame[1:]
        return frame

    def _frame(self, data: bytes, ctx: RenderContext) -> bytes:
        """One response (or error) of the stream: an SSE event, or the array's next element."""
        if not self.array:
            return ctx.framing.frame(data)
        if ctx.extra.get(_OPENED):
            return _SEPARATOR + _pretty(data)
        ctx.extra[_OPENED] = True
        return b"[" + _pretty(data)

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
        return self._error(status, message, error_type, None)

    def _error(
        self, status: int, message: str, error_type: str | None, reason: str | None
    ) -> dict[str, Any]:
        error: dict[str, Any] = {
            "code": status,
            "message": message,
            "status": error_type or gemini_status(status),
        }
        if reason is not None:
            # what the Developer API sends with an expired or invalid key (continuedev/continue
            # #9655, google-gemini/gemini-cli #4430); pydantic-ai reads the reason as auth
            error["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": reason,
                    "domain": "googleapis.com",
                    "metadata": {"service": "generativelanguage.googleapis.com"},
                },
                {
                    "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
                    "locale": "en-US",
                    "message": message,
                },
            ]
        return {"error": error}

    def error_reply(
        self,
        status: int,
        message: str,
        error_type: str | None = None,
        headers: list[tuple[str, str]] | None = None,
        request_id: str | None = None,
    ) -> Reply:
        body = self._error(status, message, error_type, None)
        return self._error_reply(status, body, headers or [], request_id)

    def fault_reply(self, fault: StatusFault, request_id: str | None) -> Reply:
        body = self._error(fault.status, fault.message, fault.error_type, fault.reason)
        return self._error_reply(fault.status, body, fault.headers, request_id)

    def _error_reply(
        self,
        status: int,
        body: dict[str, Any],
        headers: list[tuple[str, str]],
        request_id: str | None,
    ) -> Reply:
        extra = [(self.request_id_header, request_id)] if request_id else []
        if not self.array:
            return json_reply(status, body, [*extra, *headers])
        # before an array stream, the error is the array's one element (the SDK unwraps a
        # one-element list: google/genai/errors.py, APIError.__init__)
        data = b"[" + _pretty(encode(body)) + _CLOSE
        return Reply(status, [("content-type", _ARRAY_TYPE), *extra, *headers], [data])

    def status_fault(self, fault: StatusStep) -> StatusFault:
        found = super().status_fault(fault)
        default, google = _MESSAGES.get(type(fault), (None, None))
        message = found.message if google is None or found.message != default else google
        if isinstance(fault, AuthExpired):
            # the Developer API answers an expired API key with 400 INVALID_ARGUMENT and the
            # reason API_KEY_INVALID, not with 401 (docs/protocol-gemini.md#errors)
            return StatusFault(400, message, "INVALID_ARGUMENT", found.headers, _KEY_INVALID)
        if message is found.message:
            return found
        return StatusFault(found.status, message, found.error_type, found.headers)

    def in_band_error(self, fault: StatusFault, ctx: RenderContext) -> bytes:
        body = self._error(fault.status, fault.message, fault.error_type, fault.reason)
        return self._frame(encode(body), ctx) + (_CLOSE if self.array else b"")

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
        return self._frame(encode(self._response(ctx, [part], usage, finish)), ctx)

    def stream_body(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        out: list[Action] = []
        render = functools.partial(self._part_events, plan=plan, ctx=ctx)
        out += item_events(plan, self._part_list(plan, ctx), render)
        if ctx.framing.unknown_events and out:
            # a chunk with no candidates (what the API sends for a blocked prompt)
            unknown = {"usageMetadata": self._usage(plan, final=False), "modelVersion": ctx.model}
            first = next(i for i, a in enumerate(out) if isinstance(a, bytes))
            out.insert(first + 1, self._frame(encode(unknown), ctx))
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
        # the array closes with its last element (one write, so a cut counts the same frames)
        last = self._chunk(ctx, {"text": ""}, plan, finish=True)
        return [last + _CLOSE if self.array else last]

    def malformed(self, text: str, ctx: RenderContext) -> bytes:
        # an array element that does not parse, in an array that closes
        return self._frame(text.encode(), ctx) + (_CLOSE if self.array else b"")

    def out_of_order(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        # text after the chunk that finished the candidate (inside the array, before it closes)
        end = _CLOSE if self.array else b""
        return [
            *self.stream_body(plan, ctx),
            self._chunk(ctx, {"text": ""}, plan, finish=True),
            self._chunk(ctx, {"text": "out of order"}, plan) + end,
        ]


# --- read back: a recorded response as steps ---------------------------------------------------


def _read_response(response: Any, reader: ResponseReader) -> bool:
    """One ``GenerateContentResponse`` (a stream chunk or a whole body) into ``reader``;
    whether it ended the response (a finish reason, or an in-band error)."""
    if not isinstance(response, dict):
        return False
    error = response.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        reader.tail.append(_error(error, code if isinstance(code, int) and code >= 400 else 500))
        return True
    usage = response.get("usageMetadata") or {}
    if usage:
        reader.count(usage.get("promptTokenCount"), usage.get("candidatesTokenCount"))
    candidate = (response.get("candidates") or [{}])[0]
    for part in (candidate.get("content") or {}).get("parts") or []:
        call = part.get("functionCall")
        if isinstance(call, dict):
            key = f"tool-{sum(k.startswith('tool-') for k in reader.items)}"
            name = call.get("name", "")
            reader.item(key, "tool", name=name, id=call.get("id"), input=call.get("args") or {})
        elif part.get("text"):
            kind = "reasoning" if part.get("thought") else "text"
            reader.add(kind, kind, part["text"])
            if part.get("thoughtSignature"):
                reader.items[kind]["signature"] = _read_signature(part["thoughtSignature"])
    return bool(candidate.get("finishReason"))


def _error(error: dict[str, Any], status: int) -> Step:
    """A Google error object as the step that renders it (``_key_invalid``, or an
    ``HttpError`` with Google's ``status`` as its type)."""
    message = error.get("message")
    if _key_invalid(error):
        return AuthExpired(message=message) if isinstance(message, str) else AuthExpired()
    return HttpError(status, message=message, error_type=error.get("status"))


def _key_invalid(error: dict[str, Any]) -> bool:
    """Whether a Google error object is an expired or invalid API key: a 400 whose
    ``google.rpc.ErrorInfo`` reason is ``API_KEY_INVALID``, which ``AuthExpired`` renders on
    this wire (docs/protocol-gemini.md#errors)."""
    details = error.get("details")
    return any(
        isinstance(d, dict) and d.get("reason") == _KEY_INVALID
        for d in (details if isinstance(details, list) else [])
    )


def _read_signature(encoded: str) -> str:
    """A thought signature as a script holds it: the text it encodes, if it is text."""
    try:
        return base64.b64decode(encoded, validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return encoded


def read_frames(frames: Iterable[FrameLike], reader: ResponseReader) -> bool:
    """A recorded SSE stream: each ``data:`` a whole response; the last has a finish reason."""
    done = False
    for frame in frames:
        done = _read_response(frame_json(frame.data), reader) or done
    return done


def read_body(body: Any, reader: ResponseReader) -> bool:
    """A whole response, or a stream asked for without ``alt=sse``: the JSON array of its
    responses, recorded whole (read as the stream it was)."""
    if isinstance(body, list):
        done = False
        for element in body:
            done = _read_response(element, reader) or done
        return done
    if isinstance(body, dict):
        _read_response(body, reader)
        reader.unstreamed()
    return True


def read_error(status: int, body: Any, headers: Mapping[str, str]) -> Step:
    """An error response: an invalid key is ``AuthExpired``, the rest as on every wire."""
    error = error_object(body)
    if isinstance(error, dict) and _key_invalid(error):
        return _error(error, status)
    return error_step(status, body, headers)


# --- a request as the checks read it -----------------------------------------------------------

#: Request fields that change what the provider can reuse from its prompt cache (the model
#: is in the request path, not the body: a journal entry's ``path``).
_CACHE_FIELDS = ("cachedContent", "toolConfig")


def _tools(tools: Any) -> list[Any]:
    """Gemini's tools, one per function: its ``functionDeclarations`` lists spread out."""
    out: list[Any] = []
    for tool in tools if isinstance(tools, list) else []:
        declared = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        out.extend(declared if isinstance(declared, list) else [tool])
    return out


def prefix_view(body: dict[str, Any]) -> PrefixView:
    system = {"systemInstruction": body["systemInstruction"]} if "systemInstruction" in body else {}
    contents = body.get("contents")
    messages = list(contents) if isinstance(contents, list) else []
    tools = _tools(body.get("tools") or [])
    return PrefixView(system, messages, "contents", 0, tools, cache_of(body, _CACHE_FIELDS))


def history_calls(body: dict[str, Any]) -> list[HistoryCall]:
    """The ``functionCall`` parts of ``contents``. No ids: a call is known by where it stands
    in the history."""
    calls: list[HistoryCall] = []
    contents = body.get("contents")
    for i, content in enumerate(contents if isinstance(contents, list) else []):
        parts = content.get("parts") if isinstance(content, dict) else None
        for j, part in enumerate(parts if isinstance(parts, list) else []):
            call = part.get("functionCall") if isinstance(part, dict) else None
            if isinstance(call, dict):
                key = str(call.get("id") or f"contents[{i}].parts[{j}]")
                calls.append((key, call.get("name"), call.get("args")))
    return calls


#: Gemini's methods end the path, after the model: ``/v1beta/models/{model}:generateContent``.
_METHODS = (":generateContent", ":streamGenerateContent")


# --- the demo client ---------------------------------------------------------------------------


def _demo_request(history: list[dict[str, Any]]) -> dict[str, Any]:
    return {"contents": history}  # the model and the stream are in the path


def _demo_user(prompt: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": prompt}]}


def _demo_apply(event: str, payload: dict[str, Any], seen: Seen) -> None:
    if "error" in payload:
        seen.problem = f"in-band error: {payload['error'].get('status')}"
        return
    for candidate in payload.get("candidates") or []:
        parts = (candidate.get("content") or {}).get("parts") or []
        if seen.terminal and any(part.get("text") for part in parts):
            seen.problem = "out of order: content after the finishing chunk"
            return
        for part in parts:
            if "functionCall" in part:
                seen.calls.append((part["functionCall"]["name"], part["functionCall"]["name"]))
            elif not part.get("thought"):
                seen.text += part.get("text") or ""
        seen.terminal = seen.terminal or bool(candidate.get("finishReason"))


def _demo_tool_round(seen: Seen) -> list[dict[str, Any]]:
    calls = [{"functionCall": {"name": name, "args": {}}} for name, _ in seen.calls]
    answers = [
        {"functionResponse": {"name": name, "response": {"output": "ok"}}} for name, _ in seen.calls
    ]
    return [{"role": "model", "parts": calls}, {"role": "user", "parts": answers}]


_DEMO_PATH = "/v1beta/models/demo:streamGenerateContent?alt=sse"

#: google-genai's base URL is the server root; it adds ``v1beta/models/…`` itself.
_GOOGLE = ApiProvider("gemini", "/gemini/", "Gemini (generateContent)", "generateContent")


def _codec_for(path: str, query: str | None) -> WireCodec | None:
    if query is not None and path.endswith(":streamGenerateContent"):
        return gemini_codec(path, sse=asks_for_sse(query))
    return gemini_codec(path)


#: ``POST /v1beta/models/{model}:generateContent`` and ``:streamGenerateContent``.
WIRE = ModelWire(
    name=GEMINI.name,
    declared=GEMINI,
    api=_GOOGLE,
    title="Gemini (`POST /v1beta/models/{model}:streamGenerateContent`)",
    paths=(),
    codec_for=_codec_for,
    endpoint=None,
    # Vertex AI's publisher paths end so too: they are the vertex-gemini wire's
    recorded_path=lambda path: path.endswith(_METHODS) and "/publishers/" not in path,
    pattern="/v1beta/models/{model}:generateContent",
    cache_fields=_CACHE_FIELDS,
    prefix_view=prefix_view,
    history_calls=history_calls,
    declared_tools=declared_tools,
    read_frames=read_frames,
    read_body=read_body,
    read_error=read_error,
    client=WireClient(_DEMO_PATH, _demo_request, _demo_user, _demo_apply, _demo_tool_round),
)
