"""Vertex AI: Anthropic's Messages and Google's Gemini at Vertex's publisher-model paths, with
the Google front end's errors. The bodies and streams are the Anthropic and Gemini wires'
(``AnthropicCodec``, ``GeminiCodec``): only what Vertex does differently lives here.

Wire facts (anthropic 2.14's ``AnthropicVertex``, ``anthropic/lib/vertex/_client.py``;
google-genai 2.34 with ``vertexai=True``):

- ``AnthropicVertex(region=R, project_id=P, base_url=B)`` posts Messages to
  ``B/projects/P/locations/R/publishers/anthropic/models/{model}:rawPredict``
  (``:streamRawPredict`` when streaming; ``B`` defaults to ``https://R-aiplatform…/v1``). The
  model leaves the body, an ``anthropic_version`` joins it (2.14 sends ``2026-10-21``;
  older SDKs ``vertex-2023-10-16``), and the token
  is ``Authorization: Bearer``. Responses and streams are Anthropic's.
- ``genai.Client(vertexai=True, project=P, location=R)`` posts to
  ``/v1beta1/projects/P/locations/R/publishers/google/models/{model}:generateContent`` (and
  ``:streamGenerateContent?alt=sse``); bodies are the Gemini API's.
- Errors of the Google front end (401, 403, 429) are Google's ``{"error": {"code",
  "message", "status"}}`` on both: a bad or expired token is 401 ``UNAUTHENTICATED`` (not the
  Developer API's 400 ``API_KEY_INVALID``), a quota 429 ``RESOURCE_EXHAUSTED``
  (``Quota exceeded for aiplatform.googleapis.com/…``). The model's own errors on the
  Anthropic route are Anthropic's (``overloaded_error``…).

Under ``stuntset.serve`` the routes sit below ``/vertex``: ``url("vertex")`` is the root each
SDK adds its version to (``AnthropicVertex(base_url=url("vertex") + "/v1")``,
``HttpOptions(base_url=url("vertex"))``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from stuntset.script import AuthExpired, RateLimit, Step, TurnRequest

from ._client import WireClient
from ._codec import BadRequest, StatusFault, StatusStep, WireCodec, require_object
from ._declared import VERTEX_ANTHROPIC, VERTEX_GEMINI
from ._readback import error_object, error_step
from ._reply import Reply, json_reply
from ._spec import ApiProvider, ModelWire
from .anthropic_messages import WIRE as _ANTHROPIC
from .anthropic_messages import AnthropicCodec
from .gemini import WIRE as _GEMINI
from .gemini import GeminiCodec, asks_for_sse, gemini_status

__all__ = [
    "ANTHROPIC_WIRE",
    "GEMINI_WIRE",
    "VERTEX",
    "VertexAnthropicCodec",
    "VertexGeminiCodec",
    "vertex_anthropic_codec",
    "vertex_gemini_codec",
]

#: What the Google front end answers itself, whatever model is behind it.
_FRONT_END: Final = frozenset({401, 403, 429})
_UNAUTHENTICATED: Final = (
    "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
    "cookie or other valid authentication credential. See "
    "https://developers.google.com/identity/sign-in/web/devconsole-project."
)


def _quota(model: str) -> str:
    return (
        "Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model "
        f"with base model: {model}. Please submit a quota increase request. "
        "https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai."
    )


def _google_error(status: int, message: str, error_type: str | None) -> dict[str, Any]:
    return {
        "error": {"code": status, "message": message, "status": error_type or gemini_status(status)}
    }


def _vertex_fault(found: StatusFault, fault: StatusStep, model: str) -> StatusFault:
    """``found`` with Vertex's words for the catalog's default messages, and an expired token
    as the 401 it is on Vertex."""
    if isinstance(fault, AuthExpired):
        message = _UNAUTHENTICATED if found.message == AuthExpired().message else found.message
        return StatusFault(401, message, "UNAUTHENTICATED", found.headers)
    if isinstance(fault, RateLimit) and found.message == RateLimit().message:
        return StatusFault(429, _quota(model), found.error_type, found.headers)
    return found


class VertexAnthropicCodec(AnthropicCodec):
    """Messages at ``…/publishers/anthropic/models/{model}:rawPredict``, for one model."""

    wire = VERTEX_ANTHROPIC
    provider: ClassVar[str] = "vertex"

    def __init__(self, model: str, *, stream: bool) -> None:
        self.model = model
        self.stream = stream

    def streams(self, body: Mapping[str, Any]) -> bool:
        return self.stream

    def parse(self, body: Any, headers: Mapping[str, str]) -> TurnRequest:
        data = require_object(body)
        if "model" in data:
            raise BadRequest("model: Extra inputs are not permitted (the model is in the path)")
        return super().parse({**data, "model": self.model}, headers)

    def error_body(self, status: int, message: str, error_type: str | None) -> object:
        if status in _FRONT_END:
            return _google_error(status, message, error_type)
        return super().error_body(status, message, error_type)

    def error_reply(
        self,
        status: int,
        message: str,
        error_type: str | None = None,
        headers: list[tuple[str, str]] | None = None,
        request_id: str | None = None,
    ) -> Reply:
        extra = [(self.request_id_header, request_id)] if request_id else []
        body = self.error_body(status, message, error_type)
        return json_reply(status, body, [*extra, *(headers or [])])

    def status_fault(self, fault: StatusStep) -> StatusFault:
        return _vertex_fault(super().status_fault(fault), fault, self.model)


class VertexGeminiCodec(GeminiCodec):
    """Gemini at ``…/publishers/google/models/{model}:generateContent``, for one model."""

    wire = VERTEX_GEMINI
    provider: ClassVar[str] = "vertex"

    def status_fault(self, fault: StatusStep) -> StatusFault:
        if isinstance(fault, AuthExpired):  # not the Developer API's 400 API_KEY_INVALID
            return _vertex_fault(WireCodec.status_fault(self, fault), fault, self.model)
        return _vertex_fault(super().status_fault(fault), fault, self.model)


_PUBLISHER = r"/(?:v1|v1beta1)/projects/[^/]+/locations/[^/]+/publishers/{}/models/([^/:]+):({})"
_ANTHROPIC_PATH = re.compile(_PUBLISHER.format("anthropic", "rawPredict|streamRawPredict"))
_GEMINI_PATH = re.compile(_PUBLISHER.format("google", "generateContent|streamGenerateContent"))


@functools.lru_cache(maxsize=256)
def vertex_anthropic_codec(path: str) -> VertexAnthropicCodec | None:
    """The codec for a Vertex Anthropic model path, else None (one per model and method)."""
    found = _ANTHROPIC_PATH.fullmatch(path)
    if found is None or found.group(1) == "count-tokens":
        return None
    return VertexAnthropicCodec(found.group(1), stream=found.group(2) == "streamRawPredict")


@functools.lru_cache(maxsize=256)
def vertex_gemini_codec(path: str, *, sse: bool = True) -> VertexGeminiCodec | None:
    """The codec for a Vertex Gemini model path, else None."""
    found = _GEMINI_PATH.fullmatch(path)
    if found is None:
        return None
    stream = found.group(2) == "streamGenerateContent"
    return VertexGeminiCodec(found.group(1), stream=stream, sse=sse or not stream)


def _anthropic_codec_for(path: str, query: str | None) -> WireCodec | None:
    return vertex_anthropic_codec(path)


def _gemini_codec_for(path: str, query: str | None) -> WireCodec | None:
    if query is not None and path.endswith(":streamGenerateContent"):
        return vertex_gemini_codec(path, sse=asks_for_sse(query))
    return vertex_gemini_codec(path)


def read_error(status: int, body: Any, headers: Mapping[str, str]) -> Step:
    """A recorded Vertex error: a 401 ``UNAUTHENTICATED`` is ``AuthExpired``."""
    error = error_object(body)
    if status == 401 and isinstance(error, dict) and error.get("status") == "UNAUTHENTICATED":
        message = error.get("message")
        return AuthExpired(message=message) if isinstance(message, str) else AuthExpired()
    return error_step(status, body, headers)


#: ``url("vertex")``: the root each SDK adds its API version to.
VERTEX = ApiProvider(
    "vertex",
    "/vertex",
    "Vertex AI (Anthropic rawPredict, Gemini generateContent)",
    "Vertex AI's Anthropic and Gemini publisher paths",
)
_WHERE = "/v1/projects/demo/locations/us-east5/publishers"

#: Anthropic Messages at ``:rawPredict`` / ``:streamRawPredict``.
ANTHROPIC_WIRE = ModelWire(
    name=VERTEX_ANTHROPIC.name,
    declared=VERTEX_ANTHROPIC,
    api=VERTEX,
    title="Vertex AI Anthropic (`POST …/publishers/anthropic/models/{model}:streamRawPredict`)",
    paths=(),
    codec_for=_anthropic_codec_for,
    endpoint=None,
    recorded_path=lambda path: "/publishers/anthropic/models/" in path,
    pattern="/v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:rawPredict",
    cache_fields=tuple(f for f in _ANTHROPIC.cache_fields if f != "model"),
    prefix_view=_ANTHROPIC.prefix_view,
    history_calls=_ANTHROPIC.history_calls,
    declared_tools=_ANTHROPIC.declared_tools,
    read_frames=_ANTHROPIC.read_frames,
    read_body=_ANTHROPIC.read_body,
    read_error=read_error,
    client=WireClient(
        f"{_WHERE}/anthropic/models/claude-demo:streamRawPredict",
        lambda history: {
            **{k: v for k, v in _ANTHROPIC.client.request(history).items() if k != "model"},
            "anthropic_version": "vertex-2023-10-16",
        },
        _ANTHROPIC.client.user,
        _ANTHROPIC.client.apply,
        _ANTHROPIC.client.tool_round,
    ),
)

#: Gemini at ``:generateContent`` / ``:streamGenerateContent``.
GEMINI_WIRE = ModelWire(
    name=VERTEX_GEMINI.name,
    declared=VERTEX_GEMINI,
    api=VERTEX,
    title="Vertex AI Gemini (`POST …/publishers/google/models/{model}:streamGenerateContent`)",
    paths=(),
    codec_for=_gemini_codec_for,
    endpoint=None,
    recorded_path=lambda path: "/publishers/google/models/" in path,
    pattern="/v1beta1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent",
    cache_fields=_GEMINI.cache_fields,
    prefix_view=_GEMINI.prefix_view,
    history_calls=_GEMINI.history_calls,
    declared_tools=_GEMINI.declared_tools,
    read_frames=_GEMINI.read_frames,
    read_body=_GEMINI.read_body,
    read_error=read_error,
    client=WireClient(
        f"{_WHERE}/google/models/gemini-demo:streamGenerateContent?alt=sse".replace(
            "/v1/", "/v1beta1/"
        ),
        _GEMINI.client.request,
        _GEMINI.client.user,
        _GEMINI.client.apply,
        _GEMINI.client.tool_round,
    ),
)
