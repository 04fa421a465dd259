"""Ollama's native API (``POST /api/chat`` and ``POST /api/generate``), streamed as NDJSON
and not. Its OpenAI-compatible ``/v1`` is the Chat wire under the ``/ollama`` prefix.

Wire facts (the ``ollama`` Python client 0.6.3, ``ollama/_client.py`` and ``_types.py``, and
Ollama's API docs): a request streams unless it says ``"stream": false`` (the client always
says). A stream is ``application/x-ndjson``, one JSON object a line: on ``/api/chat`` each is
``{"model", "created_at", "message": {"role": "assistant", "content", "thinking"?,
"tool_calls"?}, "done": false}``, a tool call whole in one line
(``{"function": {"index", "name", "arguments": {...}}}``, arguments an object); on
``/api/generate`` the piece is ``"response"`` (and ``"thinking"``). The last line has
``"done": true``, ``"done_reason": "stop"`` (also after tool calls), the durations in
nanoseconds, ``prompt_eval_count`` (input tokens) and ``eval_count`` (output tokens); the
whole body is that last line with the whole message. An error is ``{"error": "<text>"}``
(404 ``model "x" not found, try pulling it first``, 400 ``model is required``, 503
``server busy…`` when the queue is full, 401 ``unauthorized`` from ollama.com); mid-stream
the same object is one line, which the client raises as ``ResponseError``. The client has no
retries.

``/api/generate`` takes a ``prompt``, not a conversation, and returns no tool calls: a
scripted ``ToolCall`` answering it is a 400 naming ``/api/chat`` (stuntset's, not Ollama's).
"""

from __future__ import annotations

import datetime
import functools
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Final

from stuntset.script import (
    AuthExpired,
    Delay,
    HttpError,
    Overloaded,
    Reasoning,
    Step,
    Text,
    ToolCall,
    TurnRequest,
)

from ._client import Seen, WireClient, openai_user
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
from ._declared import OLLAMA
from ._ndjson import NDJSON
from ._readback import ResponseReader, frame_json
from ._reply import Action, Reply, json_reply
from ._spec import ApiProvider, FrameLike, HistoryCall, ModelWire, PrefixView
from ._views import cache_of, declared_tools, messages_history_calls, openai_prefix_view

__all__ = ["WIRE", "OllamaChatCodec", "OllamaGenerateCodec", "ollama_created_at"]

_STREAM_TYPE: Final = "application/x-ndjson"
_BUSY: Final = "server busy, please try again.  maximum pending requests exceeded"
_UNAUTHORIZED: Final = "unauthorized"
#: Per fault kind: its default message, and what Ollama says instead.
_MESSAGES: Final[dict[type[Step], tuple[str, str]]] = {
    AuthExpired: (AuthExpired().message, _UNAUTHORIZED),
    Overloaded: (Overloaded().message, _BUSY),
}
#: What the last line reports of the time taken, in nanoseconds (fixed: nothing ran).
_DURATIONS: Final = {"total_duration": 1_000_000, "load_duration": 100_000}
_NO_TOOLS: Final = (
    "stuntset: /api/generate returns no tool calls: script the tool call for /api/chat"
)


