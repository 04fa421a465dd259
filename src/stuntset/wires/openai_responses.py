"""OpenAI Responses (``POST /v1/responses``), streamed and not.

Wire facts (protocols.md §3, checked against openai 3.57's ``responses.stream()``): every
event has an ``event:`` line equal to its JSON ``type`` and a ``sequence_number`` counting
from 0; ``response.created`` comes first and every lifecycle event carries the same
``response.id``; each output item is announced by ``output_item.added`` before its content
and closed by ``output_item.done``; ``response.completed`` carries the full ``output`` and
``usage``, and the body ends right after it (no ``[DONE]``). An in-band failure is
``response.failed`` with ``response.error``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any, ClassVar

from stuntset.script import (
    HttpError,
    RateLimits,
    RateLimitWindow,
    Reasoning,
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
    WireCodec,
    encode,
    item_events,
    pause,
    require_model,
    require_object,
    retry_count,
    text_of,
)
from ._declared import OPENAI_RESPONSES
from ._readback import ResponseReader, error_step, frame_json
from ._reply import Action
from ._spec import FrameLike, HistoryCall, ModelWire, PrefixView
from ._views import declared_tools, openai_prefix_view
from .openai_chat import OPENAI, openai_error_body

__all__ = ["WIRE", "ResponsesCodec", "rate_limit_headers"]


def _usage(plan: Plan) -> dict[str, Any]:
    usage = plan.usage
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _window_headers(name: str, window: RateLimitWindow) -> list[tuple[str, str]]:
    headers = [(f"x-codex-{name}-used-percent", _number(window.used_percent))]
    if window.window_minutes is not None:
        headers.append((f"x-codex-{name}-window-minutes", str(window.window_minutes)))
    if window.resets_at is not None:
        headers.append((f"x-codex-{name}-reset-at", str(window.resets_at)))
    return headers


def rate_limit_headers(limits: RateLimits) -> list[tuple[str, str]]:
    """The response headers Codex reads its account's rate limits from (codex-rs
    ``codex-api/src/rate_limits.rs``; what codex-cli 0.163.0 showed for them is in
    docs/protocol-reference.md)."""
    headers: list[tuple[str, str]] = []
    if limits.primary is not None:
        headers += _window_headers("primary", limits.primary)
    if limits.secondary is not None:
        headers += _window_headers("secondary", limits.secondary)
    credits = limits.credits
    if credits is not None:
        headers.append(("x-codex-credits-has-credits", "true" if credits.has_credits else "false"))
        headers.append(("x-codex-credits-unlimited", "true" if credits.unlimited else "false"))
        if credits.balance is not None:
            headers.append(("x-codex-credits-balance", credits.balance))
    return headers


def _failure_code(status: int) -> str:
    if status == 429:
        return "rate_limit_exceeded"
    if status in (400, 404, 422):
        return "invalid_prompt"
    return "server_error"


class ResponsesCodec(WireCodec):
    """The Responses wire."""

    wire = OPENAI_RESPONSES
    provider: ClassVar[str] = "openai"
    request_id_header: ClassVar[str] = "x-request-id"
    overloaded_status: ClassVar[int] = 503
    id_prefix: ClassVar[str] = "resp"
    sends_rate_limits: ClassVar[bool] = True

    def parse(self, body: Any, headers: Mapping[str, str]) -> TurnRequest:
        data = require_object(body)
        model = require_model(data)
        raw = data.get("input", "")
        if not isinstance(raw, str | list):
            raise BadRequest("Invalid type for 'input': expected a string or an array.", "input")
        input_text = raw if isinstance(raw, str) else ""
        results: list[str] = []
        if isinstance(raw, list):
            for entry in reversed(raw):
                if isinstance(entry, dict) and entry.get("role") == "user":
                    input_text = text_of(entry.get("content"))
                    break
            for entry in reversed(raw):
                if not (isinstance(entry, dict) and entry.get("type") == "function_call_output"):
                    break
                results.append(str(entry.get("call_id", "")))
        return TurnRequest(
            input_text=input_text,
            model=model,
            wire=self.wire.name,
            retry_count=retry_count(headers),
            tool_results=tuple(reversed(results)),
            body=data,
            headers=headers if isinstance(headers, dict) else dict(headers),
        )

    def error_body(self, status: int, message: str, error_type: str | None) -> object:
        return openai_error_body(status, message, error_type)

    # --- items ---

    def _items(
        self, plan: Plan, ctx: RenderContext
    ) -> list[tuple[Text | Reasoning | ToolCall, dict[str, Any]]]:
        """Each content step with its final output item (ids minted once per request)."""
        key = "responses_items"
        if key in ctx.extra:
            cached: list[tuple[Text | Reasoning | ToolCall, dict[str, Any]]] = ctx.extra[key]
            return cached
        items: list[tuple[Text | Reasoning | ToolCall, dict[str, Any]]] = []
        for step in plan.items:
            if isinstance(step, Text):
                item: dict[str, Any] = {
                    "type": "message",
                    "id": ctx.ids.new("msg"),
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": step.text, "annotations": []}],
                }
            elif isinstance(step, Reasoning):
                item = {
                    "type": "reasoning",
                    "id": ctx.ids.new("rs"),
                    "summary": [{"type": "summary_text", "text": step.text}],
                    "status": "completed",
                }
            elif isinstance(step, ToolCall):
                # "<namespace>/<tool>" calls a tool of a namespace tool (Codex lists an MCP
                # server's tools as namespace "mcp__<server>"); "/" is never in a tool name
                namespace, _, name = step.name.rpartition("/")
                item = {
                    "type": "function_call",
                    "id": ctx.ids.new("fc"),
                    "call_id": step.id or ctx.ids.new("call"),
                    "name": name,
                    "arguments": self.arguments(step, ctx),
                    "status": "completed",
                }
                if namespace:
                    item["namespace"] = namespace
            else:
                continue
            items.append((step, item))
        ctx.extra[key] = items
        return items

    def _response(
        self, plan: Plan, ctx: RenderContext, status: str, *, final: bool
    ) -> dict[str, Any]:
        return {
            "id": ctx.response_id,
            "object": "response",
            "created_at": ctx.created,
            "status": status,
            "model": ctx.model,
            "output": [item for _, item in self._items(plan, ctx)] if final else [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
            "instructions": None,
            "metadata": {},
            "temperature": 1.0,
            "top_p": 1.0,
            "usage": _usage(plan) if final else None,
        }

    def complete(self, plan: Plan, ctx: RenderContext) -> object:
        return self._response(plan, ctx, "completed", final=True)

    def wrong_shape(self, plan: Plan, ctx: RenderContext) -> object:
        # a stream event where a response belongs
        return {
            "type": "response.created",
            "sequence_number": 0,
            "response": self._response(plan, ctx, "in_progress", final=False),
        }

    # --- stream ---

    def _event(self, ctx: RenderContext, kind: str, **fields: Any) -> bytes:
        payload = {"type": kind, "sequence_number": ctx.next_seq(), **fields}
        return ctx.framing.frame(encode(payload), kind)

    def stream_body(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        out: list[Action] = [
            self._event(
                ctx,
                "response.created",
                response=self._response(plan, ctx, "in_progress", final=False),
            )
        ]
        if ctx.framing.unknown_events:
            out.append(self._event(ctx, "response.stuntset_unknown"))
        out.append(
            self._event(
                ctx,
                "response.in_progress",
                response=self._response(plan, ctx, "in_progress", final=False),
            )
        )
        render = partial(self._item_events, ctx=ctx)
        return out + item_events(plan, self._items(plan, ctx), render)

    def _item_events(
        self,
        step: Text | Reasoning | ToolCall,
        item: dict[str, Any],
        index: int,
        ctx: RenderContext,
    ) -> list[Action]:
        item_id = item["id"]
        at = {"item_id": item_id, "output_index": index}
        out: list[Action] = []
        if isinstance(step, Text):
            added = {**item, "status": "in_progress", "content": []}
            empty = {"type": "output_text", "text": "", "annotations": []}
            out.append(
                self._event(ctx, "response.output_item.added", output_index=index, item=added)
            )
            out.append(
                self._event(ctx, "response.content_part.added", **at, content_index=0, part=empty)
            )
            for delta, gap in self.text_deltas(step, ctx):
                out += pause(gap)
                out.append(
                    self._event(
                        ctx,
                        "response.output_text.delta",
                        **at,
                        content_index=0,
                        delta=delta,
                        logprobs=[],
                    )
                )
            out.append(
                self._event(
                    ctx,
                    "response.output_text.done",
                    **at,
                    content_index=0,
                    text=step.text,
                    logprobs=[],
                )
            )
            out.append(
                self._event(
                    ctx,
                    "response.content_part.done",
                    **at,
                    content_index=0,
                    part=item["content"][0],
                )
            )
        elif isinstance(step, Reasoning):
            added = {**item, "status": "in_progress", "summary": []}
            out.append(
                self._event(ctx, "response.output_item.added", output_index=index, item=added)
            )
            empty = {"type": "summary_text", "text": ""}
            out.append(
                self._event(
                    ctx, "response.reasoning_summary_part.added", **at, summary_index=0, part=empty
                )
            )
            for delta, gap in self.text_deltas(step, ctx):
                out += pause(gap)
                out.append(
                    self._event(
                        ctx,
                        "response.reasoning_summary_text.delta",
                        **at,
                        summary_index=0,
                        delta=delta,
                    )
                )
            out.append(
                self._event(
                    ctx,
                    "response.reasoning_summary_text.done",
                    **at,
                    summary_index=0,
                    text=step.text,
                )
            )
            out.append(
                self._event(
                    ctx,
                    "response.reasoning_summary_part.done",
                    **at,
                    summary_index=0,
                    part=item["summary"][0],
                )
            )
        else:
            added = {**item, "status": "in_progress", "arguments": ""}
            out.append(
                self._event(ctx, "response.output_item.added", output_index=index, item=added)
            )
            for fragment in self.fragments(step, ctx):
                out.append(
                    self._event(ctx, "response.function_call_arguments.delta", **at, delta=fragment)
                )
            out.append(
                self._event(
                    ctx, "response.function_call_arguments.done", **at, arguments=item["arguments"]
                )
            )
        out.append(self._event(ctx, "response.output_item.done", output_index=index, item=item))
        return out

    def stream_terminal(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        return [
            self._event(
                ctx,
                "response.completed",
                response=self._response(plan, ctx, "completed", final=True),
            )
        ]

    def in_band_error(self, fault: StatusFault, ctx: RenderContext) -> bytes:
        # the lifecycle identity must not change, so build from the context alone
        response = {
            "id": ctx.response_id,
            "object": "response",
            "created_at": ctx.created,
            "status": "failed",
            "model": ctx.model,
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": {"code": _failure_code(fault.status), "message": fault.message},
            "incomplete_details": None,
            "usage": None,
        }
        return self._event(ctx, "response.failed", response=response)

    def malformed(self, text: str, ctx: RenderContext) -> bytes:
        return ctx.framing.frame(text.encode(), "response.output_text.delta")

    def out_of_order(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        # text for output item 0 arrives although no item was ever added
        created = self._response(plan, ctx, "in_progress", final=False)
        return [
            self._event(ctx, "response.created", response=created),
            self._event(
                ctx,
                "response.output_text.delta",
                item_id="msg_missing",
                output_index=0,
                content_index=0,
                delta="out of order",
                logprobs=[],
            ),
            self._event(
                ctx, "response.completed", response={**created, "status": "completed", "output": []}
            ),
        ]


# --- read back: a recorded response as steps ---------------------------------------------------

_ENDS = ("response.completed", "response.incomplete", "response.failed")


def read_frames(frames: Iterable[FrameLike], reader: ResponseReader) -> bool:
    """A recorded Responses stream (typed events; it ends with ``response.completed``)."""
    done = False
    for frame in frames:
        event = frame_json(frame.data)
        if not isinstance(event, dict):
            continue
        kind = event.get("type", frame.event)
        key = f"item-{event.get('output_index')}"
        if kind == "response.output_item.added":
            item = event.get("item") or {}
            if item.get("type") == "function_call":
                reader.item(key, "tool", name=item.get("name", ""), id=item.get("call_id"))
            elif item.get("type") == "reasoning":
                reader.item(key, "reasoning")
            else:
                reader.item(key, "text")
        elif kind == "response.output_text.delta":
            reader.add(key, "text", event.get("delta", ""))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            reader.add(key, "reasoning", event.get("delta", ""))
        elif kind == "response.function_call_arguments.delta":
            reader.add(key, "tool", event.get("delta", ""), field="args")
        elif kind in _ENDS:
            usage = (event.get("response") or {}).get("usage") or {}
            if usage:
                reader.count(usage.get("input_tokens"), usage.get("output_tokens"))
            if kind == "response.failed":
                error = (event.get("response") or {}).get("error") or {}
                reader.tail.append(HttpError(500, message=error.get("message")))
            done = True
    return done


def read_body(body: Any, reader: ResponseReader) -> bool:
    """A recorded ``response`` object."""
    if not isinstance(body, dict):
        return True
    for index, item in enumerate(body.get("output") or []):
        key = f"item-{index}"
        if item.get("type") == "message":
            for part in item.get("content") or []:
                reader.add(key, "text", part.get("text", ""))
        elif item.get("type") == "reasoning":
            for part in item.get("summary") or []:
                reader.add(key, "reasoning", part.get("text", ""))
        elif item.get("type") == "function_call":
            reader.item(key, "tool", name=item.get("name", ""), id=item.get("call_id"))
            reader.items[key]["args"] = item.get("arguments", "")
    usage = body.get("usage") or {}
    if usage:
        reader.count(usage.get("input_tokens"), usage.get("output_tokens"))
    reader.unstreamed()
    return True


# --- a request as the checks read it -----------------------------------------------------------


#: Request fields that change what the provider can reuse from its prompt cache.
_CACHE_FIELDS = (
    "model",
    "tool_choice",
    "parallel_tool_calls",
    "text",
    "reasoning",
    "prompt_cache_key",
    "prompt_cache_retention",
)


def prefix_view(body: dict[str, Any]) -> PrefixView:
    chained = bool(body.get("previous_response_id") or body.get("conversation"))
    return openai_prefix_view(body, "input", _CACHE_FIELDS, chained=chained)


def history_calls(body: dict[str, Any]) -> list[HistoryCall]:
    """The ``function_call`` items of ``input``."""
    items = body.get("input")
    return [
        (str(item.get("call_id")), item.get("name"), item.get("arguments"))
        for item in (items if isinstance(items, list) else [])
        if isinstance(item, dict) and item.get("type") == "function_call"
    ]


# --- the demo client ---------------------------------------------------------------------------


def _demo_request(history: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "demo", "stream": True, "input": history}


def _demo_apply(event: str, payload: dict[str, Any], seen: Seen) -> None:
    kind = payload.get("type", "")
    if kind == "response.output_item.added":
        seen.started += 1
    elif kind == "response.output_text.delta" and not seen.started:
        seen.problem = "out of order: text for an output item never added"
    elif kind == "response.output_text.delta":
        seen.text += payload["delta"]
    elif kind == "response.output_item.done" and payload["item"]["type"] == "function_call":
        seen.calls.append((payload["item"]["name"], payload["item"]["call_id"]))
    elif kind == "response.completed":
        seen.terminal = True
    elif kind == "response.failed":
        seen.problem = f"response.failed: {payload['response']['error']['message']}"
    if kind != "response.created" and seen.events == 1:
        seen.problem = f"out of order: {kind} before response.created"


def _demo_tool_round(seen: Seen) -> list[dict[str, Any]]:
    return [
        item
        for name, cid in seen.calls
        for item in (
            {"type": "function_call", "call_id": cid, "name": name, "arguments": "{}"},
            {"type": "function_call_output", "call_id": cid, "output": "ok"},
        )
    ]


_CODEC = ResponsesCodec()
_PATH = "/v1/responses"


def _codec_for(path: str, query: str | None) -> WireCodec | None:
    return _CODEC if path == _PATH else None


#: ``POST /v1/responses``.
WIRE = ModelWire(
    name=OPENAI_RESPONSES.name,
    declared=OPENAI_RESPONSES,
    api=OPENAI,
    title="OpenAI Responses (`POST /v1/responses`)",
    paths=(_PATH,),
    codec_for=_codec_for,
    endpoint="/responses",
    cache_fields=_CACHE_FIELDS,
    prefix_view=prefix_view,
    history_calls=history_calls,
    declared_tools=declared_tools,
    read_frames=read_frames,
    read_body=read_body,
    read_error=error_step,
    client=WireClient(_PATH, _demo_request, openai_user, _demo_apply, _demo_tool_round),
    aliases=("openai.responses",),
)
