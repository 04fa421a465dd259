"""AWS's binary event stream (``application/vnd.amazon.eventstream``), what Bedrock streams in:
one message is a prelude (total length, headers length, both big-endian ``uint32``, and the
CRC32 of those 8 bytes), the headers, the payload and the CRC32 of everything before it.

A header is its name's length (``uint8``), the name, a type byte (7: a string) and the
value's length (``uint16``) and bytes. An event carries ``:event-type``, ``:content-type``
and ``:message-type: event``; an error the stream ends with carries ``:message-type:
exception`` and ``:exception-type`` (``throttlingException``), its payload the error's
``{"message": ...}``. botocore (``botocore/eventstream.py``) checks both CRCs and refuses a
message over 16 MiB; so does ``decode_frame``, which the readers use. The recorder's parser
(``EventStreamParser``) refuses nothing: it keeps what a faulty server sent.

A recorded frame keeps the whole message as base64 (``data``), its event or exception type
in ``event``: a replay writes the same bytes back, CRCs and all.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from collections.abc import Callable
from typing import Any, Final

from ._spec import StreamFraming

__all__ = [
    "CONTENT_TYPE",
    "EVENTSTREAM",
    "EventStreamError",
    "EventStreamParser",
    "Message",
    "decode_frame",
    "event_message",
    "exception_message",
    "map_json",
    "message",
]

CONTENT_TYPE: Final = "application/vnd.amazon.eventstream"
_PRELUDE: Final = 12
_STRING: Final = 7
#: botocore's limits (``_MAX_HEADERS_LENGTH``, ``_MAX_PAYLOAD_LENGTH``).
_MAX_HEADERS: Final = 128 * 1024
_MAX_PAYLOAD: Final = 16 * 1024**2


class EventStreamError(ValueError):
    """Bytes that are not an event-stream message: a bad CRC, a length out of bounds, a
    header of a type this parser does not read, or a message cut short."""


def _crc(data: bytes, value: int = 0) -> int:
    return binascii.crc32(data, value) & 0xFFFFFFFF


def message(headers: list[tuple[str, str]], payload: bytes) -> bytes:
    """One event-stream message with string ``headers`` (in order) and ``payload``."""
    head = b"".join(
        struct.pack(">B", len(name)) + name.encode() + struct.pack(">BH", _STRING, len(value))
        + value.encode()
        for name, value in headers
    )  # fmt: skip
    total = _PRELUDE + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    body = prelude + struct.pack(">I", _crc(prelude)) + head + payload
    return body + struct.pack(">I", _crc(body))


def event_message(event_type: str, payload: bytes) -> bytes:
    """An event (``:message-type: event``) with a JSON payload."""
    headers = [
        (":event-type", event_type),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ]
    return message(headers, payload)


def exception_message(exception_type: str, payload: bytes) -> bytes:
    """An error the stream ends with (``:message-type: exception``)."""
    headers = [
        (":exception-type", exception_type),
        (":content-type", "application/json"),
        (":message-type", "exception"),
    ]
    return message(headers, payload)


class Message:
    """One decoded message: its headers (string values) and its payload."""

    __slots__ = ("headers", "payload")

    def __init__(self, headers: dict[str, str], payload: bytes) -> None:
        self.headers = headers
        self.payload = payload

    @property
    def kind(self) -> str:
        """``event``, ``exception`` or ``error`` (``:message-type``)."""
        return self.headers.get(":message-type", "event")

    @property
    def name(self) -> str | None:
        """Its event type, or its exception type (or error code) for an error."""
        headers = self.headers
        return (
            headers.get(":event-type")
            or headers.get(":exception-type")
            or headers.get(":error-code")
        )


def _headers(data: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    at = 0
    while at < len(data):
        size = data[at]
        name = data[at + 1 : at + 1 + size].decode("utf-8", "replace")
        at += 1 + size
        if at >= len(data) or data[at] != _STRING:
            kind = data[at] if at < len(data) else None
            raise EventStreamError(f"header {name!r}: type {kind!r} (this parser reads strings)")
        (length,) = struct.unpack_from(">H", data, at + 1)
        out[name] = data[at + 3 : at + 3 + length].decode("utf-8", "replace")
        at += 3 + length
    return out


def _decode(data: bytes) -> Message:
    """``data``, exactly one whole message, decoded (``EventStreamError`` if it is not one)."""
    if len(data) < _PRELUDE + 4:
        raise EventStreamError(f"{len(data)} bytes: shorter than any message")
    total, head = struct.unpack_from(">II", data)
    (prelude_crc,) = struct.unpack_from(">I", data, 8)
    if _crc(data[:8]) != prelude_crc:
        raise EventStreamError(f"prelude CRC32 mismatch (sent {prelude_crc:#010x})")
    (message_crc,) = struct.unpack_from(">I", data, total - 4)
    if _crc(data[: total - 4]) != message_crc:
        raise EventStreamError(f"message CRC32 mismatch (sent {message_crc:#010x})")
    try:
        headers = _headers(data[_PRELUDE : _PRELUDE + head])
    except (struct.error, IndexError):
        raise EventStreamError(f"headers of {head} bytes that do not parse") from None
    return Message(headers, data[_PRELUDE + head : total - 4])


def decode_frame(data: str) -> Message:
    """A recorded frame's ``data`` (a whole message in base64) decoded."""
    try:
        raw = base64.b64decode(data, validate=True)
    except binascii.Error as error:
        raise EventStreamError(f"a frame that is not base64: {error}") from None
    if len(raw) < _PRELUDE + 4 or struct.unpack_from(">I", raw)[0] != len(raw):
        raise EventStreamError(f"a frame of {len(raw)} bytes that is not one whole message")
    return _decode(raw)


