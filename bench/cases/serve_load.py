"""Load cases: ``stuntset serve`` under 1, 50 and 200 light raw-socket clients (keep-alive,
closed loop: each sends the next request when its answer is in), against the floor: a
minimal uvicorn (httptools) + raw ASGI app answering the same bytes. Both servers are
subprocesses (the client must not share their GIL); subject and floor alternate round by
round so machine noise lands on both."""

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
ROUNDS = 3
SECONDS = 2.0


def _start(argv: list[str]) -> tuple[subprocess.Popen[bytes], int]:
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    line = process.stdout.readline().decode().strip()
    return process, int(line.split("://", 1)[1].split(":", 1)[1].split("/", 1)[0])


def _answer(port: int) -> bytes:
    """The body ``stuntset serve`` answers (the floor serves the same bytes)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(REQUEST)
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += sock.recv(65536)
    return body


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(clients: int) -> dict[str, Result]:
    serve, serve_port = _start([sys.executable, "-m", "stuntset.cli", "serve"])
    canned = Path(tempfile.mkdtemp(prefix="stuntset-bench-")) / "answer.json"
    canned.write_bytes(_answer(serve_port))
    floor, floor_port = _start([sys.executable, "-m", "bench.cases._floor_server", str(canned)])
    samples: dict[str, list[float]] = {
        "stuntset serve req/s": [],
        "floor req/s": [],
        "stuntset serve p99 ms": [],
        "floor p99 ms": [],
        "stuntset serve CPU µs/req": [],
        "floor CPU µs/req": [],
    }
    try:
        for round_index in range(ROUNDS):
            order = [("stuntset serve", serve, serve_port), ("floor", floor, floor_port)]
            for name, process, port in order[:: 1 if round_index % 2 == 0 else -1]:
                before = _cpu_seconds(process.pid)
                result: LoadResult = run_load(port, REQUEST, clients=clients, seconds=SECONDS)
                cpu = _cpu_seconds(process.pid) - before
                samples[f"{name} req/s"].append(result.throughput)
                samples[f"{name} p99 ms"].append(result.percentile(0.99) * 1000)
                samples[f"{name} CPU µs/req"].append(cpu / max(1, result.requests) * 1e6)
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
    ok = throughput >= 0.9 and p99 <= 2.0
    return ok, f"throughput {throughput:.2f}× floor, p99 {p99:.2f}× floor"


def _case(clients: int) -> Case:
    return Case(
        name=f"serve_load_{clients}",
        title=f"stuntset serve, {clients} light raw-socket client(s), non-streamed chat turn",
        variants=[],
        budget="throughput ≥ 0.9× floor; p99 ≤ 2× floor",
        verdict=_verdict,
        unit="",
        custom=lambda: _measure(clients),
        notes=[
            f"{ROUNDS} alternating rounds of {SECONDS:.0f} s each; medians of rounds; CPU is the "
            "server process's user+system time per request"
        ],
    )


def serve_load_1() -> Case:
    return _case(1)


def serve_load_50() -> Case:
    return _case(50)


def serve_load_200() -> Case:
    return _case(200)
