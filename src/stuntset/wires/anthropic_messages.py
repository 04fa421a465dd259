"""Anthropic Messages (``POST /v1/messages``), streamed and not.

Wire facts (protocols.md §4, checked against anthropic 2.14): every event has an ``event:``
line equal to its JSON ``type`` (without it the SDK yields nothing); ``message_start`` first,
then per content block ``content_block_start`` → deltas → ``content_block_stop`` (text:
``text_delta``; tool_use: ``input_json_delta``, first fragment empty; thinking:
``thinking_delta`` then one ``signature_delta``), a ``ping`` after ``message_start``, a
``message_delta`` with the stop reason and cumulative usage, ``message_stop``, and the body ends.
An in-band error is ``event: error``. Both auth header forms are accepted (``x-api-key`` and
``Authorization: Bearer``); the version header is not checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any, ClassVar

from stuntset.script import HttpError, Overloaded, Reasoning, Text, ToolCall, TurnRequest

from ._client import Seen, WireClient, openai_user
from ._codec import (
    BadRequest,
    Plan,
    RenderContext,
    StatusFault,
    WireCodec,
    encode,
    item_events,
    pause,
    require_model,
    require_object,
    retry_count,
    text_of,
)
from ._declared import ANTHROPIC_MESSAGES
from ._readback import ResponseReader, error_step, frame_json
from ._reply import Action
from ._spec import ApiProvider, FrameLike, ModelWire, PrefixView
from ._views import cache_of, declared_tools, messages_history_calls, strip_cache_control

__all__ = ["WIRE", "AnthropicCodec", "anthropic_error_type"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def anthropic_error_type(status: int) -> str:
    """The ``error.type`` the Anthropic API uses for ``status``."""
    return _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


class AnthropicCodec(WireCodec):
    """The Messages wire."""

    wire = ANTHROPIC_MESSAGES
    provider: ClassVar[str] = "anthropic"
    request_id_header: ClassVar[str] = "request-id"
    overloaded_status: ClassVar[int] = 529
    id_prefix: ClassVar[str] = "msg"
    too_large_type: ClassVar[str | None] = "request_too_large"
    default_model: ClassVar[str] = "claude-stuntset"

    def models_body(self, names: list[str], created: int) -> object:
        """Anthropic's model list: typed entries, a page with its first and last ids."""
        data = [
            {"type": "model", "id": n, "display_name": n, "created_at": "2026-01-01T00:00:00Z"}
            for n in names
        ]
        return {"data": data, "has_more": False, "first_id": names[0], "last_id": names[-1]}

    def parse(self, body: Any, headers: Mapping[str, str]) -> TurnRequest:
        data = require_object(body)
        model = require_model(data)
        if not isinstance(data.get("max_tokens"), int):
            raise BadRequest("max_tokens: Field required", "max_tokens")
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("messages: Field required (a non-empty list)", "messages")
        input_text = ""
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") == "user":
                input_text = text_of(message.get("content"))
                if input_text:
                    break
        results: list[str] = []
        last = messages[-1]
        if (
            isinstance(last, dict)
            and last.get("role") == "user"
            and isinstance(last.get("content"), list)
        ):
            results = [
                str(block.get("tool_use_id", ""))
                for block in last["content"]
                if isinstance(block, dict) and block.get("type") == "tool_result"
            ]
        return TurnRequest(
            input_text=input_text,
            model=model,
            wire=self.wire.name,
            retry_count=retry_count(headers),
            tool_results=tuple(results),
            body=data,
            headers=headers if isinstance(headers, dict) else dict(headers),
        )

    def error_body(self, status: int, message: str, error_type: str | None) -> object:
        return {
            "type": "error",
            "error": {"type": error_type or anthropic_error_type(status), "message": message},
        }

    def in_band_error(self, fault: StatusFault, ctx: RenderContext) -> bytes:
        body = self.error_body(fault.status, fault.message, fault.error_type)
        return ctx.framing.frame(encode(body), "error")

    # --- bodies ---

    def _blocks(
        self, plan: Plan, ctx: RenderContext
    ) -> list[tuple[Text | Reasoning | ToolCall, dict[str, Any]]]:
        key = "anthropic_blocks"
        if key in ctx.extra:
            cached: list[tuple[Text | Reasoning | ToolCall, dict[str, Any]]] = ctx.extra[key]
            return cached
        blocks: list[tuple[Text | Reasoning | ToolCall, dict[str, Any]]] = []
        for step in plan.items:
            if isinstance(step, Text):
                blocks.append((step, {"type": "text", "text": step.text}))
            elif isinstance(step, Reasoning):
                signature = step.signature or ctx.signature(step.text)
                blocks.append(
                    (step, {"type": "thinking", "thinking": step.text, "signature": signature})
                )
            elif isinstance(step, ToolCall):
                block = {
                    "type": "tool_use",
                    "id": step.id or ctx.ids.new("toolu"),
                    "name": step.name,
                    "input": step.input,
                }
                blocks.append((step, block))
        ctx.extra[key] = blocks
        return blocks

    def _usage(self, plan: Plan) -> dict[str, Any]:
        return {
            "input_tokens": plan.usage.input_tokens,
            "output_tokens": plan.usage.output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }

    def _message(self, plan: Plan, ctx: RenderContext, *, final: bool) -> dict[str, Any]:
        stop = ("tool_use" if plan.has_tool_calls else "end_turn") if final else None
        usage = self._usage(plan)
        if not final:
            usage["output_tokens"] = min(1, plan.usage.output_tokens)
        return {
            "id": ctx.response_id,
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": [block for _, block in self._blocks(plan, ctx)] if final else [],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }

    def complete(self, plan: Plan, ctx: RenderContext) -> object:
        return self._message(plan, ctx, final=True)

    def wrong_shape(self, plan: Plan, ctx: RenderContext) -> object:
        # a stream event where a message belongs
        return {"type": "message_start", "message": self._message(plan, ctx, final=False)}

    # --- stream ---

    def _event(self, ctx: RenderContext, kind: str, **fields: Any) -> bytes:
        return ctx.framing.frame(encode({"type": kind, **fields}), kind)

    def stream_body(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        out: list[Action] = [
            self._event(ctx, "message_start", message=self._message(plan, ctx, final=False))
        ]
        if ctx.framing.unknown_events:
            out.append(self._event(ctx, "stuntset_unknown", note="an event type nobody knows"))
        if plan.has_tool_calls:  # a tool_use block's id may be minted per request
            return out + self._ping_and_blocks(plan, ctx)
        # after message_start, nothing of a plan without tool calls depends on the request
        make = partial(self._ping_and_blocks, plan, ctx)
        return out + ctx.memo_frames("anthropic_blocks", plan, make)

    def _ping_and_blocks(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        render = partial(self._block_events, ctx=ctx)
        return [self._event(ctx, "ping"), *item_events(plan, self._blocks(plan, ctx), render)]

    def _block_events(
        self,
        step: Text | Reasoning | ToolCall,
        block: dict[str, Any],
        index: int,
        ctx: RenderContext,
    ) -> list[Action]:
        if isinstance(step, ToolCall):  # its id may be minted per request
            return self._tool_events(step, block, index, ctx)
        # a text or thinking block holds nothing of the request: its frames are made once
        make = partial(self._text_events, step, block, index, ctx)
        return ctx.memo_frames(("anthropic_block", index), step, make)

    def _text_events(
        self, step: Text | Reasoning, block: dict[str, Any], index: int, ctx: RenderContext
    ) -> list[Action]:
        if isinstance(step, Text):
            kind, field, opened = "text_delta", "text", {"type": "text", "text": ""}
        else:
            kind, field = "thinking_delta", "thinking"
            opened = {"type": "thinking", "thinking": "", "signature": ""}
        out: list[Action] = [
            self._event(ctx, "content_block_start", index=index, content_block=opened)
        ]
        for piece, gap in self.text_deltas(step, ctx):
            out += pause(gap)
            out.append(self._delta(ctx, index, {"type": kind, field: piece}))
        if isinstance(step, Reasoning):
            signature = {"type": "signature_delta", "signature": block["signature"]}
            out.append(self._delta(ctx, index, signature))
        out.append(self._event(ctx, "content_block_stop", index=index))
        return out

    def _tool_events(
        self, step: ToolCall, block: dict[str, Any], index: int, ctx: RenderContext
    ) -> list[Action]:
        opened = {**block, "input": {}}
        out: list[Action] = [
            self._event(ctx, "content_block_start", index=index, content_block=opened)
        ]
        for fragment in ["", *self.fragments(step, ctx)]:
            out.append(
                self._delta(ctx, index, {"type": "input_json_delta", "partial_json": fragment})
            )
        out.append(self._event(ctx, "content_block_stop", index=index))
        return out

    def _delta(self, ctx: RenderContext, index: int, payload: dict[str, Any]) -> bytes:
        return self._event(ctx, "content_block_delta", index=index, delta=payload)

    def stream_terminal(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        def make() -> list[Action]:
            stop = "tool_use" if plan.has_tool_calls else "end_turn"
            return [
                self._event(
                    ctx,
                    "message_delta",
                    delta={"stop_reason": stop, "stop_sequence": None},
                    usage=self._usage(plan),
                ),
                self._event(ctx, "message_stop"),
            ]

        # a plan is made once per script, and ends the same way on every request
        return ctx.memo_frames("anthropic_terminal", plan, make)

    def malformed(self, text: str, ctx: RenderContext) -> bytes:
        return ctx.framing.frame(text.encode(), "content_block_delta")

    def out_of_order(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        # content for block 0, which was never started
        orphan = {"type": "text_delta", "text": "out of order"}
        stop = {"stop_reason": "end_turn", "stop_sequence": None}
        return [
            self._event(ctx, "message_start", message=self._message(plan, ctx, final=False)),
            self._event(ctx, "content_block_delta", index=0, delta=orphan),
            self._event(ctx, "message_delta", delta=stop, usage=self._usage(plan)),
            self._event(ctx, "message_stop"),
        ]


# --- read back: a recorded response as steps ---------------------------------------------------


def _read_event(event: dict[str, Any], kind: Any, reader: ResponseReader) -> bool:
    """One Messages stream event into ``reader``; whether it ended the response."""
    key = f"block-{event.get('index')}"
    if kind == "message_start":
        reader.count((event.get("message") or {}).get("usage", {}).get("input_tokens"))
    elif kind == "content_block_start":
        block = event.get("content_block") or {}
        if block.get("type") == "tool_use":
            reader.item(key, "tool", name=block.get("name", ""), id=block.get("id"))
        elif block.get("type") == "thinking":
            reader.item(key, "reasoning", signature=None)
        else:
            reader.item(key, "text")
    elif kind == "content_block_delta":
        delta = event.get("delta") or {}
        if delta.get("type") == "text_delta":
            reader.add(key, "text", delta.get("text", ""))
        elif delta.get("type") == "thinking_delta":
            reader.add(key, "reasoning", delta.get("thinking", ""))
        elif delta.get("type") == "signature_delta":
            reader.item(key, "reasoning")["signature"] = delta.get("signature")
        elif delta.get("type") == "input_json_delta":
            reader.add(key, "tool", delta.get("partial_json", ""), field="args")
    elif kind == "message_delta":
        reader.count(output_tokens=(event.get("usage") or {}).get("output_tokens"))
    elif kind == "message_stop":
        return True
    elif kind == "error":
        error = event.get("error") or {}
        message = error.get("message")
        if error.get("type") == "overloaded_error":
            reader.tail.append(Overloaded(message=message or "Overloaded"))
        else:
            reader.tail.append(HttpError(500, message=message, error_type=error.get("type")))
        return True
    return False


def read_frames(frames: Iterable[FrameLike], reader: ResponseReader) -> bool:
    """A recorded Messages stream (it ends with ``message_stop``, or an ``error`` event)."""
    done = False
    for frame in frames:
        event = frame_json(frame.data)
        if isinstance(event, dict):
            done = _read_event(event, event.get("type", frame.event), reader) or done
    return done


def read_body(body: Any, reader: ResponseReader) -> bool:
    """A recorded ``message`` object."""
    if not isinstance(body, dict):
        return True
    for index, block in enumerate(body.get("content") or []):
        key = f"block-{index}"
        if block.get("type") == "text":
            reader.add(key, "text", block.get("text", ""))
        elif block.get("type") == "thinking":
            reader.add(key, "reasoning", block.get("thinking", ""))
            reader.items[key]["signature"] = block.get("signature")
        elif block.get("type") == "tool_use":
            reader.item(
                key,
                "tool",
                name=block.get("name", ""),
                id=block.get("id"),
                input=block.get("input"),
            )
    usage = body.get("usage") or {}
    if usage:
        reader.count(usage.get("input_tokens"), usage.get("output_tokens"))
    reader.unstreamed()
    return True


# --- a request as the checks read it -----------------------------------------------------------

#: Request fields that change what the provider can reuse from its prompt cache.
_CACHE_FIELDS = ("model", "tool_choice", "thinking")


def _text_blocks(value: Any) -> Any:
    return [{"type": "text", "text": value}] if isinstance(value, str) else value


def prefix_view(body: dict[str, Any]) -> PrefixView:
    """Messages and the system prompt as blocks (a string is one text block), without their
    ``cache_control`` markers."""
    messages = [
        {**m, "content": _text_blocks(m.get("content"))} if isinstance(m, dict) else m
        for m in body.get("messages") or []
    ]
    system = {"system": _text_blocks(body["system"])} if "system" in body else {}
    return PrefixView(
        system=strip_cache_control(system),
        messages=strip_cache_control(messages),
        key="messages",
        offset=0,
        tools=strip_cache_control(body.get("tools") or []),
        cache=strip_cache_control(cache_of(body, _CACHE_FIELDS)),
    )


# --- the demo client ---------------------------------------------------------------------------


def _demo_request(history: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "demo", "max_tokens": 1024, "stream": True, "messages": history}


def _demo_apply(event: str, payload: dict[str, Any], seen: Seen) -> None:
    kind = payload.get("type", "")
    if event == "error":
        seen.problem = f"in-band error: {payload['error']['type']}"
    elif kind == "content_block_start":
        seen.started += 1
    if kind == "content_block_delta" and payload["index"] >= seen.started:
        seen.problem = "out of order: content for a block never started"
    elif kind == "content_block_delta" and payload["delta"]["type"] == "text_delta":
        seen.text += payload["delta"]["text"]
    if kind == "content_block_start" and payload["content_block"]["type"] == "tool_use":
        block = payload["content_block"]
        seen.calls.append((block["name"], block["id"]))
    elif kind == "message_stop":
        seen.terminal = True


def _demo_tool_round(seen: Seen) -> list[dict[str, Any]]:
    uses = [{"type": "tool_use", "id": cid, "name": name, "input": {}} for name, cid in seen.calls]
    results = [
        {"type": "tool_result", "tool_use_id": cid, "content": "ok"} for _, cid in seen.calls
    ]
    return [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]


_ANTHROPIC = ApiProvider("anthropic", "/anthropic", "Anthropic (Messages)", "Messages")
_CODEC = AnthropicCodec()
_PATH = "/v1/messages"


def _codec_for(path: str, query: str | None) -> WireCodec | None:
    return _CODEC if path == _PATH else None


#: ``POST /v1/messages``.
WIRE = ModelWire(
    name=ANTHROPIC_MESSAGES.name,
    declared=ANTHROPIC_MESSAGES,
    api=_ANTHROPIC,
    title="Anthropic Messages (`POST /v1/messages`)",
    paths=(_PATH,),
    codec_for=_codec_for,
    endpoint="/messages",
    version_header="anthropic-version",
    cache_fields=_CACHE_FIELDS,
    prefix_view=prefix_view,
    history_calls=messages_history_calls,
    declared_tools=declared_tools,
    read_frames=read_frames,
    read_body=read_body,
    read_error=error_step,
    client=WireClient(_PATH, _demo_request, openai_user, _demo_apply, _demo_tool_round),
    aliases=("anthropic.messages",),
)
