"""AWS Bedrock's Converse API (``POST /model/{modelId}/converse`` and ``/converse-stream``),
what boto3's ``bedrock-runtime`` client's ``converse`` and ``converse_stream`` call.

Wire facts (botocore 1.44's ``bedrock-runtime`` model; docs/protocol-bedrock.md): the model
is in the path; a request is ``{"messages": [{"role", "content": [...]}], "system": [{"text"}],
"inferenceConfig", "toolConfig": {"tools": [{"toolSpec": {"name", "description",
"inputSchema": {"json"}}}]}}`` whose content blocks are ``text``, ``toolUse`` (``toolUseId``,
``name``, ``input``), ``toolResult`` (``toolUseId``, ``content``) and ``reasoningContent``.
A response is ``{"output": {"message": {"role": "assistant", "content"}}, "stopReason",
"usage": {"inputTokens", "outputTokens", "totalTokens"}, "metrics": {"latencyMs"}}``. A stream
is binary event-stream messages (``_eventstream``): ``messageStart``, per content block
``contentBlockStart`` (tool use only: its id and name) → ``contentBlockDelta`` (``text``,
``toolUse.input`` fragments, ``reasoningContent.text`` then ``.signature``) →
``contentBlockStop``, then ``messageStop`` (``stopReason``) and ``metadata`` (usage, metrics).
Errors are Bedrock's (``_bedrock``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Final

from stuntset.script import Reasoning, Text, ToolCall, TurnRequest

from ._bedrock import BEDROCK, BedrockErrors, model_path, read_error, read_exception
from ._client import Seen, WireClient
from ._codec import (
    BadRequest,
    Plan,
    RenderContext,
    WireCodec,
    encode,
    item_events,
    pause,
    require_object,
)
from ._declared import BEDROCK_CONVERSE
from ._eventstream import CONTENT_TYPE, EVENTSTREAM, EventStreamError, decode_frame, event_message
from ._readback import ResponseReader, frame_json
from ._reply import Action
from ._spec import DeclaredTool, FrameLike, HistoryCall, ModelWire, PrefixView
from ._views import cache_of, declared_tools

__all__ = ["WIRE", "ConverseCodec", "converse_codec"]

_OPERATIONS: Final = {"converse": False, "converse-stream": True}


@functools.lru_cache(maxsize=256)
def converse_codec(path: str) -> ConverseCodec | None:
    """The codec of a Converse path (one per model and operation), else None."""
    found = model_path(path)
    if found is None or found[1] not in _OPERATIONS:
        return None
    return ConverseCodec(found[0], stream=_OPERATIONS[found[1]])


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


class ConverseCodec(BedrockErrors, WireCodec):
    """The Converse wire, for one model and operation."""

    wire = BEDROCK_CONVERSE
    id_prefix: ClassVar[str] = "converse"
    default_model: ClassVar[str] = "anthropic.claude-stuntset-v1:0"
    exceptions: ClassVar[frozenset[str]] = frozenset(
        {
            "internalServerException",
            "modelStreamErrorException",
            "validationException",
            "throttlingException",
            "serviceUnavailableException",
        }
    )

    def __init__(self, model: str, *, stream: bool) -> None:
        self.model = model
        self.stream = stream

    def streams(self, body: Mapping[str, Any]) -> bool:
        return self.stream

    def stream_headers(self) -> list[tuple[str, str]]:
        return [("content-type", CONTENT_TYPE)]

    def parse(self, body: Any, headers: Mapping[str, str]) -> TurnRequest:
        data = require_object(body)
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest(
                "A conversation must start with a user message. Try again with a conversation "
                "that starts with a user message."
            )
        input_text = ""
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") == "user":
                content = _blocks(message.get("content"))
                input_text = "".join(b["text"] for b in content if isinstance(b.get("text"), str))
                if input_text:
                    break
        last = messages[-1] if isinstance(messages[-1], dict) else {}
        results = tuple(
            str((block.get("toolResult") or {}).get("toolUseId", ""))
            for block in _blocks(last.get("content"))
            if isinstance(block.get("toolResult"), dict)
        )
        return TurnRequest(
            input_text=input_text,
            model=self.model,
            wire=self.wire.name,
            tool_results=results,
            body=data,
            headers=headers if isinstance(headers, dict) else dict(headers),
        )

    # --- bodies ---

    def _content(self, plan: Plan, ctx: RenderContext) -> list[tuple[Any, dict[str, Any]]]:
        key = "converse_blocks"
        if key in ctx.extra:
            cached: list[tuple[Any, dict[str, Any]]] = ctx.extra[key]
            return cached
        blocks: list[tuple[Any, dict[str, Any]]] = []
        for step in plan.items:
            if isinstance(step, Text):
                blocks.append((step, {"text": step.text}))
            elif isinstance(step, Reasoning):
                signature = step.signature or ctx.signature(step.text)
                text = {"text": step.text, "signature": signature}
                blocks.append((step, {"reasoningContent": {"reasoningText": text}}))
            elif isinstance(step, ToolCall):
                use = {
                    "toolUseId": step.id or ctx.ids.new("tooluse"),
                    "name": step.name,
                    "input": step.input,
                }
                blocks.append((step, {"toolUse": use}))
        ctx.extra[key] = blocks
        return blocks

    def _usage(self, plan: Plan) -> dict[str, Any]:
        usage = plan.usage
        total = usage.input_tokens + usage.output_tokens
        return {
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "totalTokens": total,
        }

    def _stop(self, plan: Plan) -> str:
        return "tool_use" if plan.has_tool_calls else "end_turn"

    def complete(self, plan: Plan, ctx: RenderContext) -> object:
        content = [block for _, block in self._content(plan, ctx)]
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": self._stop(plan),
            "usage": self._usage(plan),
            "metrics": {"latencyMs": 0},
        }

    def wrong_shape(self, plan: Plan, ctx: RenderContext) -> object:
        # a stream event where the response belongs
        return {"messageStart": {"role": "assistant"}}

    # --- stream ---

    @staticmethod
    def _event(kind: str, **fields: Any) -> bytes:
        return event_message(kind, encode(fields))

    def stream_body(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        out: list[Action] = [self._event("messageStart", role="assistant")]
        if ctx.framing.unknown_events:
            out.append(self._event("stuntsetUnknown", note="an event type nobody knows"))
        render = functools.partial(self._block_events, ctx=ctx)
        return out + item_events(plan, self._content(plan, ctx), render)

    def _block_events(
        self, step: Any, block: dict[str, Any], index: int, ctx: RenderContext
    ) -> list[Action]:
        out: list[Action] = []
        if isinstance(step, ToolCall):
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            out.append(self._event("contentBlockStart", contentBlockIndex=index, start=start))
            for fragment in self.fragments(step, ctx):
                delta = {"toolUse": {"input": fragment}}
                out.append(self._event("contentBlockDelta", contentBlockIndex=index, delta=delta))
        else:
            for piece, gap in self.text_deltas(step, ctx):
                out += pause(gap)
                text: dict[str, Any] = {"text": piece}
                delta = {"reasoningContent": text} if isinstance(step, Reasoning) else text
                out.append(self._event("contentBlockDelta", contentBlockIndex=index, delta=delta))
            if isinstance(step, Reasoning):
                signed = block["reasoningContent"]["reasoningText"]["signature"]
                delta = {"reasoningContent": {"signature": signed}}
                out.append(self._event("contentBlockDelta", contentBlockIndex=index, delta=delta))
        out.append(self._event("contentBlockStop", contentBlockIndex=index))
        return out

    def stream_terminal(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        return [
            self._event("messageStop", stopReason=self._stop(plan)),
            self._event("metadata", usage=self._usage(plan), metrics={"latencyMs": 0}),
        ]

    def malformed(self, text: str, ctx: RenderContext) -> bytes:
        # a message whose CRCs hold and whose payload is not JSON
        return event_message("contentBlockDelta", text.encode())

    def out_of_order(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        # content after the message stopped
        delta = {"text": "out of order"}
        return [
            self._event("messageStart", role="assistant"),
            self._event("messageStop", stopReason="end_turn"),
            self._event("contentBlockDelta", contentBlockIndex=0, delta=delta),
            self._event("metadata", usage=self._usage(plan), metrics={"latencyMs": 0}),
        ]


# --- read back: a recorded response as steps ---------------------------------------------------


def _read_event(kind: str | None, event: Any, reader: ResponseReader) -> bool:
    """One ConverseStream event into ``reader``; whether it ended the response."""
    if not isinstance(event, dict):
        return False
    key = f"block-{event.get('contentBlockIndex')}"
    if kind == "contentBlockStart":
        use = (event.get("start") or {}).get("toolUse")
        if isinstance(use, dict):
            reader.item(key, "tool", name=use.get("name", ""), id=use.get("toolUseId"))
    elif kind == "contentBlockDelta":
        delta = event.get("delta") or {}
        reasoning = delta.get("reasoningContent")
        if isinstance(delta.get("text"), str):
            reader.add(key, "text", delta["text"])
        elif isinstance(reasoning, dict) and isinstance(reasoning.get("text"), str):
            reader.add(key, "reasoning", reasoning["text"])
        elif isinstance(reasoning, dict) and "signature" in reasoning:
            reader.item(key, "reasoning")["signature"] = reasoning["signature"]
        elif isinstance(delta.get("toolUse"), dict):
            reader.add(key, "tool", delta["toolUse"].get("input", ""), field="args")
    elif kind == "metadata":
        usage = event.get("usage") or {}
        reader.count(usage.get("inputTokens"), usage.get("outputTokens"))
    return kind == "messageStop"


def read_frames(frames: Iterable[FrameLike], reader: ResponseReader) -> bool:
    """A recorded ConverseStream (complete with ``messageStop``; an exception ends it too)."""
    done = False
    for frame in frames:
        try:
            message = decode_frame(frame.data)
        except EventStreamError:
            continue  # bytes no client could read: nothing of the response
        payload = frame_json(message.payload.decode("utf-8", "replace"))
        if message.kind != "event":
            reader.tail.append(read_exception(message.name, payload))
            return True
        done = _read_event(message.name, payload, reader) or done
    return done


def read_body(body: Any, reader: ResponseReader) -> bool:
    """A recorded Converse response."""
    if not isinstance(body, dict):
        return True
    message = (body.get("output") or {}).get("message") or {}
    for index, block in enumerate(_blocks(message.get("content"))):
        key = f"block-{index}"
        reasoning = (block.get("reasoningContent") or {}).get("reasoningText")
        if isinstance(block.get("text"), str):
            reader.add(key, "text", block["text"])
        elif isinstance(reasoning, dict):
            reader.add(key, "reasoning", reasoning.get("text", ""))
            reader.items[key]["signature"] = reasoning.get("signature")
        elif isinstance(block.get("toolUse"), dict):
            use = block["toolUse"]
            name = use.get("name", "")
            reader.item(key, "tool", name=name, id=use.get("toolUseId"), input=use.get("input"))
    usage = body.get("usage") or {}
    if usage:
        reader.count(usage.get("inputTokens"), usage.get("outputTokens"))
    reader.unstreamed()
    return True


# --- a request as the checks read it -----------------------------------------------------------

#: Request fields that change what the provider can reuse from its prompt cache (the model
#: is in the path).
_CACHE_FIELDS = ("additionalModelRequestFields", "guardrailConfig")


def _tool_config(body: dict[str, Any]) -> list[Any] | None:
    config = body.get("toolConfig")
    tools = config.get("tools") if isinstance(config, dict) else None
    return tools if isinstance(tools, list) else None


def prefix_view(body: dict[str, Any]) -> PrefixView:
    system = {"system": body["system"]} if "system" in body else {}
    messages = body.get("messages")
    tools = _tool_config(body) or []
    cache = cache_of(body, _CACHE_FIELDS)
    config = body.get("toolConfig")
    if isinstance(config, dict) and "toolChoice" in config:
        cache["toolConfig.toolChoice"] = config["toolChoice"]
    return PrefixView(
        system, list(messages) if isinstance(messages, list) else [], "messages", 0, tools, cache
    )


def history_calls(body: dict[str, Any]) -> list[HistoryCall]:
    """The ``toolUse`` blocks of the assistant messages."""
    calls: list[HistoryCall] = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for block in _blocks(message.get("content")):
            use = block.get("toolUse")
            if isinstance(use, dict):
                calls.append((str(use.get("toolUseId")), use.get("name"), use.get("input")))
    return calls


def converse_tools(body: dict[str, Any]) -> list[DeclaredTool] | None:
    """The ``toolSpec`` of ``toolConfig.tools`` (its schema is ``inputSchema.json``); a
    request without a ``toolConfig`` read as every wire's tools are (``tools``)."""
    tools = _tool_config(body)
    if tools is None:
        return declared_tools(body)
    out: list[DeclaredTool] = []
    for tool in tools:
        spec = tool.get("toolSpec") if isinstance(tool, dict) else None
        if isinstance(spec, dict):
            schema = (spec.get("inputSchema") or {}).get("json")
            out.append((str(spec.get("name")), spec.get("description"), schema))
    return out


