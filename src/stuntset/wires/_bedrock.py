"""What Bedrock's two wires share (Converse and InvokeModel, ``bedrock_converse`` and
``bedrock_invoke``): the routes under ``/model/{modelId}/``, the error shapes, the faults as
Bedrock sends them, and a recorded error read back.

Wire facts (botocore 1.44's ``bedrock-runtime`` model and ``parsers.py``; docs/protocol-
bedrock.md): the protocol is rest-json; the model id is a path label (botocore sends ``:``
as ``%3A``); an error is ``{"message": ...}`` with its code in the ``x-amzn-ErrorType``
header (``ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/``, what
botocore reads before the body), and ``x-amzn-RequestId`` names the request. Statuses:
400 ``ValidationException``, 403 ``AccessDeniedException`` (and
``UnrecognizedClientException``, ``ExpiredTokenException`` for a bad or expired key), 404
``ResourceNotFoundException``, 408 ``ModelTimeoutException``, 424 ``ModelErrorException``,
429 ``ThrottlingException``, 500 ``InternalServerException``, 503
``ServiceUnavailableException``. An error after the stream began is an event-stream
exception (``:exception-type: throttlingException``…, ``_eventstream``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, ClassVar, Final
from urllib.parse import unquote

from stuntset.script import AuthExpired, HttpError, Overloaded, RateLimit, Step

from ._codec import RenderContext, StatusFault, StatusStep, WireCodec, encode
from ._eventstream import exception_message
from ._reply import Reply, json_reply
from ._spec import ApiProvider

__all__ = [
    "BEDROCK",
    "BedrockErrors",
    "bedrock_error_type",
    "model_path",
    "read_error",
    "stream_exception_type",
]

#: boto3's ``endpoint_url`` and ``AnthropicBedrock``'s ``base_url`` are the server root: the
#: clients add ``/model/{modelId}/…`` themselves.
BEDROCK: Final = ApiProvider(
    "bedrock", "/bedrock", "AWS Bedrock (Converse, InvokeModel)", "Converse and InvokeModel"
)

_TYPES: Final = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    409: "ConflictException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
#: The exceptions a stream may end with (``ConverseStreamOutput`` and ``ResponseStream``
#: members), by HTTP status.
_STREAM_TYPES: Final = {
    400: "validationException",
    408: "modelTimeoutException",
    429: "throttlingException",
    503: "serviceUnavailableException",
}
#: Where the header says the error is from, after its code.
_NAMESPACE: Final = ":http://internal.amazon.com/coral/com.amazon.bedrock/"
#: Per fault kind: stuntset's default message, and what Bedrock says instead (a message the
#: script chose is sent as it is), with the status and code it sends.
_FAULTS: Final[dict[type[Step], tuple[str, str, int, str]]] = {
    RateLimit: (
        RateLimit().message,
        "Too many requests, please wait before trying again.",
        429,
        "ThrottlingException",
    ),
    Overloaded: (
        Overloaded().message,
        "Too many connections, please wait before trying again.",
        503,
        "ServiceUnavailableException",
    ),
    AuthExpired: (
        AuthExpired().message,
        "The security token included in the request is expired",
        403,
        "ExpiredTokenException",
    ),
}

_PATH: Final = re.compile(
    r"/model/([^/]+)/(converse|converse-stream|invoke|invoke-with-response-stream)"
)


def bedrock_error_type(status: int) -> str:
    """The error code Bedrock sends with HTTP ``status``."""
    return _TYPES.get(status, "InternalServerException" if status >= 500 else "ValidationException")


def stream_exception_type(status: int, members: frozenset[str]) -> str:
    """The exception a stream ends with for an error of HTTP ``status``, among the stream's
    ``members`` (``modelStreamErrorException`` for any other status)."""
    name = _STREAM_TYPES.get(status, "internalServerException" if status >= 500 else "")
    return name if name in members else "modelStreamErrorException"


@functools.lru_cache(maxsize=256)
def model_path(path: str) -> tuple[str, str] | None:
    """``(model id, operation)`` of a Bedrock runtime path (the model id percent-decoded:
    ``anthropic.claude-sonnet-4-5-v1%3A0``), or None for any other path."""
    found = _PATH.fullmatch(path)
    if found is None:
        return None
    return unquote(found.group(1)), found.group(2)


class BedrockErrors(WireCodec):
    """Bedrock's error shapes, for both of its wires (listed first among a codec's bases)."""

    provider: ClassVar[str] = "bedrock"
    request_id_header: ClassVar[str] = "x-amzn-RequestId"
    overloaded_status: ClassVar[int] = 503
    too_large_type: ClassVar[str | None] = "ValidationException"
    #: the stream's exception members (``stream_exception_type``)
    exceptions: ClassVar[frozenset[str]] = frozenset()
    #: a stream's bytes hold ids behind CRCs (and base64): rendered per request, not filled
    templated_streams: ClassVar[bool] = False

    def error_body(self, status: int, message: str, error_type: str | None) -> object:
        return {"message": message}

    def error_reply(
        self,
        status: int,
        message: str,
        error_type: str | None = None,
        headers: list[tuple[str, str]] | None = None,
        request_id: str | None = None,
    ) -> Reply:
        code = error_type or bedrock_error_type(status)
        extra = [("x-amzn-ErrorType", code + _NAMESPACE)]
        if request_id:
            extra.append((self.request_id_header, request_id))
        return json_reply(status, {"message": message}, [*extra, *(headers or [])])

    def status_fault(self, fault: StatusStep) -> StatusFault:
        found = super().status_fault(fault)
        known = _FAULTS.get(type(fault))
        if known is None:  # an HttpError: its status, and the code it stands for
            code = found.error_type or bedrock_error_type(found.status)
            return StatusFault(found.status, found.message, code, found.headers)
        default, said, status, code = known
        message = said if found.message == default else found.message
        return StatusFault(status, message, code, found.headers)

    def in_band_error(self, fault: StatusFault, ctx: RenderContext) -> bytes:
        name = stream_exception_type(fault.status, self.exceptions)
        return exception_message(name, encode({"message": fault.message}))


def _code(headers: Mapping[str, str]) -> str | None:
    lowered = {k.lower(): v for k, v in headers.items()}
    value = lowered.get("x-amzn-errortype")
    return value.partition(":")[0] or None if isinstance(value, str) else None


def read_error(status: int, body: Any, headers: Mapping[str, str]) -> Step:
    """A recorded Bedrock error: an ``HttpError`` with its status, message and code."""
    message = body.get("message") or body.get("Message") if isinstance(body, dict) else None
    retry_ms = {k.lower(): v for k, v in headers.items()}.get("retry-after-ms")
    return HttpError(
        status,
        message=message if isinstance(message, str) else None,
        error_type=_code(headers),
        retry_after_ms=int(float(retry_ms)) if retry_ms else None,
    )


def read_exception(name: str | None, payload: Any) -> Step:
    """An exception a recorded stream ended with, as the step that renders it."""
    message = payload.get("message") if isinstance(payload, dict) else None
    text = message if isinstance(message, str) else None
    if name == "throttlingException":
        return RateLimit(message=text) if text else RateLimit()
    if name == "serviceUnavailableException":
        return Overloaded(message=text) if text else Overloaded()
    status = next((s for s, n in _STREAM_TYPES.items() if n == name), 500)
    if name == "modelStreamErrorException":
        status = 424
    code = (name[0].upper() + name[1:]) if name else None
    return HttpError(status, message=text, error_type=code)
