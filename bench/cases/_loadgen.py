"""A light raw-socket HTTP/1.1 load generator: N keep-alive connections, each sending the same
pre-encoded request and reading one whole response before the next (closed loop), all on one
thread with ``selectors`` — the cheapest honest client, so the server's share shows.

A response is read to its end: a ``Content-Length`` body, or a chunked one (a stream: every
chunk's framing checked, up to the terminating ``0`` chunk). ``run_load`` counts the chunks
of streamed responses (``LoadResult.chunks``), so a case can tell how many events it got.
"""

from __future__ import annotations

import selectors
import socket
import time
from dataclasses import dataclass

__all__ = ["LoadResult", "run_load"]


@dataclass
class LoadResult:
    requests: int
    seconds: float
    latencies: list[float]  # seconds, one per measured request
    #: Body chunks of the measured chunked responses (0 for ``Content-Length`` ones).
    chunks: int = 0

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class _Conn:
    __slots__ = ("buffer", "chunked", "chunks", "need", "sent_at", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""
        #: ``Content-Length``: where the response ends; chunked: where the next chunk's size
        #: line starts; -1 before the head is in
        self.need = -1
        self.chunked = False
        self.chunks = 0
        self.sent_at = 0.0


def _complete(conn: _Conn) -> bool:
    """Whether ``conn.buffer`` holds a whole response (then it is consumed)."""
    buffer = conn.buffer
    if conn.need < 0:
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            return False
        head = buffer[:end].lower()
        conn.chunks = 0
        at = head.find(b"content-length:")
        if at >= 0:
            line_end = head.find(b"\r\n", at)
            conn.need = end + 4 + int(head[at + 15 : line_end if line_end >= 0 else None])
            conn.chunked = False
        elif b"\r\ntransfer-encoding: chunked" in head:
            conn.need = end + 4
            conn.chunked = True
        else:
            raise RuntimeError(f"neither content-length nor chunked in {head[:200]!r}")
    if not conn.chunked:
        if len(buffer) < conn.need:
            return False
        conn.buffer = buffer[conn.need :]
        conn.need = -1
        return True
    at = conn.need
    while True:  # chunk by chunk: size line, data, CRLF
        line_end = buffer.find(b"\r\n", at)
        if line_end < 0:
            break
        size = int(buffer[at:line_end], 16)
        after = line_end + 2 + size + 2
        if len(buffer) < after:
            break
        if buffer[after - 2 : after] != b"\r\n":
            raise RuntimeError(f"a chunk not ended by CRLF: {buffer[at : after + 20]!r}")
        if size == 0:
            conn.buffer = buffer[after:]
            conn.need = -1
            return True
        conn.chunks += 1
        at = after
    conn.need = at
    return False


def run_load(
    port: int, request: bytes, *, clients: int, seconds: float, warmup: float = 0.3
) -> LoadResult:
    """Keep ``clients`` connections busy for ``warmup`` + ``seconds``; measure the latter."""
    selector = selectors.DefaultSelector()
    conns = []
    for _ in range(clients):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        conn = _Conn(sock)
        conns.append(conn)
        selector.register(sock, selectors.EVENT_READ, conn)
    now = time.perf_counter()
    for conn in conns:
        conn.sent_at = now
        conn.sock.send(request)
    start = now + warmup
    stop = start + seconds
    latencies: list[float] = []
    count = 0
    chunks = 0
    try:
        while True:
            for key, _ in selector.select(1.0):
                conn = key.data
                data = conn.sock.recv(262144)
                if not data:
                    raise RuntimeError("the server closed a connection")
                conn.buffer += data
                while _complete(conn):
                    done = time.perf_counter()
                    if conn.sent_at >= start and done <= stop:
                        latencies.append(done - conn.sent_at)
                        count += 1
                        chunks += conn.chunks
                    conn.sent_at = done
                    conn.sock.send(request)
            if time.perf_counter() > stop:
                break
    finally:
        for conn in conns:
            selector.unregister(conn.sock)
            conn.sock.close()
        selector.close()
    return LoadResult(count, seconds, latencies, chunks)
