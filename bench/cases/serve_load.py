"""Load cases: ``stuntset serve`` under 1, 50 and 200 light raw-socket clients (keep-alive,
closed loop: each sends the next request when its answer is in), against the floor: a
minimal uvicorn (httptools) + raw ASGI app answering the same bytes; and the same for a
streamed chat turn under 1, 100 and 1,000 clients (each reads its stream to the terminating
chunk), the floor streaming the same events, one ``http.response.body`` send per event. Both
servers are subprocesses (the client must not share their GIL); subject and floor alternate
round by round so machine noise lands on both."""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.cases._loadgen import LoadResult, run_load
from bench.runner import Case, Result

BODY = json.dumps({"model": "gpt-bench", "messages": [{"role": "user", "content": "hi"}]}).encode()
REQUEST = (
    b"POST /openai/v1/chat/completions HTTP/1.1\r\nhost: stand-in\r\n"
    b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(BODY), BODY)
)
STREAM_BODY = json.dumps(
    {"model": "gpt-bench", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
).encode()
STREAM_REQUEST = (
    b"POST /openai/v1/chat/completions HTTP/1.1\r\nhost: stand-in\r\n"
    b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
    % (len(STREAM_BODY), STREAM_BODY)
)
ROUNDS = 3
SECONDS = 2.0
#: Headers uvicorn adds or frames itself (the floor's uvicorn does the same).
_UVICORN_HEADERS = (b"date", b"server", b"transfer-encoding", b"content-length")


def _start(argv: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    line = process.stdout.readline().decode().strip()
    return process, int(line.split("://", 1)[1].split(":", 1)[1].split("/", 1)[0])


def _response(port: int, request: bytes) -> tuple[bytes, bytes]:
    """The head and the raw body (chunk framing and all) ``stuntset serve`` answers."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        lowered = head.lower()
        if b"\r\ntransfer-encoding: chunked" in lowered:
            while not body.endswith(b"\r\n0\r\n\r\n"):
                body += sock.recv(65536)
            return head, body
        length = next(
            int(line.split(b":", 1)[1])
            for line in lowered.split(b"\r\n")
            if line.startswith(b"content-length:")
        )
        while len(body) < length:
            body += sock.recv(65536)
    return head, body


def _events(body: bytes) -> list[bytes]:
    """A chunked body's chunks (one per event: the double writes each event by itself)."""
    events, at = [], 0
    while True:
        line_end = body.index(b"\r\n", at)
        size = int(body[at:line_end], 16)
        if size == 0:
            return events
        events.append(body[line_end + 2 : line_end + 2 + size])
        at = line_end + 2 + size + 2


def _canned(port: int, streamed: bool) -> list[str]:
    """The floor's command line, serving what ``stuntset serve`` answers."""
    canned = Path(tempfile.mkdtemp(prefix="stuntset-bench-"))
    if not streamed:
        (canned / "answer.json").write_bytes(_response(port, REQUEST)[1])
        return [str(canned / "answer.json")]
    head, body = _response(port, STREAM_REQUEST)
    headers = [
        [name.decode("latin-1"), value.strip().decode("latin-1")]
        for name, _, value in (line.partition(b":") for line in head.split(b"\r\n")[1:])
        if name.lower() not in _UVICORN_HEADERS
    ]
    events = [event.decode("latin-1") for event in _events(body)]
    (canned / "events.json").write_text(json.dumps({"headers": headers, "events": events}))
    return ["--stream", str(canned / "events.json")]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(clients: int, *, streamed: bool = False) -> dict[str, Result]:
    request = STREAM_REQUEST if streamed else REQUEST
    serve, serve_port = _start([sys.executable, "-m", "stuntset.cli", "serve"])
    floor_args = _canned(serve_port, streamed)
    floor, floor_port = _start([sys.executable, "-m", "bench.cases._floor_server", *floor_args])
    samples: dict[str, list[float]] = {
        "stuntset serve req/s": [],
        "floor req/s": [],
        "stuntset serve p99 ms": [],
        "floor p99 ms": [],
        "stuntset serve CPU µs/req": [],
        "floor CPU µs/req": [],
    }
    if streamed:
        samples["stuntset serve chunks/response"] = []
        samples["floor chunks/response"] = []
    try:
        for round_index in range(ROUNDS):
            order = [("stuntset serve", serve, serve_port), ("floor", floor, floor_port)]
            for name, process, port in order[:: 1 if round_index % 2 == 0 else -1]:
                before = _cpu_seconds(process.pid)
                result: LoadResult = run_load(port, request, clients=clients, seconds=SECONDS)
                cpu = _cpu_seconds(process.pid) - before
                samples[f"{name} req/s"].append(result.throughput)
                samples[f"{name} p99 ms"].append(result.percentile(0.99) * 1000)
                samples[f"{name} CPU µs/req"].append(cpu / max(1, result.requests) * 1e6)
                if streamed:
                    samples[f"{name} chunks/response"].append(
                        result.chunks / max(1, result.requests)
                    )
    finally:
        for process in (serve, floor):
            process.send_signal(signal.SIGINT)
            process.wait(30)
    return {name: Result(name, values) for name, values in samples.items()}


def _verdict(results: dict[str, Result]) -> tuple[bool, str]:
    throughput = statistics.median(results["stuntset serve req/s"].samples) / statistics.median(
        results["floor req/s"].samples
    )
    p99 = statistics.median(results["stuntset serve p99 ms"].samples) / statistics.median(
        results["floor p99 ms"].samples
    )
    cpu = statistics.median(results["stuntset serve CPU µs/req"].samples) / statistics.median(
        results["floor CPU µs/req"].samples
    )
    ok = throughput >= 0.9 and p99 <= 2.0
    return ok, f"throughput {throughput:.2f}× floor, p99 {p99:.2f}× floor (CPU/req {cpu:.2f}×)"


def _case(clients: int, *, streamed: bool = False) -> Case:
    what = "streamed chat turn (10 events)" if streamed else "non-streamed chat turn"
    notes = [
        f"{ROUNDS} alternating rounds of {SECONDS:.0f} s each; medians of rounds; CPU is the "
        "server process's user+system time per request"
    ]
    if streamed:
        notes.append(
            "each client reads its stream to the terminating chunk; the floor sends one "
            "http.response.body per event (the same events, the last one ending the response)"
        )
    return Case(
        name=f"serve_{'stream' if streamed else 'load'}_{clients}",
        title=f"stuntset serve, {clients} light raw-socket client(s), {what}",
        variants=[],
        budget="throughput ≥ 0.9× floor; p99 ≤ 2× floor",
        verdict=_verdict,
        unit="",
        custom=lambda: _measure(clients, streamed=streamed),
        notes=notes,
    )


def serve_load_1() -> Case:
    return _case(1)


def serve_load_50() -> Case:
    return _case(50)


def serve_load_200() -> Case:
    return _case(200)


def serve_stream_1() -> Case:
    return _case(1, streamed=True)


def serve_stream_100() -> Case:
    return _case(100, streamed=True)


def serve_stream_1000() -> Case:
    return _case(1000, streamed=True)
