"""`stuntset serve` as a real process among real and bad clients: flat memory, a request
deadline and a connection cap against a slowloris crowd, hang-ups that stop the stream
without a flood of log lines, and a 413 for a body over the limit.

The clients are raw sockets (the cheapest honest client: one keep-alive connection, requests
written whole). Two tests assert bounds the issue asks for (RSS within 10 MiB over 20,000
requests; p99 under 50 ms beside 1,000 half-open connections); they say so where they do.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
REQUEST = (
    b"POST /openai/v1/chat/completions HTTP/1.1\r\nhost: stand-in\r\n"
    b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(BODY), BODY)
)
HALF = b"POST /openai/v1/chat/completions HTTP/1.1\r\nhost: stand-in\r\ncontent-le"


class Served:
    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from stuntset.cli import main; main()", "serve", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.process.stdout is not None
        first = self.process.stdout.readline().decode()
        assert first.startswith("stuntset model double on http://127.0.0.1:"), first
        self.base = first.split(" on ", 1)[1].strip()
        self.port = int(self.base.rsplit(":", 1)[1])

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")  # pragma: no cover

    def stop(self) -> str:
        self.process.send_signal(signal.SIGINT)
        _, err = self.process.communicate(timeout=30)
        return err.decode()


@pytest.fixture
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    server = Served(*getattr(request, "param", ()))
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.stop()


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def exchange(sock: socket.socket, request: bytes = REQUEST) -> tuple[int, bytes]:
    """Send one request; read one Content-Length response (status, body)."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-body"
        body += chunk
    return int(head.split(b" ", 2)[1]), body


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (an end of stream, or a reset when it dropped
    unread bytes); the socket's 20 s timeout fails the test otherwise."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


@pytest.mark.slow
def test_memory_stays_flat_over_20000_requests(served: Served) -> None:
    # the bound is the issue's: RSS within 10 MiB over 20,000 requests after a warm-up that
    # fills the journal (its default keeps the last 1,000)
    sock = connect(served.port)
    for _ in range(3_000):
        assert exchange(sock)[0] == 200
    before = served.rss_kib()
    for _ in range(20_000):
        exchange(sock)
    grown = served.rss_kib() - before
    sock.close()
    assert grown < 10 * 1024, f"RSS grew {grown} KiB over 20,000 requests"


@pytest.mark.slow
def test_a_client_keeps_its_latency_beside_1000_half_open_connections(served: Served) -> None:
    # the bound is the issue's: p99 under 50 ms while 1,000 half-sent requests sit there
    crowd = []
    for _ in range(1_000):
        sock = connect(served.port)
        sock.sendall(HALF)
        crowd.append(sock)
    good = connect(served.port)
    latencies = []
    for _ in range(300):
        start = time.perf_counter()
        assert exchange(good)[0] == 200
        latencies.append(time.perf_counter() - start)
    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99) - 1]
    for sock in crowd:
        sock.close()
    good.close()
    assert p99 < 0.050, f"p99 {p99 * 1000:.1f} ms"


@pytest.mark.slow
@pytest.mark.parametrize(
    "served",
    [
        (
            "--request-timeout",
            "0.2",
        )
    ],
    indirect=True,
    ids=[""],
)
def test_a_request_not_sent_in_time_is_closed(served: Served) -> None:
    with connect(served.port) as slow, connect(served.port) as silent:
        slow.sendall(HALF)
        assert slow.recv(1) == b""  # closed by the server (the socket times out after 20 s)
        assert silent.recv(1) == b""
    assert "2 connection(s) closed for a request not sent in time" in served.stop()


@pytest.mark.parametrize(
    "served",
    [
        (
            "--max-connections",
            "5",
        )
    ],
    indirect=True,
    ids=[""],
)
def test_at_the_cap_a_new_connection_closes_the_oldest_waiting_one(served: Served) -> None:
    crowd = [connect(served.port) for _ in range(5)]
    for sock in crowd:
        sock.sendall(HALF)
    with connect(served.port) as good:
        assert exchange(good)[0] == 200
    assert closed_by_server(crowd[0])
    for sock in crowd:
        sock.close()
    assert "waiting connection(s) closed at the connection cap" in served.stop()


