"""An incremental server-sent-events parser (the WHATWG algorithm, as both SDKs implement it):
bytes in, ``(event, data)`` pairs out, whatever way the bytes were split."""

from __future__ import annotations

__all__ = ["SseParser", "parse_sse"]


class SseParser:
    """Feed bytes as they arrive; each complete event comes out once.

    Lines end with LF, CRLF or CR; ``event:`` names the event, ``data:`` lines are joined with
    ``\\n``, ``:`` starts a comment, one space after the colon is dropped, and an empty line
    dispatches (nothing, if no data was buffered). ``id:``/``retry:`` are ignored, as the SDKs do.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._event: str | None = None
        self._data: list[str] = []
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        out: list[tuple[str | None, str]] = []
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CRLF split across chunks
        self._pending_cr = False
        self._buffer += chunk
        while True:
            cut = _line_end(self._buffer)
            if cut is None:
                return out
            line, end = cut
            if self._buffer[line:end] == b"\r" and end == len(self._buffer):
                self._pending_cr = True
            raw = self._buffer[:line]
            self._buffer = self._buffer[end:]
            self._line(raw.decode("utf-8", errors="replace"), out)

    def close(self) -> list[tuple[str | None, str]]:
        """End of stream: a final unterminated line is processed; an undispatched event is
        dropped (as a client would)."""
        out: list[tuple[str | None, str]] = []
        if self._buffer:
            self._line(self._buffer.decode("utf-8", errors="replace"), out)
            self._buffer = b""
        return out

    def _line(self, line: str, out: list[tuple[str | None, str]]) -> None:
        if not line:
            if self._data:
                out.append((self._event, "\n".join(self._data)))
            self._event, self._data = None, []
            return
        if line.startswith(":"):
            return
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)


def _line_end(buffer: bytes) -> tuple[int, int] | None:
    """(end of the line's content, start of the next line) of the first complete line."""
    lf = buffer.find(b"\n")
    cr = buffer.find(b"\r")
    if cr == -1 and lf == -1:
        return None
    if cr == -1 or (lf != -1 and lf < cr):
        return lf, lf + 1
    if cr + 1 < len(buffer) and buffer[cr + 1] == 0x0A:
        return cr, cr + 2
    return cr, cr + 1


def parse_sse(data: bytes) -> list[tuple[str | None, str]]:
    """Every event in a complete SSE body."""
    parser = SseParser()
    return parser.feed(data) + parser.close()
