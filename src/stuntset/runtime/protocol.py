"""The daemon's WebSocket messages: JSON objects tagged by ``op`` (requests) or ``type``
(replies). ``parse_request`` turns bad input into a ``BadMessage`` naming the field.

Requests (each may carry an ``id`` that the reply echoes)::

    {"op": "create_task", "workdir": "/abs/dir"}
    {"op": "create_session", "task_id": "...", "provider": "scripted"}
    {"op": "start_turn", "session_id": "...", "prompt": "..."}
    {"op": "interrupt", "session_id": "..."}
    {"op": "respond", "session_id": "...", "request_id": "...", "decision": "allow"}
    {"op": "close", "session_id": "..."}
    {"op": "subscribe", "session_id": "...", "after": 0, "epoch": 0}   # replay, then live
    {"op": "unsubscribe", "session_id": "..."}

Replies: ``{"type": "ok", "id", "result"}``, ``{"type": "error", "id", "field", "message"}``,
and for subscriptions ``{"type": "event", "session_id", "epoch", "event"}`` or ``{"type":
"stale", "session_id", "cursor", "resume_at", "message"}`` when a rollback passed the cursor
of a live subscription (it has ended; subscribe again), or ``{"type": "error", "id": null,
"session_id", "field": null, "message"}`` when the log cannot go on with it (a stored row
that does not decode: the message names its seq and ``stuntset log doctor``).

Resuming: the event carries its ``seq`` and the frame the session ``epoch`` that ``seq``
belongs to. A client keeps the pair of the last event it saw and resubscribes with ``after``
= that ``seq`` and ``epoch`` = that epoch (both optional: ``after`` 0, ``epoch`` absent =
no check against rollbacks). If a rollback while it was away dropped events at or below
``after``, or ``after`` is beyond the head, the subscribe gets an ``error`` with ``field``
``"after"`` and ``resume_at``: the events up to that ``seq`` are still the ones it holds;
it drops what came after and subscribes with ``after`` = ``resume_at`` (the same epoch).
Only an error for a stale cursor carries ``resume_at``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, TypeAlias

import msgspec

__all__ = [
    "MAX_MESSAGE",
    "BadMessage",
    "Close",
    "CreateSession",
    "CreateTask",
    "DaemonInfo",
    "Interrupt",
    "Request",
    "Respond",
    "StartTurn",
    "Subscribe",
    "Unsubscribe",
    "error_reply",
    "parse_request",
]


class DaemonInfo(msgspec.Struct, frozen=True, kw_only=True):
    """Where a running daemon is and how to talk to it (also the token file's content)."""

    url: str  # http://127.0.0.1:PORT
    port: int
    token: str
    pid: int

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/ws"


#: The largest WebSocket message either side accepts (the server's ``ws_max_size`` and the
#: client's ``max_size``): an event frame carries one event, and events may be large.
MAX_MESSAGE = 64 * 1024 * 1024


class _Op(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", forbid_unknown_fields=True):
    id: str | int | None = None


class CreateTask(_Op, frozen=True, kw_only=True, tag="create_task"):
    workdir: str


class CreateSession(_Op, frozen=True, kw_only=True, tag="create_session"):
    task_id: str
    provider: str


class StartTurn(_Op, frozen=True, kw_only=True, tag="start_turn"):
    session_id: str
    prompt: str


class Interrupt(_Op, frozen=True, kw_only=True, tag="interrupt"):
    session_id: str
    reason: str = "interrupted"


class Respond(_Op, frozen=True, kw_only=True, tag="respond"):
    session_id: str
    request_id: str
    decision: str


class Close(_Op, frozen=True, kw_only=True, tag="close"):
    session_id: str


#: A ``seq`` or an epoch: an int >= 0.
_Count = Annotated[int, msgspec.Meta(ge=0)]


class Subscribe(_Op, frozen=True, kw_only=True, tag="subscribe"):
    session_id: str
    after: _Count = 0
    epoch: _Count | None = None  # the epoch ``after`` belongs to (from the last event frame)


class Unsubscribe(_Op, frozen=True, kw_only=True, tag="unsubscribe"):
    session_id: str


Request: TypeAlias = (
    CreateTask | CreateSession | StartTurn | Interrupt | Respond | Close | Subscribe | Unsubscribe
)
_decoder = msgspec.json.Decoder(Request)
_AT = re.compile(r"at `\$\.([^`]+)`")
_FIELD = re.compile(r"field `([^`]+)`")


class BadMessage(Exception):
    """A request that cannot be carried out: ``field`` names the culprit (or ``None``)."""

    def __init__(self, message: str, *, field: str | None, request_id: Any = None) -> None:
        super().__init__(message)
        self.field = field
        self.request_id = request_id


def parse_request(data: str | bytes) -> Request:
    """One request, or ``BadMessage`` naming the field that is wrong."""
    try:
        return _decoder.decode(data)
    except msgspec.ValidationError as error:
        text = str(error)
        found = _AT.search(text) or _FIELD.search(text)
        field = found.group(1) if found else None
        request_id = _peek_id(data)
        known = ", ".join(sorted(str(t.__struct_config__.tag) for t in Request.__args__))
        hint = f" (known ops: {known})" if field == "op" else ""
        raise BadMessage(f"{text}{hint}", field=field, request_id=request_id) from None
    except msgspec.DecodeError as error:
        raise BadMessage(f"malformed JSON: {error}", field=None) from None
    except RecursionError:
        raise BadMessage("malformed JSON: nested too deeply", field=None) from None


class _IdOnly(msgspec.Struct):
    id: str | int | None = None


def _peek_id(data: str | bytes) -> Any:
    """The ``id`` of a message that did not parse, to echo in the error (``None`` if it has
    none that fits, or cannot be read at all: nested too deeply)."""
    try:
        return msgspec.json.decode(data, type=_IdOnly).id
    except (msgspec.DecodeError, RecursionError):
        return None


def error_reply(
    message: str, *, field: str | None, request_id: Any = None, resume_at: int | None = None
) -> dict[str, Any]:
    """An ``error`` reply; ``resume_at`` only for a stale cursor (where to resubscribe)."""
    reply = {"type": "error", "id": request_id, "field": field, "message": message}
    if resume_at is not None:
        reply["resume_at"] = resume_at
    return reply
