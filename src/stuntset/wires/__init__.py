"""The model wires: one module per wire holding everything about it, behind one registry.

A wire (OpenAI Chat, OpenAI Responses, Anthropic Messages, Gemini) is a ``ModelWire``: its
routes and id prefix, its codec (request → ``TurnRequest``, plan → frames or body, error
bodies), how its stream is framed, how a recorded response reads back as script steps, and
how the checks read one of its requests. ``WIRES`` lists them in order; the model double
routes through it, and the cassettes and checks ask it, so no other part keeps a table keyed
by wire name (docs/design.md, "Adding a wire").

This package sits below the doubles, cassettes and checks: it imports only ``script``,
``ids`` and ``errors`` of stuntset.
"""

from ._client import Seen, WireClient
from ._codec import (
    BadRequest,
    Memo,
    Plan,
    RenderContext,
    StatusFault,
    StatusStep,
    WireCodec,
    memoized,
    plan_of,
    render,
)
from ._declared import (
    ANTHROPIC_MESSAGES,
    BEDROCK_CONVERSE,
    BEDROCK_INVOKE,
    GEMINI,
    MODEL_WIRES,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    check_script,
)
from ._eventstream import EVENTSTREAM, EventStreamError, EventStreamParser, decode_frame, map_json
from ._readback import ResponseReader
from ._registry import (
    API_PATHS,
    API_PROVIDERS,
    PROVIDERS,
    WIRE_NAMES,
    WIRES,
    ProviderName,
    codec_for,
    error_codec,
    models_codec,
    recorded_wire,
    stream_framing,
    wire_named,
    wire_of_path,
)
from ._reply import PLAIN_FRAMING, Abort, Action, Framing, Pause, Reply, Stall, json_reply
from ._spec import SSE, ApiProvider, FrameLike, HistoryCall, ModelWire, PrefixView, StreamFraming
from ._sse import SseParser, parse_sse
from ._views import messages_history_calls
from .openai_responses import rate_limit_headers

__all__ = [
    "ANTHROPIC_MESSAGES",
    "API_PATHS",
    "API_PROVIDERS",
    "BEDROCK_CONVERSE",
    "BEDROCK_INVOKE",
    "EVENTSTREAM",
    "GEMINI",
    "MODEL_WIRES",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "PLAIN_FRAMING",
    "PROVIDERS",
    "SSE",
    "WIRES",
    "WIRE_NAMES",
    "Abort",
    "Action",
    "ApiProvider",
    "BadRequest",
    "EventStreamError",
    "EventStreamParser",
    "FrameLike",
    "Framing",
    "HistoryCall",
    "Memo",
    "ModelWire",
    "Pause",
    "Plan",
    "PrefixView",
    "ProviderName",
    "RenderContext",
    "Reply",
    "ResponseReader",
    "Seen",
    "SseParser",
    "Stall",
    "StatusFault",
    "StatusStep",
    "StreamFraming",
    "WireClient",
    "WireCodec",
    "check_script",
    "codec_for",
    "decode_frame",
    "error_codec",
    "json_reply",
    "map_json",
    "memoized",
    "messages_history_calls",
    "models_codec",
    "parse_sse",
    "plan_of",
    "rate_limit_headers",
    "recorded_wire",
    "render",
    "stream_framing",
    "wire_named",
    "wire_of_path",
]
