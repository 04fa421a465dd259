"""Newline-delimited JSON streams (``application/x-ndjson``: Ollama): one JSON value a line,
each line a frame, whatever way the bytes were split."""

from __future__ import annotations

from ._spec import StreamFraming

__all__ = ["NDJSON", "NdjsonParser"]


class NdjsonParser:
    """Feed bytes as they arrive; each complete non-empty line comes out once, as
    ``(None, line)`` (a line has no event name). Lines end with LF (a CR before it is kept
    off)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        return [(None, text) for text in map(_text, lines) if text]

    def close(self) -> list[tuple[str | None, str]]:
        rest, self._buffer = _text(self._buffer), b""
        return [(None, rest)] if rest else []


def _text(line: bytes) -> str:
    return line.rstrip(b"\r").decode("utf-8", errors="replace").strip()


def _write(event: str | None, data: str) -> bytes:
    return data.encode() + b"\n"


#: One JSON value a line.
NDJSON = StreamFraming("ndjson", "application/x-ndjson", NdjsonParser, writer=_write)
