"""The model wires, in order: the one registry the double, the cassettes, the checks, docs
and banners ask. The order is the order docs, demos and reports list them in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from ._codec import WireCodec
from ._spec import SSE, ApiProvider, ModelWire, StreamFraming
from .anthropic_messages import WIRE as _ANTHROPIC
from .azure_openai import CHAT_WIRE as _AZURE_CHAT
from .azure_openai import RESPONSES_WIRE as _AZURE_RESPONSES
from .bedrock_converse import WIRE as _BEDROCK_CONVERSE
from .bedrock_invoke import WIRE as _BEDROCK_INVOKE
from .gemini import WIRE as _GEMINI
from .ollama import WIRE as _OLLAMA
from .openai_chat import WIRE as _CHAT
from .openai_responses import WIRE as _RESPONSES
from .vertex import ANTHROPIC_WIRE as _VERTEX_ANTHROPIC
from .vertex import GEMINI_WIRE as _VERTEX_GEMINI

__all__ = [
    "API_PATHS",
    "API_PROVIDERS",
    "PROVIDERS",
    "WIRES",
    "WIRE_NAMES",
    "ProviderName",
    "codec_for",
    "error_codec",
    "models_codec",
    "recorded_wire",
    "stream_framing",
    "wire_named",
    "wire_of_path",
]

#: Every model wire, in the order they are listed.
WIRES: Final[tuple[ModelWire, ...]] = (
    _CHAT,
    _RESPONSES,
    _ANTHROPIC,
    _GEMINI,
    _BEDROCK_CONVERSE,
    _BEDROCK_INVOKE,
    _AZURE_CHAT,
    _AZURE_RESPONSES,
    _OLLAMA,
    _VERTEX_ANTHROPIC,
    _VERTEX_GEMINI,
)
#: Their names (``openai-chat``…), as journals, cassettes and checks call them.
WIRE_NAMES: Final = tuple(wire.name for wire in WIRES)
#: The providers whose clients the stand-in serves, in order (``/openai/v1``…).
API_PROVIDERS: Final[tuple[ApiProvider, ...]] = tuple(dict.fromkeys(wire.api for wire in WIRES))
#: Their names, the path prefixes ``stuntset.serve`` URLs take.
PROVIDERS: Final = tuple(provider.name for provider in API_PROVIDERS)
#: A provider's name as a type (tests/unit/wires checks it lists ``PROVIDERS``).
ProviderName = Literal["openai", "anthropic", "gemini", "bedrock", "azure", "ollama", "vertex"]

#: The API paths the double answers, as an error message lists them.
API_PATHS: Final = (
    *(path for wire in WIRES for path in wire.paths),
    "/v1/models",
    *(wire.models_path for wire in WIRES if wire.models_path),
    *(wire.pattern for wire in WIRES if wire.pattern),
)

_BY_NAME: Final = {name: wire for wire in WIRES for name in (wire.name, *wire.aliases)}


def wire_named(name: str) -> ModelWire | None:
    """The wire called ``name`` (or one of its older names), else None."""
    return _BY_NAME.get(name)


def recorded_wire(name: str) -> ModelWire:
    """The wire whose reader reads a recorded response on wire ``name``: its own, else the
    first wire's (OpenAI Chat: what any other OpenAI-compatible endpoint streams)."""
    return _BY_NAME.get(name, WIRES[0])


#: The wires that say by their own rule which recorded paths are theirs, asked first: such a
#: rule is narrower than an endpoint suffix (Azure's ``/openai/deployments/…/chat/completions``
#: ends as OpenAI Chat's does).
_BY_RULE: Final = tuple(wire for wire in WIRES if wire.recorded_path is not None)
_BY_ENDPOINT: Final = tuple(wire for wire in WIRES if wire.recorded_path is None)


def wire_of_path(path: str) -> ModelWire | None:
    """The wire a recorded request path belongs to (any base-URL prefix), else None."""
    return next((wire for wire in (*_BY_RULE, *_BY_ENDPOINT) if wire.records(path)), None)


def codec_for(path: str, query: str | None = None) -> WireCodec | None:
    """The codec that answers a request to API ``path`` (``/v1/chat/completions``, with the
    route prefix already stripped) with ``query`` (None: not known yet), or None when no wire
    serves it."""
    for wire in WIRES:
        codec = wire.codec_for(path, query)
        if codec is not None:
            return codec
    return None


def models_codec(provider: str | None, path: str) -> WireCodec | None:
    """The codec that lists the models at ``path`` under ``provider``'s URL prefix, for a
    wire with a listing path of its own (``ModelWire.models_path``: Ollama's ``/api/tags``)."""
    for wire in WIRES:
        if wire.models_path == path and wire.provider == provider:
            return wire.codec
    return None


def error_codec(provider: str | None, headers: Mapping[str, str]) -> WireCodec:
    """The codec whose error shape answers a request no wire routes: the wire the URL prefix
    names or whose clients' header it carries, if that wire has one (``anthropic-version``),
    else the first wire's."""
    for wire in WIRES:
        header = wire.version_header
        named = provider == wire.provider or (provider is None and header in headers)
        if header and named and wire.codec is not None:
            return wire.codec
    first = WIRES[0].codec
    assert first is not None, "the first wire routes a fixed path"
    return first


#: The stream framings of the wires (SSE first: any ``text/event-stream`` is SSE).
FRAMINGS: Final = tuple(dict.fromkeys((SSE, *(wire.stream for wire in WIRES))))


def stream_framing(content_type: str) -> StreamFraming | None:
    """The framing of a response with this ``content-type``, or None when it is not a
    stream (a whole body, recorded as it is)."""
    return next((framing for framing in FRAMINGS if framing.frames(content_type)), None)
