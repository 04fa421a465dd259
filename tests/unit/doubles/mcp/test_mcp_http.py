"""The HTTP layer of the MCP double seen raw (what a client below the SDK gets): statuses,
retry-after, SSE bodies of the faults, and requests that are not JSON-RPC."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest

from _tls import shared_tls
from stuntset.doubles.mcp import McpDouble
from stuntset.script import (
    Delay,
    Exit,
    Garbage,
    HttpError,
    OutOfOrder,
    Overloaded,
    RateLimit,
    Script,
    Stall,
    StreamCut,
    ToolCall,
)
from stuntset.waiting import wait_for

pytestmark = pytest.mark.real_time
SCRIPT = Script.of(
    [ToolCall("limit"), RateLimit(retry_after=2)],
    [ToolCall("busy"), Overloaded()],
    [ToolCall("teapot"), HttpError(418)],
    [ToolCall("junk"), Garbage()],
    [ToolCall("stray"), OutOfOrder()],
    [ToolCall("wait"), Stall()],
)


@pytest.fixture
def served() -> Iterator[tuple[McpDouble, str]]:
    double = McpDouble(SCRIPT)
    server = double.serve_http()
    yield double, server.url
    double.close()


def call(tool: str, ident: int = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": {"name": tool}}


HEADERS = {"accept": "application/json, text/event-stream"}


def test_http_faults_are_statuses_with_json_rpc_errors(served: tuple[McpDouble, str]) -> None:
    double, url = served
    with httpx2.Client(headers=HEADERS, verify=shared_tls()) as client:
        limited = client.post(url, json=call("limit"))
        busy = client.post(url, json=call("busy"))
        teapot = client.post(url, json=call("teapot"))
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "2")
    assert limited.json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32603, "message": "Rate limit reached. Please try again later."},
    }
    assert (busy.status_code, busy.json()["error"]["message"]) == (503, "Overloaded")
    assert (teapot.status_code, teapot.json()["error"]["message"]) == (418, "HTTP 418")
    assert [c.outcome for c in double.tool_calls()] == [
        "fault:rate_limit",
        "fault:overloaded",
        "fault:http_error",
    ]


def test_garbage_and_a_stray_response_arrive_in_the_event_stream(
    served: tuple[McpDouble, str],
) -> None:
    _, url = served
    with httpx2.Client(headers=HEADERS, verify=shared_tls()) as client:
        junk = client.post(url, json=call("junk"))
        stray = client.post(url, json=call("stray", 9))
    assert junk.headers["content-type"] == "text/event-stream"
    assert junk.content == Garbage().payload()
    assert b'"id":"stuntset-out-of-order-9"' in stray.content


@pytest.mark.slow
def test_a_stalled_call_holds_its_response_until_the_client_gives_up(
    served: tuple[McpDouble, str],
) -> None:
    double, url = served
    # real time: the response headers must arrive within the read timeout even on a loaded
    # machine, so it is wide (the stalled body then takes it in full)
    timeout = httpx2.Timeout(5, read=1.0)
    with (
        httpx2.Client(headers=HEADERS, timeout=timeout) as client,
        client.stream("POST", url, json=call("wait")) as response,
    ):
        assert response.status_code == 200
        with pytest.raises(httpx2.ReadTimeout):
            response.read()
    assert double.tool_calls("wait")[0].outcome == "fault:stall"


def test_what_is_not_json_rpc_is_recorded_and_left_to_the_sdk(
    served: tuple[McpDouble, str],
) -> None:
    double, url = served
    with httpx2.Client(headers=HEADERS, verify=shared_tls()) as client:
        broken = client.post(
            url, content=b"{not json", headers={"content-type": "application/json"}
        )
        elsewhere = client.get(url.replace("/mcp", "/other"))
        listing = client.get(url)
    assert broken.status_code == 400
    assert elsewhere.status_code == 404
    assert listing.status_code >= 400  # a GET stream needs a session
    assert [(c.method, c.outcome, c.params) for c in double.calls] == [
        (None, "unparsed", "{not json")
    ]


def test_in_process_a_dropped_connection_ends_the_body_early() -> None:
    # no uvicorn below (an ASGI transport): no socket to drop, so the body just ends
    double = McpDouble(Script.of([ToolCall("crash"), Exit()], [ToolCall("cut"), StreamCut()]))
    server = double.serve_http()

    async def post_both() -> list[httpx2.Response]:
        transport = httpx2.ASGITransport(server.app)
        async with httpx2.AsyncClient(transport=transport, headers=HEADERS) as client:
            return [
                await client.post("http://127.0.0.1/mcp", json=call(t)) for t in ("crash", "cut")
            ]

    try:
        responses = anyio.run(post_both)
        outcomes = [c.outcome for c in double.tool_calls()]
    finally:
        double.close()
    for response in responses:
        assert (response.status_code, response.content) == (200, b"")
        assert response.headers["content-type"] == "text/event-stream"
    assert outcomes == ["fault:exit", "fault:stream_cut"]


def test_a_body_sent_in_chunks_is_read_whole_and_a_delay_comes_before_the_fault() -> None:
    double = McpDouble(Script.of([ToolCall("teapot"), Delay(0.05), HttpError(418)]))
    body = json.dumps(call("teapot")).encode()

    def chunked() -> Iterator[bytes]:  # no content-length: sent chunked, read in pieces
        yield body[:10]
        yield body[10:]

    # tests real time: the scripted 0.05 s delay before the fault
    with (
        double.serve_http() as server,
        httpx2.Client(headers=HEADERS, verify=shared_tls()) as client,
    ):
        started = time.monotonic()
        response = client.post(
            server.url, content=chunked(), headers={"content-type": "application/json"}
        )
        assert time.monotonic() - started >= 0.05
    assert (response.status_code, response.json()["id"]) == (418, 7)
    assert [c.outcome for c in double.tool_calls("teapot")] == ["fault:http_error"]
    with pytest.raises(httpx2.ConnectError):  # leaving the with block stopped the server
        httpx2.post(server.url, json=call("teapot"))
    double.close()


def test_a_client_gone_before_its_body_ended_is_recorded_as_unparsed() -> None:
    double = McpDouble(SCRIPT)
    server = double.serve_http()
    try:
        with socket.create_connection((server.host, server.port)) as raw:
            raw.sendall(
                b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                b'content-length: 100\r\n\r\n{"jsonrpc": "2.0"'
            )
        calls = wait_for(lambda: double.calls, message="the cut request to be journaled")
    finally:
        double.close()
    assert [(c.method, c.outcome, c.params) for c in calls] == [
        (None, "unparsed", '{"jsonrpc": "2.0"')
    ]


# --- refused before anything is read, journaled or played (issue #33) -------------------


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"host": "attacker.example"}, 421),  # DNS rebinding: a name resolving to 127.0.0.1
        ({"host": "attacker.example:8000"}, 421),
        ({"host": "127.0.0.2"}, 421),
        ({"origin": "http://attacker.example"}, 403),  # another site's page
        ({"origin": "null"}, 403),
        ({"origin": "http://localhost.attacker.example:80"}, 403),
    ],
)
def test_a_foreign_host_or_origin_is_refused_and_plays_no_turn(
    served: tuple[McpDouble, str], headers: dict[str, str], status: int
) -> None:
    double, url = served
    with httpx2.Client(headers=HEADERS, verify=shared_tls()) as client:
        refused = client.post(url, json=call("teapot"), headers=headers)
        assert refused.status_code == status
        assert double.calls == []  # nothing journaled: the scripted turn is still there
        played = client.post(url, json=call("limit"))
    assert played.status_code == 429  # the first scripted turn, not consumed by the refusal


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]", "127.0.0.1:1", "localhost:65535"]
)
def test_loopback_hosts_and_origins_are_answered(served: tuple[McpDouble, str], host: str) -> None:
    double, url = served
    headers = {"host": host, "origin": f"http://{host}"}
    with httpx2.Client(headers=HEADERS, verify=shared_tls()) as client:
        response = client.post(url, json=call("limit"), headers=headers)
    assert response.status_code == 429
    assert [c.outcome for c in double.tool_calls("limit")] == ["fault:rate_limit"]


def test_foreign_is_decided_by_the_host_name_for_every_generated_host() -> None:
    from stuntset.doubles.mcp.http import LOOPBACK_HOSTS, foreign

    names = ["127.0.0.1", "localhost", "[::1]", "example.com", "127.0.0.1.nip.io", "[::2]", "x"]
    for name in names:
        for port in ("", ":0", ":8080"):
            host = name + port
            loopback = name in LOOPBACK_HOSTS
            assert (foreign({"host": host}, LOOPBACK_HOSTS) is None) == loopback, host
            assert foreign({"host": host}, None) is None, host  # --allow-remote: any Host
            same = {"host": host, "origin": f"http://{host}"}
            assert foreign(same, None) is None, host
            other = {"host": host, "origin": "http://elsewhere.example"}
            assert foreign(other, None) == (403, "Invalid Origin header"), host
    assert foreign({}, None) == (421, "Missing Host header")


def test_a_body_over_the_cap_is_a_413_without_reading_it() -> None:
    double = McpDouble(SCRIPT)
    server = double.serve_http()
    app = server.app
    app.max_body = 10_000
    taken = 0

    async def receive() -> dict[str, Any]:  # 200 MB if read whole, in 1 kB chunks
        nonlocal taken
        taken += 1
        return {"type": "http.request", "body": b" " * 1000, "more_body": taken < 200_000}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    def scope(length: str | None) -> dict[str, Any]:
        headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")]
        if length is not None:
            headers.append((b"content-length", length.encode()))
        return {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}

    try:
        anyio.run(app, scope("200000000"), receive, send)
        assert (sent[0]["status"], taken) == (413, 0)  # declared: refused before reading
        sent.clear()
        anyio.run(app, scope(None), receive, send)  # chunked: read up to the cap, no further
        assert sent[0]["status"] == 413
        assert taken == 11
        with httpx2.Client(
            headers=HEADERS, verify=shared_tls()
        ) as client:  # and over a real socket
            big = client.post(
                server.url, content=b" " * 20_000, headers={"content-type": "application/json"}
            )
        assert big.status_code == 413
        assert double.calls == []  # nothing journaled
    finally:
        double.close()


@pytest.mark.parametrize("params", [[1, 2], "name", 3, True])
def test_non_object_params_of_a_tool_call_are_a_json_rpc_error_not_a_500(
    served: tuple[McpDouble, str], params: Any
) -> None:
    double, url = served
    message = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params}
    with httpx2.Client(headers=HEADERS, verify=shared_tls()) as client:
        response = client.post(url, json=message)
        assert response.status_code < 500, response.text
        played = client.post(url, json=call("limit"))
    assert played.status_code == 429  # no scripted turn consumed
    assert [c.outcome for c in double.tool_calls()][:1] == ["invalid_params"]


def closed_after(sock: socket.socket, limit: float) -> float:
    """Seconds until the server closes ``sock`` (reading until EOF, at most ``limit``)."""
    started = time.monotonic()
    sock.settimeout(limit)
    while sock.recv(4096):
        pass
    return time.monotonic() - started


@pytest.mark.slow  # three deadlines of 0.2 s, waited out for real
def test_a_half_sent_request_head_is_closed_at_the_header_deadline() -> None:
    # issue #33: a client that sent half a request header held its connection forever
    double = McpDouble(SCRIPT)
    server = double.serve_http(header_timeout=0.2)
    try:
        host, port = server.host, server.port
        with socket.create_connection((host, port)) as half:
            half.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty")
            assert closed_after(half, 10) < 5  # closed by the server, not our timeout
        with socket.create_connection((host, port)) as silent:  # nothing sent at all
            assert closed_after(silent, 10) < 5
        with socket.create_connection((host, port)) as whole:  # a whole request is answered
            whole.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            whole.settimeout(10)
            assert whole.recv(4096).startswith(b"HTTP/1.1 ")
            # ... and its next request's head is due within the deadline again
            whole.sendall(b"GET /mcp HTTP/1.1\r\nHo")
            assert closed_after(whole, 10) < 5
        assert [call.method for call in double.calls] == []  # nothing half-sent was played
    finally:
        double.close()


@pytest.mark.slow  # a 0.6 s reply
def test_a_request_whose_head_arrived_outlives_the_header_deadline() -> None:
    double = McpDouble(Script.of([ToolCall("wait"), Delay(0.6), HttpError(418)]))
    server = double.serve_http(header_timeout=0.2)
    try:
        with httpx2.Client(verify=shared_tls()) as client:
            response = client.post(server.url, json=call("wait"), headers=HEADERS, timeout=10)
        assert response.status_code == 418  # answered after 0.6 s: past the head's deadline
    finally:
        double.close()


def test_a_body_nested_too_deep_is_the_sdks_parse_error_not_a_500(
    served: tuple[McpDouble, str],
) -> None:
    # issue #33 (found by tests/unit/doubles/mcp/test_fuzz_mcp.py): the double's own decode
    # raised RecursionError before the SDK saw the body: a 500 and a traceback in the log
    double, url = served
    with httpx2.Client(headers=HEADERS, verify=shared_tls()) as client:
        deep = client.post(
            url, content=b"[" * 100_000, headers={"content-type": "application/json"}
        )
        assert 400 <= deep.status_code < 500, deep.text[:200]
        assert client.post(url, json=call("limit")).status_code == 429  # served on
    assert [c.outcome for c in double.tool_calls()] == ["fault:rate_limit"]