def ollama_created_at(created: int) -> str:
    """``created_at`` as Ollama writes it (RFC 3339, UTC, fractional seconds)."""
    moment = datetime.datetime.fromtimestamp(created, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000000000Z")


def _line(value: object) -> bytes:
    return encode(value) + b"\n"


def _tagged(name: str) -> str:
    """A model name as Ollama lists it: with its tag (``llama3.2`` → ``llama3.2:latest``)."""
    return name if ":" in name else f"{name}:latest"


class _OllamaCodec(WireCodec):
    """What ``/api/chat`` and ``/api/generate`` share: NDJSON, errors, the last line."""

    wire = OLLAMA
    provider: ClassVar[str] = "ollama"
    request_id_header: ClassVar[str] = "x-stuntset-request-id"
    overloaded_status: ClassVar[int] = 503
    id_prefix: ClassVar[str] = "ollama"
    default_model: ClassVar[str] = "llama3.2"
    #: ``created_at`` is a date, not the second a template fills in
    templated: ClassVar[bool] = False

    def streams(self, body: Mapping[str, Any]) -> bool:
        return body.get("stream", True) is not False

    def stream_headers(self) -> list[tuple[str, str]]:
        return [("content-type", _STREAM_TYPE)]

    def error_body(self, status: int, message: str, error_type: str | None) -> object:
        return {"error": message}

    def models_body(self, names: list[str], created: int) -> object:
        """``GET /api/tags``: each model with its tag, as Ollama lists the models it has
        pulled (what ``ollama.Client.list()`` reads: name, model, modified_at, size, digest,
        details); sizes are 0 and digests the name's SHA-256, there being no weights."""
        listing = []
        for name in names:
            tagged = _tagged(name)
            listing.append(
                {
                    "name": tagged,
                    "model": tagged,
                    "modified_at": ollama_created_at(created),
                    "size": 0,
                    "digest": hashlib.sha256(tagged.encode()).hexdigest(),
                    "details": {
                        "parent_model": "",
                        "format": "gguf",
                        "family": "stuntset",
                        "families": ["stuntset"],
                        "parameter_size": "",
                        "quantization_level": "",
                    },
                }
            )
        return {"models": listing}

    def error_reply(
        self,
        status: int,
        message: str,
        error_type: str | None = None,
        headers: list[tuple[str, str]] | None = None,
        request_id: str | None = None,
    ) -> Reply:
        extra = [(self.request_id_header, request_id)] if request_id else []
        return json_reply(status, {"error": message}, [*extra, *(headers or [])])

    def status_fault(self, fault: StatusStep) -> StatusFault:
        found = super().status_fault(fault)
        default, ollama = _MESSAGES.get(type(fault), (None, None))
        if ollama is None or found.message != default:
            return found
        return StatusFault(found.status, ollama, found.error_type, found.headers)

    def in_band_error(self, fault: StatusFault, ctx: RenderContext) -> bytes:
        return _line({"error": fault.message})

    # --- what the two endpoints write differently ---

    def _piece(self, step: Text | Reasoning | ToolCall, piece: str, index: int) -> dict[str, Any]:
        raise NotImplementedError

    def _whole(self, plan: Plan) -> dict[str, Any]:
        raise NotImplementedError

    def _empty(self) -> dict[str, Any]:
        raise NotImplementedError

    # --- bodies ---

    def _head(self, ctx: RenderContext) -> dict[str, Any]:
        return {"model": ctx.model, "created_at": ollama_created_at(ctx.created)}

    def _last(self, plan: Plan, ctx: RenderContext, body: dict[str, Any]) -> dict[str, Any]:
        return {
            **self._head(ctx),
            **body,
            "done": True,
            "done_reason": "stop",
            **_DURATIONS,
            "prompt_eval_count": plan.usage.input_tokens,
            "prompt_eval_duration": 10_000,
            "eval_count": plan.usage.output_tokens,
            "eval_duration": 10_000,
        }

    def complete(self, plan: Plan, ctx: RenderContext) -> object:
        return self._last(plan, ctx, self._whole(plan))

    def wrong_shape(self, plan: Plan, ctx: RenderContext) -> object:
        # the stream's lines as a JSON array where one response object belongs
        return [{**self._head(ctx), **self._empty(), "done": False}] * 2

    def stream_body(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        head = self._head(ctx)
        render = functools.partial(self._events, head=head, ctx=ctx)
        return item_events(
            plan, [(step, {}) for step in plan.items if not isinstance(step, Delay)], render
        )

    def _events(
        self, step: Any, part: dict[str, Any], index: int, head: dict[str, Any], ctx: RenderContext
    ) -> list[Action]:
        if isinstance(step, ToolCall):
            return [_line({**head, **self._piece(step, "", index), "done": False})]
        out: list[Action] = []
        for piece, gap in self.text_deltas(step, ctx):
            out += pause(gap)
            out.append(_line({**head, **self._piece(step, piece, index), "done": False}))
        return out

    def stream_terminal(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        return [_line(self._last(plan, ctx, self._empty()))]

    def malformed(self, text: str, ctx: RenderContext) -> bytes:
        return text.encode() + b"\n"

    def out_of_order(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        # content after the line that said ``done``
        late = {**self._head(ctx), **self._piece(Text("out of order"), "out of order", 0)}
        return [
            *self.stream_body(plan, ctx),
            *self.stream_terminal(plan, ctx),
            _line({**late, "done": False}),
        ]


def _call(step: ToolCall, index: int) -> dict[str, Any]:
    call: dict[str, Any] = {
        "function": {"index": index, "name": step.name, "arguments": dict(step.input)}
    }
    if step.id:
        call["id"] = step.id
    return call


class OllamaChatCodec(_OllamaCodec):
    """``POST /api/chat``."""

    def parse(self, body: Any, headers: Mapping[str, str]) -> TurnRequest:
        data = require_object(body)
        model = data.get("model")
        if not isinstance(model, str) or not model:
            raise BadRequest("model is required", "model")
        messages = data.get("messages") or []
        if not isinstance(messages, list):
            raise BadRequest("json: cannot unmarshal messages: not an array", "messages")
        input_text = ""
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                input_text = content if isinstance(content, str) else ""
                break
        results: list[str] = []
        for message in reversed(messages):
            if not (isinstance(message, dict) and message.get("role") == "tool"):
                break
            results.append(str(message.get("tool_call_id") or message.get("tool_name") or ""))
        return TurnRequest(
            input_text=input_text,
            model=model,
            wire=self.wire.name,
            tool_results=tuple(reversed(results)),
            body=data,
            headers=headers if isinstance(headers, dict) else dict(headers),
        )

    def _piece(self, step: Text | Reasoning | ToolCall, piece: str, index: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": ""}
        if isinstance(step, ToolCall):
            message["tool_calls"] = [_call(step, index)]
        elif isinstance(step, Reasoning):
            message["thinking"] = piece
        else:
            message["content"] = piece
        return {"message": message}

    def _whole(self, plan: Plan) -> dict[str, Any]:
        text = "".join(s.text for s in plan.items if isinstance(s, Text))
        thinking = "".join(s.text for s in plan.items if isinstance(s, Reasoning))
        calls = [s for s in plan.items if isinstance(s, ToolCall)]
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if thinking:
            message["thinking"] = thinking
        if calls:
            message["tool_calls"] = [_call(call, i) for i, call in enumerate(calls)]
        return {"message": message}

    def _empty(self) -> dict[str, Any]:
        return {"message": {"role": "assistant", "content": ""}}


class OllamaGenerateCodec(_OllamaCodec):
    """``POST /api/generate``: a prompt in, text out."""

    def parse(self, body: Any, headers: Mapping[str, str]) -> TurnRequest:
        data = require_object(body)
        model = data.get("model")
        if not isinstance(model, str) or not model:
            raise BadRequest("model is required", "model")
        prompt = data.get("prompt", "")
        return TurnRequest(
            input_text=prompt if isinstance(prompt, str) else "",
            model=model,
            wire=self.wire.name,
            body=data,
            headers=headers if isinstance(headers, dict) else dict(headers),
        )

    def refuses(self, plan: Plan) -> str | None:
        return _NO_TOOLS if plan.has_tool_calls else None

    def _piece(self, step: Text | Reasoning | ToolCall, piece: str, index: int) -> dict[str, Any]:
        if isinstance(step, Reasoning):
            return {"response": "", "thinking": piece}
        return {"response": piece}

    def _whole(self, plan: Plan) -> dict[str, Any]:
        body: dict[str, Any] = {
            "response": "".join(s.text for s in plan.items if isinstance(s, Text))
        }
        thinking = "".join(s.text for s in plan.items if isinstance(s, Reasoning))
        if thinking:
            body["thinking"] = thinking
        return body

    def _empty(self) -> dict[str, Any]:
        return {"response": "", "context": [1, 2, 3]}


# --- read back: a recorded response as steps ---------------------------------------------------


def _read_line(line: Any, reader: ResponseReader) -> bool:
    """One line (or a whole body) into ``reader``; whether it ended the response."""
    if not isinstance(line, dict):
        return False
    error = line.get("error")
    if isinstance(error, str):
        reader.tail.append(HttpError(500, message=error))
        return True
    message = line.get("message")
    if isinstance(message, dict):
        if message.get("thinking"):
            reader.add("reasoning", "reasoning", message["thinking"])
        if message.get("content"):
            reader.add("text", "text", message["content"])
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {} if isinstance(call, dict) else {}
            key = f"tool-{sum(k.startswith('tool-') for k in reader.items)}"
            reader.item(
                key,
                "tool",
                name=function.get("name", ""),
                id=call.get("id"),
                input=function.get("arguments") or {},
            )
    else:
        if line.get("thinking"):
            reader.add("reasoning", "reasoning", line["thinking"])
        if line.get("response"):
            reader.add("text", "text", line["response"])
    if line.get("done"):
        reader.count(line.get("prompt_eval_count"), line.get("eval_count"))
        return True
    return False


def read_frames(frames: Iterable[FrameLike], reader: ResponseReader) -> bool:
    """A recorded NDJSON stream: each frame a line; the last says ``done``."""
    done = False
    for frame in frames:
        done = _read_line(frame_json(frame.data), reader) or done
    return done


def read_body(body: Any, reader: ResponseReader) -> bool:
    """A whole response (``"stream": false``)."""
    _read_line(body, reader)
    reader.unstreamed()
    return True


def read_error(status: int, body: Any, headers: Mapping[str, str]) -> Step:
    """An error response: ``{"error": "<text>"}``."""
    error = body.get("error") if isinstance(body, dict) else None
    retry_ms = headers.get("retry-after-ms")
    return HttpError(
        status,
        message=error if isinstance(error, str) else None,
        retry_after_ms=int(float(retry_ms)) if retry_ms else None,
    )


# --- a request as the checks read it -----------------------------------------------------------

_CACHE_FIELDS = ("model", "format", "options", "keep_alive", "think")


def prefix_view(body: dict[str, Any]) -> PrefixView:
    if "messages" in body:
        return openai_prefix_view(body, "messages", _CACHE_FIELDS, chained=False)
    system = {"system": body["system"]} if "system" in body else {}
    prompt = body.get("prompt")
    return PrefixView(system, [prompt], "prompt", 0, [], cache_of(body, _CACHE_FIELDS))


def history_calls(body: dict[str, Any]) -> list[HistoryCall]:
    """The ``tool_calls`` of the assistant messages; a call without an id is known by where
    it stands."""
    calls = messages_history_calls(body)
    return [
        (key if key != "None" else f"messages.tool_calls[{i}]", name, args)
        for i, (key, name, args) in enumerate(calls)
    ]


# --- the demo client ---------------------------------------------------------------------------


def _demo_request(history: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "demo", "messages": history}  # streams: Ollama's default


def _demo_apply(event: str, payload: dict[str, Any], seen: Seen) -> None:
    if "error" in payload:
        seen.problem = f"in-band error: {payload['error']}"
        return
    message = payload.get("message") or {}
    if seen.terminal and message.get("content"):
        seen.problem = "out of order: content after the done line"
        return
    seen.text += message.get("content") or ""
    for call in message.get("tool_calls") or []:
        name = call["function"]["name"]
        seen.calls.append((name, name))
    seen.terminal = seen.terminal or bool(payload.get("done"))


def _demo_tool_round(seen: Seen) -> list[dict[str, Any]]:
    calls = [{"function": {"name": name, "arguments": {}}} for name, _ in seen.calls]
    return [{"role": "assistant", "content": seen.text, "tool_calls": calls}] + [
        {"role": "tool", "content": "ok", "tool_name": name} for name, _ in seen.calls
    ]


#: ``ollama.Client(host=url("ollama"))``; ``url("ollama") + "/v1"`` is its OpenAI-compatible API.
OLLAMA_API = ApiProvider(
    "ollama", "/ollama", "Ollama (/api/chat, /api/generate, /v1)", "/api/chat and /api/generate"
)
_CHAT_PATH = "/api/chat"
_GENERATE_PATH = "/api/generate"
_CHAT_CODEC = OllamaChatCodec()
_GENERATE_CODEC = OllamaGenerateCodec()
_CODECS: Final[dict[str, WireCodec]] = {_CHAT_PATH: _CHAT_CODEC, _GENERATE_PATH: _GENERATE_CODEC}


def _codec_for(path: str, query: str | None) -> WireCodec | None:
    return _CODECS.get(path)


#: ``POST /api/chat`` and ``POST /api/generate``.
WIRE = ModelWire(
    name=OLLAMA.name,
    declared=OLLAMA,
    api=OLLAMA_API,
    title="Ollama (`POST /api/chat`, NDJSON)",
    paths=(_CHAT_PATH, _GENERATE_PATH),
    codec_for=_codec_for,
    endpoint=None,
    recorded_path=lambda path: path.endswith((_CHAT_PATH, _GENERATE_PATH)),
    cache_fields=_CACHE_FIELDS,
    prefix_view=prefix_view,
    history_calls=history_calls,
    declared_tools=declared_tools,
    read_frames=read_frames,
    read_body=read_body,
    read_error=read_error,
    client=WireClient(_CHAT_PATH, _demo_request, openai_user, _demo_apply, _demo_tool_round),
    stream=NDJSON,
    models_path="/api/tags",
)
