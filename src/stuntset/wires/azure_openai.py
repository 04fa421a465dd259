"""Azure OpenAI: the Chat Completions and Responses wires at Azure's paths, with Azure's
errors and headers. The bodies and streams are OpenAI's (``ChatCodec``, ``ResponsesCodec``):
only what Azure does differently lives here.

Wire facts (openai 3.57's ``AzureOpenAI``, ``openai/lib/azure.py``; the error texts as users
report them from the service, e.g. langgenius/dify #12709, chatboxai/chatbox #861,
Azure-Samples/azure-search-openai-demo #1390):

- ``AzureOpenAI(azure_endpoint=E, api_version=V)`` posts Chat to
  ``E/openai/deployments/{model}/chat/completions?api-version=V`` (the model is the
  deployment) and Responses to ``E/openai/responses?api-version=V``; the v1 API is
  ``E/openai/v1/chat/completions`` and ``E/openai/v1/responses``. The key is an ``api-key``
  header (``azure_ad_token``: ``Authorization: Bearer``).
- Every reply carries ``x-request-id``, ``apim-request-id`` and ``x-ms-region``.
- A streamed Chat response starts with a chunk of no choices, empty ``id``, ``model`` and
  ``object``, and the ``prompt_filter_results`` (a raw loop doing ``chunk.choices[0]``
  crashes on it); a whole one carries them beside ``choices``, and each choice its
  ``content_filter_results``.
- Errors the gateway answers (401, 403, 404, 408, 429) are ``{"error": {"code", "message"}}``
  with the code a string: ``"401"`` (``Access denied due to invalid subscription key…``),
  ``"429"`` (``Requests to the ChatCompletions_Create Operation under Azure OpenAI API version
  … Please retry after N seconds…``, with ``retry-after`` and ``retry-after-ms``), and
  ``DeploymentNotFound`` for 404. A content-filter refusal is a 400 whose ``code`` is
  ``content_filter`` with an ``innererror``. Errors from the model behind it (other 400s,
  5xx) are OpenAI's ``{"error": {"message", "type", "param", "code"}}``.
- ``api-version`` (the deployment and ``/openai/responses`` paths; the v1 API has none to
  check): a request without one is a 404 ``{"error": {"code": "404", "message": "Resource
  not found"}}`` (MicrosoftDocs/azure-docs #114602: "returns 404 if api-version is not
  present as query param"; the body as ThinkInAIXYZ/deepchat #262 quotes it); one the
  service does not support is a 400 ``{"error": {"code": "BadRequest", "message": "API
  version not supported"}}`` (openai/codex #3725, hotovo/aider-desk #460). Unsupported
  here: a value that is not a dated release (``YYYY-MM-DD``, ``YYYY-MM-DD-preview``), one
  before the first (2022-12-01), and the previews retired on 2024-07-01 (the API preview
  lifecycle page: 2023-03-15, 2023-07-01, 2023-08-01, 2023-09-01, 2023-12-01). Neither
  request reaches a scripted turn.

Under ``stuntset.serve`` the Azure routes sit below ``/azure``: ``url("azure")`` is the
``azure_endpoint``. The deployment paths are also answered from the server root
(``azure_endpoint=stand_in.base_url``), where ``/openai/v1/…`` is plain OpenAI.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Final
from urllib.parse import parse_qs

import msgspec

from stuntset.script import AuthExpired, HttpError, RateLimit, Step

from ._codec import Plan, RenderContext, StatusFault, StatusStep, WireCodec, encode
from ._declared import AZURE_OPENAI_CHAT, AZURE_OPENAI_RESPONSES
from ._readback import error_object, error_step
from ._reply import Action
from ._spec import ApiProvider, ModelWire
from .openai_chat import WIRE as _CHAT
from .openai_chat import ChatCodec, openai_error_body
from .openai_responses import WIRE as _RESPONSES
from .openai_responses import ResponsesCodec

__all__ = [
    "AZURE",
    "AZURE_API_VERSION",
    "CHAT_WIRE",
    "RESPONSES_WIRE",
    "RETIRED_API_VERSIONS",
    "AzureChatCodec",
    "AzureResponsesCodec",
    "api_version_refusal",
    "azure_error_body",
]

#: The ``api-version`` the demo client asks for (any supported one is answered).
AZURE_API_VERSION: Final = "2024-10-21"
#: The previews Azure OpenAI retired on 2024-07-01 (its API preview lifecycle page): refused.
RETIRED_API_VERSIONS: Final = frozenset(
    f"{day}-preview"
    for day in ("2023-03-15", "2023-07-01", "2023-08-01", "2023-09-01", "2023-12-01")
)
#: A dated release: ``2024-10-21``, ``2025-03-01-preview``.
_DATED: Final = re.compile(r"(\d{4}-\d{2}-\d{2})(-preview)?")
#: The first data-plane release.
_FIRST: Final = "2022-12-01"
_NO_VERSION: Final = (404, "Resource not found", "404")
_UNSUPPORTED: Final = (400, "API version not supported", "BadRequest")
#: The region every reply names (``x-ms-region``).
_REGION: Final = "East US"
#: The gateway's own errors: the HTTP status → the ``code`` it sends.
_GATEWAY_CODES: Final = {401: "401", 403: "403", 404: "DeploymentNotFound", 408: "408", 429: "429"}
_ACCESS_DENIED: Final = (
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide "
    "a valid key for an active subscription and use a correct regional API endpoint for your "
    "resource."
)
_FILTERED: Final = {
    name: {"filtered": False, "severity": "safe"}
    for name in ("hate", "self_harm", "sexual", "violence")
}
_PROMPT_FILTER: Final = [{"prompt_index": 0, "content_filter_results": _FILTERED}]
#: The ``type`` of an error body from the model behind the gateway (not the gateway's own).
_CONTENT_FILTER: Final = "content_filter"


def azure_error_body(status: int, message: str, error_type: str | None) -> dict[str, Any]:
    """Azure OpenAI's error body for ``status``: the gateway's ``{"code", "message"}`` (the
    code ``error_type`` when the script names one), a content-filter refusal
    (``error_type="content_filter"``), or the model's OpenAI-shaped error."""
    if error_type == _CONTENT_FILTER:
        inner = {"code": "ResponsibleAIPolicyViolation", "content_filter_result": _FILTERED}
        return {
            "error": {
                "message": message,
                "type": None,
                "param": "prompt",
                "code": _CONTENT_FILTER,
                "status": status,
                "innererror": inner,
            }
        }
    if status in _GATEWAY_CODES or error_type == "BadRequest":  # the gateway's 400s too
        code = error_type or _GATEWAY_CODES[status]
        return {"error": {"code": code, "message": message}}
    return openai_error_body(status, message, error_type)