# --- the demo client ---------------------------------------------------------------------------


def _demo_request(history: list[dict[str, Any]]) -> dict[str, Any]:
    return {"messages": history}  # the model and the stream are in the path


def _demo_user(prompt: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": prompt}]}


def _demo_apply(event: str, payload: dict[str, Any], seen: Seen) -> None:
    if event.endswith("Exception"):
        seen.problem = f"in-band error: {event}"
        return
    if seen.terminal and event == "contentBlockDelta":
        seen.problem = "out of order: content after messageStop"
        return
    if event == "contentBlockStart":
        use = payload["start"]["toolUse"]
        seen.calls.append((use["name"], use["toolUseId"]))
    elif event == "contentBlockDelta" and "text" in payload["delta"]:
        seen.text += payload["delta"]["text"]
    elif event == "messageStop":
        seen.terminal = True


def _demo_tool_round(seen: Seen) -> list[dict[str, Any]]:
    uses = [{"toolUse": {"toolUseId": cid, "name": name, "input": {}}} for name, cid in seen.calls]
    results = [
        {"toolResult": {"toolUseId": cid, "content": [{"text": "ok"}]}} for _, cid in seen.calls
    ]
    return [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]


def _codec_for(path: str, query: str | None) -> WireCodec | None:
    return converse_codec(path)


_ENDINGS = ("/converse", "/converse-stream")


def _recorded(path: str) -> bool:
    return "/model/" in path and path.endswith(_ENDINGS)


#: ``POST /model/{modelId}/converse`` and ``/converse-stream``.
WIRE = ModelWire(
    name=BEDROCK_CONVERSE.name,
    declared=BEDROCK_CONVERSE,
    api=BEDROCK,
    title="AWS Bedrock Converse (`POST /model/{modelId}/converse-stream`)",
    paths=(),
    codec_for=_codec_for,
    endpoint=None,
    recorded_path=_recorded,
    pattern="/model/{modelId}/converse",
    cache_fields=_CACHE_FIELDS,
    prefix_view=prefix_view,
    history_calls=history_calls,
    declared_tools=converse_tools,
    read_frames=read_frames,
    read_body=read_body,
    read_error=read_error,
    client=WireClient(
        "/model/demo/converse-stream", _demo_request, _demo_user, _demo_apply, _demo_tool_round
    ),
    stream=EVENTSTREAM,
)
