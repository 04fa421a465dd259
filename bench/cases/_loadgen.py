"""A light raw-socket HTTP/1.1 load generator: N keep-alive connections, each sending the same
pre-encoded request and reading one ``Content-Length`` response before the next (closed loop),
all on one thread with ``selectors`` — the cheapest honest client, so the server's share shows.
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

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class _Conn:
    __slots__ = ("buffer", "need", "sent_at", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""
        self.need = -1
        self.sent_at = 0.0


def _complete(conn: _Conn) -> bool:
    """Whether ``conn.buffer`` holds a whole response (then it is consumed)."""
    if conn.need < 0:
        end = conn.buffer.find(b"\r\n\r\n")
        if end < 0:
            return False
        head = conn.buffer[:end].lower()
        at = head.find(b"content-length:")
        if at < 0:
            raise RuntimeError(f"no content-length in {head[:200]!r}")
        length = int(head[at + 15 : head.find(b"\r\n", at) if b"\r\n" in head[at:] else None])
        conn.need = end + 4 + length
    if len(conn.buffer) < conn.need:
        return False
    conn.buffer = conn.buffer[conn.need :]
    conn.need = -1
    return True


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
                    conn.sent_at = done
                    conn.sock.send(request)
            if time.perf_counter() > stop:
                break
    finally:
        for conn in conns:
            selector.unregister(conn.sock)
            conn.sock.close()
        selector.close()
    return LoadResult(count, seconds, latencies)
