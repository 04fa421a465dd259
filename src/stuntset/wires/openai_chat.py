"""OpenAI Chat Completions (``POST /v1/chat/completions``), streamed and not.

Wire facts (protocols.md §2, checked against openai 3.57): chunks are ``data:`` lines without
``event:``, each ``"object": "chat.completion.chunk"``; the first delta carries the role; a tool
call's first delta carries ``index``, ``id``, ``type`` and ``name``, later ones only argument
fragments; the last choice chunk has an empty delta and the finish reason; with
``stream_options.include_usage`` a ``choices: []`` usage chunk follows; then ``data: [DONE]``
and the body ends. An in-band error is a ``data:`` object with a top-level ``error`` key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import msgspec

from stuntset.script import Delay, Reasoning, Text, ToolCall, TurnRequest

from ._client import Seen, WireClient, openai_user
from ._codec import (
    BadRequest,
    Plan,
    RenderContext,
    StatusFault,
    WireCodec,
    encode,
    pause,
    retry_count,
    text_of,
)
from ._declared import OPENAI_CHAT
from ._readback import ResponseReader, error_step, frame_json
from ._reply import Action, Pause
from ._spec import ApiProvider, FrameLike, ModelWire, PrefixView
from ._views import declared_tools, messages_history_calls, openai_prefix_view

__all__ = ["OPENAI", "WIRE", "ChatCodec", "openai_error_body", "openai_error_type"]

_DONE = b"[DONE]"
#: Where a chunk's delta goes in its encoded template (a NUL byte never occurs in JSON text).
_SLOT = b"\x00"


def openai_error_type(status: int) -> tuple[str, str | None]:
    """The ``(type, code)`` the OpenAI API puts in an error body for ``status``."""
    if status == 401:
        return "invalid_request_error", "invalid_api_key"
    if status == 429:
        return "requests", "rate_limit_exceeded"
    if status == 404:
        return "invalid_request_error", "not_found"
    if status >= 500:
        return "server_error", None
    return "invalid_request_error", None


def openai_error_body(status: int, message: str, error_type: str | None) -> dict[str, Any]:
    kind, code = openai_error_type(status)
    return {"error": {"message": message, "type": error_type or kind, "param": None, "code": code}}


def usage_object(plan: Plan) -> dict[str, Any]:
    usage = plan.usage
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def _tool_results(messages: list[Any]) -> tuple[str, ...]:
    """The tool call ids of the ``tool`` messages that end ``messages``, in order."""
    results: list[str] = []
    for message in reversed(messages):
        if not (isinstance(message, dict) and message.get("role") == "tool"):
            break
        results.append(str(message.get("tool_call_id", "")))
    return tuple(reversed(results))


class ChatCodec(WireCodec):
    """The Chat Completions wire."""

    wire = OPENAI_CHAT
    provider: ClassVar[str] = "openai"
    request_id_header: ClassVar[str] = "x-request-id"
    overloaded_status: ClassVar[int] = 503
    id_prefix: ClassVar[str] = "chatcmpl"

    def parse(self, body: Any, headers: Mapping[str, str]) -> TurnRequest:
        data, model, messages = self._checked(body)
        input_text = ""
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") == "user":
                input_text = text_of(message.get("content"))
                break
        return TurnRequest(
            input_text=input_text,
            model=model,
            wire=self.wire.name,
            retry_count=retry_count(headers),
            tool_results=_tool_results(messages),
            body=data,
            headers=headers if isinstance(headers, dict) else dict(headers),
        )

    def read(self, body: Any) -> tuple[str | None, tuple[str, ...]]:
        _, model, messages = self._checked(body)
        last = messages[-1]
        if isinstance(last, dict) and last.get("role") == "tool":
            return model, _tool_results(messages)
        return model, ()

    @staticmethod
    def _checked(body: Any) -> tuple[dict[str, Any], str, list[Any]]:
        """The body, its model and its messages; ``BadRequest`` where the API refuses it."""
        if not isinstance(body, dict):
            raise BadRequest("The request body must be a JSON object.")
        data: dict[str, Any] = body
        model = data.get("model")
        if not isinstance(model, str) or not model:
            raise BadRequest("you must provide a model parameter", "model")
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest(
                "Missing required parameter: 'messages' (a non-empty array).", "messages"
            )
        return data, model, messages

    def error_body(self, status: int, message: str, error_type: str | None) -> object:
        return openai_error_body(status, message, error_type)

    def in_band_error(self, fault: StatusFault, ctx: RenderContext) -> bytes:
        body = openai_error_body(fault.status, fault.message, fault.error_type)
        return ctx.framing.frame(encode(body))

    # --- bodies ---

    def _call_ids(self, plan: Plan, ctx: RenderContext) -> list[str]:
        key = "chat_call_ids"
        if key not in ctx.extra:
            ctx.extra[key] = [
                item.id or ctx.ids.new("call") for item in plan.items if isinstance(item, ToolCall)
            ]
        ids: list[str] = ctx.extra[key]
        return ids

    def complete(self, plan: Plan, ctx: RenderContext) -> object:
        text = "".join(item.text for item in plan.items if isinstance(item, Text))
        reasoning = "".join(item.text for item in plan.items if isinstance(item, Reasoning))
        calls = [item for item in plan.items if isinstance(item, ToolCall)]
        message: dict[str, Any] = {
            "role": "assistant",
            "content": text if text or not calls else None,
            "refusal": None,
            "annotations": [],
        }
        if reasoning:
            message["reasoning_content"] = reasoning
        if calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": self.arguments(call, ctx)},
                }
                for call, call_id in zip(calls, self._call_ids(plan, ctx), strict=True)
            ]
        return {
            "id": ctx.response_id,
            "object": "chat.completion",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                    "logprobs": None,
                }
            ],
            "usage": usage_object(plan),
            "service_tier": "default",
            "system_fingerprint": None,
        }

    def wrong_shape(self, plan: Plan, ctx: RenderContext) -> object:
        # a streaming chunk where a completion belongs
        return self._chunk(ctx, {"role": "assistant", "content": ""})

    def _chunk(
        self,
        ctx: RenderContext,
        delta: dict[str, Any] | msgspec.Raw | None,
        finish_reason: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": ctx.response_id,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "system_fingerprint": None,
            "choices": []
            if delta is None
            else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        if ctx.include_usage:
            chunk["usage"] = usage
        return chunk

    def _frame(self, ctx: RenderContext, chunk: dict[str, Any]) -> bytes:
        return ctx.framing.frame(encode(chunk))

    def _delta_frame(self, ctx: RenderContext, delta: bytes) -> bytes:
        """The frame of a content chunk whose ``delta`` is the JSON ``delta``: the same bytes
        as ``_frame(ctx, _chunk(ctx, decoded delta))``, from this request's chunk encoded once
        around a slot."""
        template: tuple[bytes, bytes] | None = ctx.extra.get("chat_chunk")
        if template is None:
            head, _, tail = encode(self._chunk(ctx, msgspec.Raw(_SLOT))).partition(_SLOT)
            template = ctx.extra["chat_chunk"] = (head, tail)
        return ctx.framing.frame(template[0] + delta + template[1])

    def _text_deltas(self, item: Text | Reasoning, ctx: RenderContext) -> list[tuple[bytes, float]]:
        """Each delta of ``item`` as its encoded ``delta`` object, with the pause before it."""
        key = "content" if isinstance(item, Text) else "reasoning_content"

        def make() -> list[tuple[bytes, float]]:
            return [(encode({key: piece}), gap) for piece, gap in self.text_deltas(item, ctx)]

        deltas: list[tuple[bytes, float]] = ctx.memo("chat_deltas", item, make)
        return deltas

    def stream_body(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        out: list[Action] = [
            self._frame(ctx, self._chunk(ctx, {"role": "assistant", "content": ""}))
        ]
        if ctx.framing.unknown_events:  # a data line whose object is not a chunk
            out.append(self._frame(ctx, {"id": ctx.response_id, "object": "stuntset.unknown"}))
        call_ids = iter(self._call_ids(plan, ctx))
        index = 0
        for item in plan.items:
            if isinstance(item, Delay):
                out += pause(item.seconds)
            elif isinstance(item, Text | Reasoning):
                for delta, gap in self._text_deltas(item, ctx):
                    if gap > 0:
                        out.append(Pause(gap))
                    out.append(self._delta_frame(ctx, delta))
            else:
                head = {
                    "index": index,
                    "id": next(call_ids),
                    "type": "function",
                    "function": {"name": item.name, "arguments": ""},
                }
                out.append(self._delta_frame(ctx, encode({"tool_calls": [head]})))
                for fragment in self.fragments(item, ctx):
                    piece = {"index": index, "function": {"arguments": fragment}}
                    out.append(self._delta_frame(ctx, encode({"tool_calls": [piece]})))
                index += 1
        return out

    def stream_terminal(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        finish = "tool_calls" if plan.has_tool_calls else "stop"
        out: list[Action] = [self._frame(ctx, self._chunk(ctx, {}, finish))]
        if ctx.include_usage:
            out.append(self._frame(ctx, self._chunk(ctx, None, usage=usage_object(plan))))
        out.append(ctx.framing.frame(_DONE))
        return out

    def malformed(self, text: str, ctx: RenderContext) -> bytes:
        return ctx.framing.frame(text.encode())

    def out_of_order(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        # the stream finishes, then content arrives for a tool call that was never started
        orphan = {"index": 3, "function": {"arguments": '{"late": true}'}}
        return [
            self._frame(ctx, self._chunk(ctx, {"role": "assistant", "content": ""})),
            self._frame(ctx, self._chunk(ctx, {}, "stop")),
            self._frame(ctx, self._chunk(ctx, {"tool_calls": [orphan]})),
            ctx.framing.frame(_DONE),
        ]


# --- read back: a recorded response as steps ---------------------------------------------------


def read_frames(frames: Iterable[FrameLike], reader: ResponseReader) -> bool:
    """A recorded Chat stream (``chat.completion.chunk`` frames, then ``[DONE]``)."""
    done = False
    for frame in frames:
        if frame.data.strip() == "[DONE]":
            done = True
            continue
        chunk = frame_json(frame.data)
        if not isinstance(chunk, dict):
            continue
        if chunk.get("usage"):
            usage = chunk["usage"]
            reader.count(usage.get("prompt_tokens"), usage.get("completion_tokens"))
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("reasoning_content"):
                reader.add("reasoning", "reasoning", delta["reasoning_content"])
            if delta.get("content"):
                reader.add("text", "text", delta["content"])
            for call in delta.get("tool_calls") or []:
                item_key = f"tool-{call.get('index', 0)}"
                item = reader.item(item_key, "tool", name="", id=None)
                function = call.get("function") or {}
                item["id"] = call.get("id") or item["id"]
                item["name"] = function.get("name") or item["name"]
                reader.extend(item_key, "args", function.get("arguments") or "")
    return done


def read_body(body: Any, reader: ResponseReader) -> bool:
    """A recorded ``chat.completion`` body."""
    if not isinstance(body, dict):
        return True
    message = ((body.get("choices") or [{}])[0]).get("message") or {}
    if message.get("reasoning_content"):
        reader.add("reasoning", "reasoning", message["reasoning_content"])
    if message.get("content"):
        reader.add("text", "text", message["content"])
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        reader.item(f"tool-{index}", "tool", name=function.get("name", ""), id=call.get("id"))
        reader.items[f"tool-{index}"]["args"] = function.get("arguments", "")
    usage = body.get("usage") or {}
    if usage:
        reader.count(usage.get("prompt_tokens"), usage.get("completion_tokens"))
    reader.unstreamed()
    return True


#: Request fields that change what the provider can reuse from its prompt cache.
_CACHE_FIELDS = (
    "model",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "prompt_cache_key",
    "prompt_cache_retention",
)


def prefix_view(body: dict[str, Any]) -> PrefixView:
    return openai_prefix_view(body, "messages", _CACHE_FIELDS, chained=False)


# --- the demo client ---------------------------------------------------------------------------


def _demo_request(history: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "demo",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": history,
    }


def _demo_apply(event: str, payload: dict[str, Any], seen: Seen) -> None:
    if "error" in payload:
        seen.problem = f"in-band error: {payload['error'].get('message')}"
    for choice in payload.get("choices", []):
        delta = choice.get("delta", {})
        seen.text += delta.get("content") or ""
        for call in delta.get("tool_calls", []):
            if "id" in call:
                seen.calls.append((call["function"]["name"], call["id"]))
            elif not seen.calls:
                seen.problem = "out of order: arguments for a tool call never started"


def _demo_tool_round(seen: Seen) -> list[dict[str, Any]]:
    calls = [
        {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}
        for name, cid in seen.calls
    ]
    return [{"role": "assistant", "content": seen.text or None, "tool_calls": calls}] + [
        {"role": "tool", "tool_call_id": cid, "content": "ok"} for _, cid in seen.calls
    ]


#: OpenAI's clients: Chat Completions and Responses under one base URL.
OPENAI = ApiProvider(
    "openai", "/openai/v1", "OpenAI (Chat Completions, Responses)", "Chat Completions and Responses"
)
_CODEC = ChatCodec()
_PATH = "/v1/chat/completions"


def _codec_for(path: str, query: str | None) -> WireCodec | None:
    return _CODEC if path == _PATH else None


#: ``POST /v1/chat/completions``.
WIRE = ModelWire(
    name=OPENAI_CHAT.name,
    declared=OPENAI_CHAT,
    api=OPENAI,
    title="OpenAI Chat (`POST /v1/chat/completions`)",
    paths=(_PATH,),
    codec_for=_codec_for,
    endpoint="/chat/completions",
    cache_fields=_CACHE_FIELDS,
    prefix_view=prefix_view,
    history_calls=messages_history_calls,
    declared_tools=declared_tools,
    read_frames=read_frames,
    read_body=read_body,
    read_error=error_step,
    client=WireClient(_PATH, _demo_request, openai_user, _demo_apply, _demo_tool_round),
    aliases=("openai.chat",),
)
