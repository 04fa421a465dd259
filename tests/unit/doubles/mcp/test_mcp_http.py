"""The HTTP layer of the MCP double seen raw (what a client below the SDK gets): statuses,
retry-after, SSE bodies of the faults, and requests that are not JSON-RPC."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from stuntset.doubles.mcp import McpDouble
from stuntset.script import (
    Garbage,
    HttpError,
    OutOfOrder,
    Overloaded,
    RateLimit,
    Script,
    Stall,
    ToolCall,
)

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
    with httpx2.Client(headers=HEADERS) as client:
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
    with httpx2.Client(headers=HEADERS) as client:
        junk = client.post(url, json=call("junk"))
        stray = client.post(url, json=call("stray", 9))
    assert junk.headers["content-type"] == "text/event-stream"
    assert junk.content == Garbage().payload()
    assert b'"id":"stuntset-out-of-order-9"' in stray.content


def test_a_stalled_call_holds_its_response_until_the_client_gives_up(
    served: tuple[McpDouble, str],
) -> None:
    double, url = served
    timeout = httpx2.Timeout(5, read=0.3)
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
    with httpx2.Client(headers=HEADERS) as client:
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