@pytest.mark.parametrize(
    "served",
    [
        (
            "--max-body",
            "1000",
        )
    ],
    indirect=True,
    ids=[""],
)
def test_a_body_over_the_limit_gets_the_providers_413(served: Served) -> None:
    big = {"model": "m", "messages": [{"role": "user", "content": "x" * 2000}]}
    openai = httpx2.post(f"{served.base}/openai/v1/chat/completions", json=big)
    assert openai.status_code == 413
    assert "at most 1000 bytes" in openai.json()["error"]["message"]
    anthropic = httpx2.post(f"{served.base}/anthropic/v1/messages", json=big)
    assert anthropic.json()["error"]["type"] == "request_too_large"

    def chunked() -> Iterator[bytes]:  # no content-length: counted as it arrives
        yield b'{"model": "m", "messages": [{"role": "user", "content": "'
        yield b"x" * 2000
        yield b'"}]}'

    streamed = httpx2.post(f"{served.base}/openai/v1/chat/completions", content=chunked())
    assert streamed.status_code == 413
    small = httpx2.post(f"{served.base}/openai/v1/chat/completions", content=BODY)
    assert small.status_code == 200


def test_a_body_nested_10000_deep_gets_the_providers_400(served: Served) -> None:
    deep = b'{"model": "m", "messages": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    response = httpx2.post(f"{served.base}/openai/v1/chat/completions", content=deep)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_a_hang_up_stops_the_stream_with_no_flood_of_log_lines(tmp_path: Path) -> None:
    long = "x " * 400
    script = tmp_path / "long.toml"
    script.write_text(
        f'[[turns]]\ntimes = 100\nsteps = [{{ text = "{long}", chunks = 400, interval = 0.001 }}]\n'
    )
    server = Served("--script", str(script))
    try:
        stream = json.dumps(
            {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        ).encode()
        request = REQUEST.replace(BODY, stream).replace(
            b"content-length: %d" % len(BODY), b"content-length: %d" % len(stream)
        )
        for _ in range(10):
            sock = connect(server.port)
            sock.sendall(request)
            assert sock.recv(100)
            sock.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
            sock.close()  # a reset: the server's next write fails at once
        still = connect(server.port)
        assert exchange(still)[0] == 200
        still.close()
    finally:
        err = server.stop()
    assert "socket.send() raised exception" not in err
    assert len(err.splitlines()) <= 10, err


@pytest.mark.slow
def test_a_stderr_nobody_reads_does_not_freeze_the_server() -> None:
    # every malformed request is a warning line; 3,000 of them overflow a 64 KiB pipe that
    # is never read, and the server must keep answering (the lines beyond the queue dropped)
    server = Served()
    try:
        for _ in range(3_000):
            with connect(server.port) as bad:
                bad.sendall(b"NOT HTTP AT ALL\r\n\r\n")
                assert bad.recv(12) == b"HTTP/1.1 400"
        with connect(server.port) as good:
            assert exchange(good)[0] == 200
    finally:
        err = server.stop()
    assert "log line(s) dropped (stderr was not being read)" in err


_STREAMED = json.dumps(
    {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
).encode()
#: A streamed request to ``stuck``: its response starts (the head arrives), then stalls.
STUCK = (
    b"POST /scenarios/stuck/openai/v1/chat/completions HTTP/1.1\r\nhost: stand-in\r\n"
    b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(_STREAMED), _STREAMED)
)


@pytest.mark.parametrize("served", [("--max-connections", "2")], indirect=True, ids=[""])
def test_over_the_cap_with_every_request_in_flight_a_new_client_gets_a_503(
    served: Served,
) -> None:
    # issue #33: it got a bare close, which a client cannot tell from a crash
    crowd = [connect(served.port) for _ in range(2)]
    for sock in crowd:
        sock.sendall(STUCK)  # a whole request each, answered never: none is evictable
        sock.recv(1)  # its response has started: the request is in flight
    with connect(served.port) as late:
        data = b""
        while chunk := late.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 503 ")
    assert b"retry-after: 1" in data.lower()
    for sock in crowd:
        sock.close()
    assert "refused at the cap (503)" in served.stop()