class EventStreamParser:
    """Bytes in, messages out as ``(event or exception type, base64 of the message)``, however
    the bytes were split. It never raises, so that a recorder keeps what a faulty server sent:
    a message whose CRC does not hold is a frame with no event, and from bytes that are no
    message on (a length out of bounds), every chunk is a frame with no event, as it came.
    A replay writes each frame's bytes back; a reader refuses them (``decode_frame``)."""

    def __init__(self) -> None:
        self._buffer = b""
        self._broken = False

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        if self._broken:
            return [(None, base64.b64encode(chunk).decode())] if chunk else []
        buffer = self._buffer + chunk
        out: list[tuple[str | None, str]] = []
        while len(buffer) >= _PRELUDE:
            total, head = struct.unpack_from(">II", buffer)
            if head > _MAX_HEADERS or total - head - _PRELUDE - 4 > _MAX_PAYLOAD or total < 16:
                self._broken = True
                out.append((None, base64.b64encode(buffer).decode()))
                buffer = b""
                break
            if len(buffer) < total:
                break
            raw, buffer = buffer[:total], buffer[total:]
            try:
                name = _decode(raw).name
            except (EventStreamError, struct.error, IndexError):
                name = None
            out.append((name, base64.b64encode(raw).decode()))
        self._buffer = buffer
        return out

    def close(self) -> list[tuple[str | None, str]]:
        left, self._buffer = self._buffer, b""
        return [(None, base64.b64encode(left).decode())] if left else []


def map_json(data: str, change: Callable[[Any], Any]) -> str:
    """A recorded frame (``data``: a message as base64) with its JSON payload passed through
    ``change``, and the JSON a ``chunk``'s base64 ``bytes`` carry too (InvokeModel's
    Messages events); the message is made again, CRCs and all, only when something changed.
    A frame that is no message, or whose payload is no JSON, comes back as it is."""
    try:
        found = decode_frame(data)
        document = json.loads(found.payload)
    except (EventStreamError, ValueError):
        return data
    changed = change(document)
    inner = document.get("bytes") if isinstance(document, dict) else None
    if isinstance(inner, str) and isinstance(changed, dict):
        try:
            event = json.loads(base64.b64decode(inner, validate=True))
        except (binascii.Error, ValueError):
            event = None
        if event is not None:
            clean = change(event)
            if clean != event:
                changed = {
                    **changed,
                    "bytes": base64.b64encode(json.dumps(clean).encode()).decode(),
                }
    if changed == document:
        return data
    rebuilt = message(list(found.headers.items()), json.dumps(changed).encode())
    return base64.b64encode(rebuilt).decode()


#: Bedrock's streams (ConverseStream, InvokeModelWithResponseStream).
EVENTSTREAM: Final = StreamFraming("binary", CONTENT_TYPE, EventStreamParser, "base64")