def api_version_refusal(path: str, query: str) -> tuple[int, str, str | None] | None:
    """Azure OpenAI's answer to a request to ``path`` for its ``api-version`` (see the module
    docs): ``(404, "Resource not found", "404")`` without one, ``(400, "API version not
    supported", "BadRequest")`` for one it does not support, else None (and always on the
    v1 API's paths)."""
    if "/v1/" in path:
        return None
    given = parse_qs(query, keep_blank_values=True).get("api-version", [""])[-1]
    if not given:
        return _NO_VERSION
    dated = _DATED.fullmatch(given)
    if dated is None or dated.group(1) < _FIRST or given in RETIRED_API_VERSIONS:
        return _UNSUPPORTED
    return None


def _rate_limited(operation: str, retry: float) -> str:
    seconds = max(1, math.ceil(retry))
    return (
        f"Requests to the {operation} Operation under Azure OpenAI API version "
        f"{AZURE_API_VERSION} have exceeded token rate limit of your current OpenAI S0 pricing "
        f"tier. Please retry after {seconds} second{'s' if seconds != 1 else ''}. Please go "
        "here: https://aka.ms/oai/quotaincrease if you would like to further increase the "
        "default rate limit."
    )


class _Azure(WireCodec):
    """What both Azure wires do differently from OpenAI's: headers, errors, messages."""

    provider: ClassVar[str] = "azure"
    #: the operation a rate-limit message names
    operation: ClassVar[str]

    checks_query: ClassVar[bool] = True

    def response_headers(self, request_id: str) -> list[tuple[str, str]]:
        return [("apim-request-id", request_id), ("x-ms-region", _REGION)]

    def refuses_query(self, path: str, query: str) -> tuple[int, str, str | None] | None:
        return api_version_refusal(path, query)

    def error_body(self, status: int, message: str, error_type: str | None) -> object:
        return azure_error_body(status, message, error_type)

    def status_fault(self, fault: StatusStep) -> StatusFault:
        found = super().status_fault(fault)
        message = found.message
        if isinstance(fault, AuthExpired) and message == AuthExpired().message:
            message = _ACCESS_DENIED
        elif isinstance(fault, RateLimit) and message == RateLimit().message:
            retry = fault.retry_after or (fault.retry_after_ms or 0) / 1000
            message = _rate_limited(self.operation, retry)
        if message is found.message:
            return found
        return dataclasses.replace(found, message=message)


class AzureChatCodec(_Azure, ChatCodec):
    """Chat Completions as Azure OpenAI answers it."""

    wire = AZURE_OPENAI_CHAT
    operation: ClassVar[str] = "ChatCompletions_Create"

    def in_band_error(self, fault: StatusFault, ctx: RenderContext) -> bytes:
        body = azure_error_body(fault.status, fault.message, fault.error_type)
        return ctx.framing.frame(encode(body))

    def complete(self, plan: Plan, ctx: RenderContext) -> object:
        body = super().complete(plan, ctx)
        assert isinstance(body, dict)
        for choice in body["choices"]:
            choice["content_filter_results"] = _FILTERED
        body["prompt_filter_results"] = _PROMPT_FILTER
        return body

    def stream_body(self, plan: Plan, ctx: RenderContext) -> list[Action]:
        first = {
            "choices": [],
            "created": 0,
            "id": "",
            "model": "",
            "object": "",
            "prompt_filter_results": _PROMPT_FILTER,
        }
        return [ctx.framing.frame(encode(first)), *super().stream_body(plan, ctx)]


