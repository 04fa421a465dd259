"""A 50 MB cassette's page does not stall the daemon's other clients (issue #33): the console
renders on a worker thread, a bounded page at a time, so the daemon's event loop — which
every client of the daemon shares — keeps answering while the page is made.

Measured against a real ``stuntset console`` process (its own interpreter, as a user runs
it): one client calls the daemon's WebSocket API over and over (``create_task``, a round
trip through the event loop and the session store) and a ``GET /health`` on a kept-alive
connection, while another fetches the cassette's first page (which reads the whole 50 MB
file) and then its other pages. Every latency of the first client while the pages load
counts. Before the fix one 10 MB page stalled every client for 3.7 s.
"""

from __future__ import annotations

import http.client
import re
import statistics
import threading
import time
from pathlib import Path

import httpx
import msgspec
import pytest
from test_console_commands import command

from stuntset.runtime.client import DaemonClient
from stuntset.runtime.protocol import DaemonInfo

pytestmark = pytest.mark.slow

SIZE = 50 * 1024 * 1024


def write_big_cassette(path: Path) -> int:
    """A cassette of ``SIZE`` bytes or more, written line by line: streamed chat interactions
    of 2,000 frames (about 170 KB a line), every 25th of 40,000 (3.4 MB a line)."""
    encode = msgspec.json.Encoder(order="sorted").encode
    header = {
        "format": "stuntset-cassette",
        "kind": "header",
        "version": 2,
        "wires": ["openai-chat"],
    }
    frames = [
        {"data": f'{{"choices":[{{"delta":{{"content":"word {i} "}},"index":0}}]}}', "t": i / 1000}
        for i in range(40_000)
    ]
    written = 0
    with path.open("wb") as file:
        file.write(encode(header) + b"\n")
        number = 0
        while written < SIZE:
            number += 1
            line = encode(
                {
                    "id": f"i-{number}",
                    "kind": "interaction",
                    "wire": "openai-chat",
                    "request": {
                        "method": "POST",
                        "path": "/v1/chat/completions",
                        "body": {
                            "model": "m",
                            "stream": True,
                            "messages": [{"role": "user", "content": f"q {number}"}],
                        },
                    },
                    "response": {
                        "status": 200,
                        "headers": {"content-type": "text/event-stream"},
                        "frames": frames if number % 25 == 0 else frames[:2000],
                    },
                }
            )
            file.write(line + b"\n")
            written += len(line) + 1
    return number


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@pytest.mark.timeout(300)
def test_a_50_mb_cassette_page_leaves_another_clients_p99_under_50_ms(tmp_path: Path) -> None:
    folder = tmp_path / "cassettes"
    folder.mkdir()
    interactions = write_big_cassette(folder / "big.jsonl")
    with command("console", "--db", str(tmp_path / "host.db"), "--cassettes", str(folder)) as p:
        assert p.stdout is not None
        found = re.search(
            r"http://127\.0\.0\.1:(\d+)/console/\?token=([\w-]+)", p.stdout.readline()
        )
        assert found, "no console address"
        port, token = int(found.group(1)), found.group(2)
        info = DaemonInfo(url=f"http://127.0.0.1:{port}", port=port, token=token, pid=p.pid)
        latencies: list[float] = []
        done = threading.Event()
        errors: list[BaseException] = []

        def calls(client: DaemonClient, health: http.client.HTTPConnection) -> float:
            """One round of what the other client does, timed: a call and a health check."""
            started = time.perf_counter()
            client.call("create_task", workdir=str(tmp_path))
            health.request("GET", "/health")
            assert health.getresponse().read() == b'{"ok":true}'
            return time.perf_counter() - started

        def other_client() -> None:
            try:
                health = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                with DaemonClient(info) as client:
                    while not done.is_set():
                        latencies.append(calls(client, health))
                health.close()
            except BaseException as error:  # reported by the test
                errors.append(error)

        # the quiet baseline, before the page: the same calls as the other client makes
        with DaemonClient(info) as warm:
            warm_health = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            quiet = [calls(warm, warm_health) for _ in range(200)]
            warm_health.close()
        worker = threading.Thread(target=other_client)
        worker.start()
        try:
            page_url = f"{info.url}/console/cassettes/show"
            started = time.perf_counter()
            first = httpx.get(page_url, params={"name": "big.jsonl", "token": token}, timeout=240)
            first_s = time.perf_counter() - started
            assert first.status_code == 200
            counted = re.search(r"page 1 of (\d+)", first.text)
            assert counted, "one page for the whole cassette"
            pages = int(counted.group(1))
            started = time.perf_counter()
            last = httpx.get(
                page_url, params={"name": "big.jsonl", "page": str(pages), "token": token}
            )
            last_s = time.perf_counter() - started
            assert f"Interaction {interactions}" in last.text
        finally:
            done.set()
            worker.join(60)
    assert not errors, errors
    p99, worst = percentile(latencies, 0.99), max(latencies)
    print(
        f"\n{(folder / 'big.jsonl').stat().st_size / 2**20:.0f} MB, {interactions} interactions: "
        f"first page {first_s:.2f} s ({len(first.content) / 1024:.0f} KB), page {pages} "
        f"{last_s * 1000:.0f} ms; the other client: {len(latencies)} calls, median "
        f"{statistics.median(latencies) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max "
        f"{worst * 1000:.1f} ms (quiet: median {statistics.median(quiet) * 1000:.1f} ms)"
    )
    assert len(first.content) < 1024 * 1024  # a bounded page, not the whole cassette
    assert len(latencies) >= 50, "the other client barely ran while the page loaded"
    # 50 ms on a quiet machine (issue 33); on a loaded one (a busy-loop CI run) the bound is ten
    # times the p99 this machine gives the same calls without the page, so the verdict is the
    # page's, not the load's: a page that held the loop would cost seconds either way
    bound = max(0.050, 10 * percentile(quiet, 0.99))
    assert p99 < bound, (
        f"the other client's p99 {p99 * 1000:.1f} ms while the page loaded "
        f"(bound {bound * 1000:.1f} ms: 50 ms, or 10 x its quiet p99 on a loaded machine)"
    )
