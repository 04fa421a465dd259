"""What a model wire is, as one value: ``ModelWire``, every face of a wire that the double,
the cassettes and the checks ask for (routes, codec, stream framing, read-back, request views).

Each wire module (``openai_chat``, ``openai_responses``, ``anthropic_messages``, ``gemini``)
ends with its ``WIRE``; ``stuntset.wires`` keeps them in one ordered registry. Nothing outside
this package keeps a table keyed by wire name: a new wire is one module and one line in the
registry (docs/design.md, "Adding a wire").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from stuntset.script import Step, Wire

from ._client import WireClient
from ._codec import WireCodec
from ._readback import ResponseReader

__all__ = [
    "SSE",
    "ApiProvider",
    "DeclaredTool",
    "FrameLike",
    "HistoryCall",
    "ModelWire",
    "PrefixView",
    "StreamFraming",
]


class FrameLike(Protocol):
    """One recorded stream frame as a reader sees it (a cassette ``Frame``): the event name
    (SSE ``event:``, an event-stream ``:event-type`` header) and the data as text (for a
    binary framing, base64 of the whole message: ``StreamFraming.data_encoding``)."""

    @property
    def event(self) -> str | None: ...

    @property
    def data(self) -> str: ...


class FrameParser(Protocol):
    """Bytes in, ``(event, data)`` frames out, whatever way the bytes were split."""

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]: ...

    def close(self) -> list[tuple[str | None, str]]: ...


@dataclass(frozen=True, slots=True)
class StreamFraming:
    """How a wire's stream is cut into frames, for recording and reading back.

    ``kind`` is ``"sse"`` (``text/event-stream``), ``"ndjson"`` (one JSON value a line,
    ``application/x-ndjson``: Ollama) or ``"binary"`` (length-prefixed messages with headers,
    ``application/vnd.amazon.eventstream``: Bedrock). A cassette frame keeps ``data`` as text
    in every case; ``data_encoding`` says how to read it (``"base64"``: one whole binary
    message, which a cassette ``Frame`` marks with its ``encoding`` so that a replay writes
    the bytes back as they came).
    """

    kind: Literal["sse", "ndjson", "binary"]
    content_type: str
    parser: Callable[[], FrameParser]
    data_encoding: Literal["text", "base64"] = "text"
    #: one recorded ``(event, data)`` frame as the bytes that send it again (a replay);
    #: None: as an SSE event
    writer: Callable[[str | None, str], bytes] | None = None

    def write(self, event: str | None, data: str) -> bytes:
        """The bytes that send one recorded frame again, in this framing."""
        if self.writer is not None:
            return self.writer(event, data)
        head = f"event: {event}\n" if event else ""
        return (head + "".join(f"data: {line}\n" for line in data.split("\n")) + "\n").encode()

    def frames(self, content_type: str) -> bool:
        """Whether a response with this ``content-type`` is a stream of this framing."""
        return content_type.startswith(self.content_type)


def _sse_parser() -> FrameParser:
    from ._sse import SseParser

    return SseParser()


#: Server-sent events: every wire so far.
SSE = StreamFraming("sse", "text/event-stream", _sse_parser)


@dataclass(frozen=True, slots=True)
class PrefixView:
    """A request as the prompt-prefix check reads it: the system prompt (by field), the
    messages after it, the body field they come from (and how many leading items of it are
    the system prompt), the tools one per function, the cache-relevant fields
    (``ModelWire.cache_fields`` of the body) and whether the request continues a server-side
    conversation (``previous_response_id``), which repeats nothing."""

    system: dict[str, Any]
    messages: list[Any]
    key: str
    offset: int
    tools: list[Any]
    cache: dict[str, Any]
    chained: bool = False


#: A tool call found in a request's history: a key that tells calls apart (the call id, or
#: where it stands when the wire has no ids), the tool name and its arguments (a JSON string
#: or already an object).
HistoryCall = tuple[str, Any, Any]
#: A function tool a request declares: its name, description and JSON schema.
DeclaredTool = tuple[str, Any, Any]


@dataclass(frozen=True, slots=True)
class ApiProvider:
    """A provider whose clients a stand-in serves: the URL prefix its routes sit under
    (``/openai/…``), the base URL its SDK is given below the server, and how banners and
    messages name it. Several wires can share one (OpenAI: Chat and Responses)."""

    name: str
    #: what its SDK's base URL ends with (``/openai/v1``: the SDK adds ``/chat/completions``)
    client_path: str
    #: the banner line's label (``OpenAI (Chat Completions, Responses)``)
    title: str
    #: what it speaks, for a message (``Chat Completions and Responses``)
    speaks: str


@dataclass(frozen=True, slots=True)
class ModelWire:
    """Every face of one model wire. ``name`` is what journals, cassettes and checks call it."""

    name: str
    #: what the wire can render, checked when a double is made
    declared: Wire
    #: whose clients speak it: ``stuntset.serve``'s URLs name it (``url("openai")``) and its
    #: path prefix routes to it
    api: ApiProvider
    #: one line naming it with its endpoint, for docs and banners
    title: str
    #: the API paths routed to it (``/v1/chat/completions``); ``codec_for`` decides the rest
    paths: tuple[str, ...]
    #: the codec of an API path and query string (None: the query is not known yet, as on
    #: the fast lane), or None when the path is not this wire's
    codec_for: Callable[[str, str | None], WireCodec | None]
    #: the API endpoint without its base-URL prefix (``/chat/completions``, which ``/v1/…``
    #: and ``/openai/v1/…`` both end with), or None when the path says more (Gemini's model)
    endpoint: str | None
    #: request fields that change what the provider can reuse from its prompt cache
    cache_fields: tuple[str, ...]
    prefix_view: Callable[[dict[str, Any]], PrefixView]
    history_calls: Callable[[dict[str, Any]], list[HistoryCall]]
    #: the function tools a request declares, one per function (None: it sends no tool list)
    declared_tools: Callable[[dict[str, Any]], list[DeclaredTool] | None]
    #: a recorded stream into ``reader``; whether it ended as a complete response does
    read_frames: Callable[[Iterable[FrameLike], ResponseReader], bool]
    #: a recorded whole body (not streamed) into ``reader``; whether it ended the response
    read_body: Callable[[Any, ResponseReader], bool]
    #: the step a recorded error response (status >= 400) stands for
    read_error: Callable[[int, Any, Mapping[str, str]], Step]
    #: the demo's client of it (the catalog's outcomes are played through it)
    client: WireClient
    stream: StreamFraming = SSE
    #: other names older cassettes give it (``openai.chat``)
    aliases: tuple[str, ...] = field(default=())
    #: whether a recorded request path belongs to it, when ``endpoint`` cannot say
    recorded_path: Callable[[str], bool] | None = None
    #: the API path it routes by pattern, as an error message names it (``{model}``)
    pattern: str | None = None
    #: a request header only its clients send (``anthropic-version``): an unrouted request
    #: that carries it is answered in this wire's error shape
    version_header: str | None = None
    #: the ``GET`` path its clients list models at besides ``/v1/models`` (Ollama's
    #: ``/api/tags``), answered with its codec's ``models_body``
    models_path: str | None = None

    @property
    def provider(self) -> str:
        """The provider's name (``openai``), as URL prefixes and ``url()`` say it."""
        return self.api.name

    @property
    def codec(self) -> WireCodec | None:
        """The codec of its first fixed path (None for a wire routed by pattern only)."""
        return self.codec_for(self.paths[0], None) if self.paths else None

    def records(self, path: str) -> bool:
        """Whether a recorded request ``path`` (any base-URL prefix) belongs to this wire."""
        if self.recorded_path is not None:
            return self.recorded_path(path)
        return self.endpoint is not None and path.endswith(self.endpoint)