class AzureResponsesCodec(_Azure, ResponsesCodec):
    """Responses as Azure OpenAI answers it."""

    wire = AZURE_OPENAI_RESPONSES
    operation: ClassVar[str] = "Responses_Create"


# --- read back --------------------------------------------------------------------------------


def read_error(status: int, body: Any, headers: Mapping[str, str]) -> Step:
    """A recorded Azure error: the gateway's ``code`` is the type it renders with again."""
    error = error_object(body)
    if isinstance(error, dict) and "type" not in error:
        message = error.get("message")
        code = error.get("code")
        step = error_step(status, body, headers)
        assert isinstance(step, HttpError)
        named = isinstance(code, str) and code != _GATEWAY_CODES.get(status)
        return msgspec.structs.replace(
            step,
            message=message if isinstance(message, str) else None,
            error_type=code if named else None,
        )
    return error_step(status, body, headers)


# --- routes -----------------------------------------------------------------------------------

#: ``azure_endpoint`` is ``url("azure")``; the SDK adds ``/openai/…`` itself.
AZURE = ApiProvider(
    "azure",
    "/azure",
    "Azure OpenAI (deployments, v1)",
    "Azure OpenAI's deployment and v1 paths",
)

#: ``/openai/deployments/{deployment}/chat/completions`` (``/deployments/…`` once a
#: ``/openai`` prefix is taken off at the server root).
_DEPLOYMENT = re.compile(r"(?:/openai)?/deployments/[^/]+/chat/completions")
_CHAT_V1 = "/openai/v1/chat/completions"
#: ``/openai/responses`` (``/responses`` once a ``/openai`` prefix is taken off).
_RESPONSES_PATHS = frozenset({"/openai/responses", "/responses", "/openai/v1/responses"})
_CHAT_CODEC = AzureChatCodec()
_RESPONSES_CODEC = AzureResponsesCodec()


@functools.lru_cache(maxsize=256)
def _chat_codec_for(path: str, query: str | None) -> WireCodec | None:
    if path == _CHAT_V1 or _DEPLOYMENT.fullmatch(path):
        return _CHAT_CODEC
    return None


def _responses_codec_for(path: str, query: str | None) -> WireCodec | None:
    return _RESPONSES_CODEC if path in _RESPONSES_PATHS else None


def _deployment_path(path: str) -> bool:
    return "/deployments/" in path and path.endswith("/chat/completions")


_QUERY = f"?api-version={AZURE_API_VERSION}"

#: Chat Completions at a deployment's path (and at the v1 path below ``/azure``).
CHAT_WIRE = ModelWire(
    name=AZURE_OPENAI_CHAT.name,
    declared=AZURE_OPENAI_CHAT,
    api=AZURE,
    title="Azure OpenAI Chat (`POST /openai/deployments/{deployment}/chat/completions`)",
    paths=(),
    codec_for=_chat_codec_for,
    endpoint=None,
    recorded_path=_deployment_path,
    pattern="/openai/deployments/{deployment}/chat/completions",
    cache_fields=_CHAT.cache_fields,
    prefix_view=_CHAT.prefix_view,
    history_calls=_CHAT.history_calls,
    declared_tools=_CHAT.declared_tools,
    read_frames=_CHAT.read_frames,
    read_body=_CHAT.read_body,
    read_error=read_error,
    client=dataclasses.replace(
        _CHAT.client, path=f"/openai/deployments/demo/chat/completions{_QUERY}"
    ),
)

#: Responses at ``/openai/responses`` (and ``/openai/v1/responses`` below ``/azure``).
RESPONSES_WIRE = ModelWire(
    name=AZURE_OPENAI_RESPONSES.name,
    declared=AZURE_OPENAI_RESPONSES,
    api=AZURE,
    title="Azure OpenAI Responses (`POST /openai/responses`)",
    paths=("/openai/responses",),
    codec_for=_responses_codec_for,
    endpoint=None,
    recorded_path=lambda path: path.endswith("/openai/responses"),
    cache_fields=_RESPONSES.cache_fields,
    prefix_view=_RESPONSES.prefix_view,
    history_calls=_RESPONSES.history_calls,
    declared_tools=_RESPONSES.declared_tools,
    read_frames=_RESPONSES.read_frames,
    read_body=_RESPONSES.read_body,
    read_error=read_error,
    client=dataclasses.replace(_RESPONSES.client, path=f"/openai/responses{_QUERY}"),
    version_header="api-key",
)
