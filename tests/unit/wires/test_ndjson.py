"""The NDJSON framing (Ollama's streams): lines out whatever way the bytes were split, and a
recorded frame written back as its line."""

from __future__ import annotations

from stuntset.wires import SSE, stream_framing
from stuntset.wires._ndjson import NDJSON, NdjsonParser

BODY = b'{"a": 1}\n{"b": "caf\xc3\xa9"}\r\n\n{"done": true}'


def test_lines_come_out_once_however_the_bytes_are_split() -> None:
    for size in (1, 2, 5, len(BODY)):
        parser = NdjsonParser()
        frames = [f for i in range(0, len(BODY), size) for f in parser.feed(BODY[i : i + size])]
        frames += parser.close()
        assert frames == [(None, '{"a": 1}'), (None, '{"b": "café"}'), (None, '{"done": true}')]


def test_a_frame_is_written_back_as_its_line_and_sse_as_an_event() -> None:
    assert NDJSON.write(None, '{"a": 1}') == b'{"a": 1}\n'
    assert SSE.write("ping", "x\ny") == b"event: ping\ndata: x\ndata: y\n\n"


def test_the_recorder_knows_it_by_its_content_type() -> None:
    assert stream_framing("application/x-ndjson") is NDJSON
    assert stream_framing("application/json") is None
