"""AWS's binary event stream as the Bedrock wires write it: every message is one botocore's
own decoder reads back (headers, payload, both CRC32s), a wrong CRC is refused by botocore and
by stuntset's reader alike, and the recorder's parser keeps any bytes, split anywhere."""

from __future__ import annotations

import base64
import json

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

from stuntset.script import RateLimit, Script, Text, ToolCall, Usage
from stuntset.wires import (
    EVENTSTREAM,
    EventStreamError,
    EventStreamParser,
    codec_for,
    decode_frame,
    stream_framing,
)
from stuntset.wires._eventstream import event_message, exception_message


def _botocore(data: bytes) -> list[tuple[dict[str, str], bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return [(dict(m.headers), m.payload) for m in buffer]


def test_a_message_is_what_botocore_decodes() -> None:
    data = event_message("contentBlockDelta", b'{"delta":{"text":"hi"}}')
    [(headers, payload)] = _botocore(data)
    assert headers == {
        ":event-type": "contentBlockDelta",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert payload == b'{"delta":{"text":"hi"}}'
    ours = decode_frame(base64.b64encode(data).decode())
    assert (ours.kind, ours.name, ours.headers, ours.payload) == (
        "event",
        "contentBlockDelta",
        headers,
        payload,
    )


def test_an_exception_message_names_its_type() -> None:
    data = exception_message("throttlingException", b'{"message":"slow down"}')
    [(headers, _)] = _botocore(data)
    assert headers[":message-type"] == "exception"
    assert headers[":exception-type"] == "throttlingException"
    message = decode_frame(base64.b64encode(data).decode())
    assert (message.kind, message.name) == ("exception", "throttlingException")


@pytest.mark.parametrize("where", ["prelude", "payload"])
def test_a_wrong_crc_is_refused_by_botocore_and_by_the_reader(where: str) -> None:
    data = bytearray(event_message("messageStart", b'{"role":"assistant"}'))
    # the prelude's CRC covers bytes 0-7 (a length), the message's every byte before it
    at = 8 if where == "prelude" else len(data) - 6
    data[at] ^= 0x01
    with pytest.raises(ChecksumMismatch):
        _botocore(bytes(data))
    with pytest.raises(EventStreamError, match="CRC32 mismatch"):
        decode_frame(base64.b64encode(bytes(data)).decode())


def test_the_parser_reads_a_stream_split_at_every_byte() -> None:
    codec = codec_for("/model/m/converse-stream")
    assert codec is not None
    from stuntset.doubles.model import ModelDouble

    double = ModelDouble(Script.of([Text("Hi there"), ToolCall("f", {"a": 1}), Usage(2, 3)]))
    reply = double.handle("POST", "/model/m/converse-stream", "", {}, b'{"messages":[{}]}')
    body = b"".join(a for a in reply.actions if isinstance(a, bytes))
    parser = EventStreamParser()
    frames = [f for i in range(len(body)) for f in parser.feed(body[i : i + 1])]
    assert parser.close() == []
    names = [name for name, _ in frames]
    assert names[0] == "messageStart"
    assert names[-2:] == ["messageStop", "metadata"]
    assert [dict(h)[":event-type"] for h, _ in _botocore(body)] == names
    joined = b"".join(base64.b64decode(data) for _, data in frames)
    assert joined == body  # a replay writes back the same bytes


def test_the_parser_keeps_bytes_that_are_no_message() -> None:
    good = event_message("messageStart", b"{}")
    parser = EventStreamParser()
    frames = parser.feed(good + b"<html>not a stream</html>")
    frames += parser.feed(b" more") + parser.close()
    assert [name for name, _ in frames] == ["messageStart", None, None]
    assert b"".join(base64.b64decode(d) for _, d in frames) == (
        good + b"<html>not a stream</html> more"
    )
    with pytest.raises(EventStreamError):
        decode_frame(frames[1][1])


def test_a_stream_cut_inside_a_message_is_kept_and_refused() -> None:
    data = event_message("messageStart", b"{}")
    parser = EventStreamParser()
    assert parser.feed(data[:-3]) == []
    [(name, left)] = parser.close()
    assert name is None
    with pytest.raises(EventStreamError, match="not one whole message"):
        decode_frame(left)


def test_the_content_type_names_the_binary_framing() -> None:
    assert stream_framing("application/vnd.amazon.eventstream") is EVENTSTREAM
    assert (EVENTSTREAM.kind, EVENTSTREAM.data_encoding) == ("binary", "base64")


def test_an_in_band_error_is_an_exception_message() -> None:
    from stuntset.doubles.model import ModelDouble

    double = ModelDouble(Script.of([Text("partial"), RateLimit()]))
    reply = double.handle("POST", "/model/m/converse-stream", "", {}, b'{"messages":[{}]}')
    body = b"".join(a for a in reply.actions if isinstance(a, bytes))
    headers, payload = _botocore(body)[-1]
    assert headers[":message-type"] == "exception"
    assert headers[":exception-type"] == "throttlingException"
    assert json.loads(payload) == {"message": "Too many requests, please wait before trying again."}
