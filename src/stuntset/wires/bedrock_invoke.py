"""AWS Bedrock's InvokeModel for Anthropic models (``POST /model/{modelId}/invoke`` and
``/invoke-with-response-stream``): what the anthropic SDK's ``AnthropicBedrock`` calls, and
boto3's ``invoke_model`` / ``invoke_model_with_response_stream`` with a Messages body.

Wire facts (anthropic 2.14's ``lib/bedrock``, botocore 1.44; docs/protocol-bedrock.md): the
body is a Messages request without ``model`` or ``stream`` (the model is in the path, the
stream in the operation) and with ``anthropic_version: bedrock-2023-05-31``; a whole response
is the Messages ``message`` object. A stream is event-stream messages (``_eventstream``) of
type ``chunk`` whose payload is ``{"bytes": base64(event)}``, each event one Messages stream
event's JSON (``message_start`` … ``message_stop``, as ``anthropic_messages`` renders them);
``AnthropicBedrock`` decodes them back into the SSE events its stream reads. Errors are
Bedrock's (``_bedrock``); one after the stream began is an event-stream exception, which
``AnthropicBedrock`` turns into an ``error`` event.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Final

import msgspec

from stuntset.script import TurnRequest

from ._bedrock import BEDROCK, BedrockErrors, model_path, read_error, read_exception
from ._client import Seen, WireClient, openai_user
from ._codec import RenderContext, WireCodec, encode, require_object
from ._declared import BEDROCK_INVOKE
from ._eventstream import CONTENT_TYPE, EVENTSTREAM, EventStreamError, decode_frame, event_message
from ._readback import ResponseReader, frame_json
from ._spec import FrameLike, ModelWire
from ._views import declared_tools, messages_history_calls
from .anthropic_messages import AnthropicCodec, prefix_view
from .anthropic_messages import _demo_apply as _messages_apply
from .anthropic_messages import _demo_tool_round as _messages_tool_round
from .anthropic_messages import _read_event as _read_messages_event
from .anthropic_messages import read_body as _read_message

__all__ = ["BEDROCK_ANTHROPIC_VERSION", "WIRE", "InvokeCodec", "chunk", "invoke_codec"]

#: The ``anthropic_version`` a Bedrock Messages body carries.
BEDROCK_ANTHROPIC_VERSION: Final = "bedrock-2023-05-31"
_OPERATIONS: Final = {"invoke": False, "invoke-with-response-stream": True}


@functools.lru_cache(maxsize=256)
def invoke_codec(path: str) -> InvokeCodec | None:
    """The codec of an InvokeModel path (one per model and operation), else None."""
    found = model_path(path)
    if found is None or found[1] not in _OPERATIONS:
        return None
    return InvokeCodec(found[0], stream=_OPERATIONS[found[1]])


def chunk(event: bytes) -> bytes:
    """One Messages stream event (its JSON) as a ``chunk`` event-stream message."""
    return event_message("chunk", encode({"bytes": base64.b64encode(event).decode()}))


class InvokeCodec(BedrockErrors, AnthropicCodec):
    """The InvokeModel wire with Anthropic's Messages body, for one model and operation."""

    wire = BEDROCK_INVOKE
    id_prefix: ClassVar[str] = "msg_bdrk"
    default_model: ClassVar[str] = "anthropic.claude-stuntset-v1:0"
    exceptions: ClassVar[frozenset[str]] = frozenset(
        {
            "internalServerException",
            "modelStreamErrorException",
            "validationException",
            "throttlingException",
            "modelTimeoutException",
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
        request = super().parse({**data, "model": self.model}, headers)
        return msgspec.structs.replace(request, body=data)

    def _event(self, ctx: RenderContext, kind: str, **fields: Any) -> bytes:
        return chunk(encode({"type": kind, **fields}))

    def malformed(self, text: str, ctx: RenderContext) -> bytes:
        # a chunk whose event is not JSON (its envelope is: the CRCs and base64 hold)
        return chunk(text.encode())


# --- read back: a recorded response as steps ---------------------------------------------------


def _inner(payload: Any) -> Any:
    """The Messages event a ``chunk`` carries (None when it carries none that parses)."""
    raw = payload.get("bytes") if isinstance(payload, dict) else None
    if not isinstance(raw, str):
        return None
    try:
        return json.loads(base64.b64decode(raw))
    except (ValueError, UnicodeDecodeError):
        return None


def read_frames(frames: Iterable[FrameLike], reader: ResponseReader) -> bool:
    """A recorded InvokeModelWithResponseStream: the Messages events inside its chunks (it
    ends with ``message_stop``; an exception or an ``error`` event ends it too)."""
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
        event = _inner(payload)
        if isinstance(event, dict):
            done = _read_messages_event(event, event.get("type"), reader) or done
    return done


# --- the demo client ---------------------------------------------------------------------------


def _demo_request(history: list[dict[str, Any]]) -> dict[str, Any]:
    return {"anthropic_version": BEDROCK_ANTHROPIC_VERSION, "max_tokens": 1024, "messages": history}


def _demo_apply(event: str, payload: dict[str, Any], seen: Seen) -> None:
    if event.endswith("Exception"):
        seen.problem = f"in-band error: {event}"
        return
    inner = _inner(payload)
    if not isinstance(inner, dict):
        seen.problem = "a chunk whose event is not JSON"
        return
    kind = inner.get("type", "")
    _messages_apply("error" if kind == "error" else kind, inner, seen)


def _codec_for(path: str, query: str | None) -> WireCodec | None:
    return invoke_codec(path)


_ENDINGS = ("/invoke", "/invoke-with-response-stream")


def _recorded(path: str) -> bool:
    return "/model/" in path and path.endswith(_ENDINGS)


#: ``POST /model/{modelId}/invoke`` and ``/invoke-with-response-stream``.
WIRE = ModelWire(
    name=BEDROCK_INVOKE.name,
    declared=BEDROCK_INVOKE,
    api=BEDROCK,
    title="AWS Bedrock InvokeModel, Anthropic (`POST /model/{modelId}/invoke-with-response-stream`)",
    paths=(),
    codec_for=_codec_for,
    endpoint=None,
    recorded_path=_recorded,
    pattern="/model/{modelId}/invoke",
    cache_fields=("tool_choice", "thinking"),
    prefix_view=prefix_view,
    history_calls=messages_history_calls,
    declared_tools=declared_tools,
    read_frames=read_frames,
    read_body=_read_message,
    read_error=read_error,
    client=WireClient(
        "/model/demo/invoke-with-response-stream",
        _demo_request,
        openai_user,
        _demo_apply,
        _messages_tool_round,
    ),
    stream=EVENTSTREAM,
)
