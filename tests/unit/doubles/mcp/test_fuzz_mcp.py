"""The MCP double's messages, fuzzed (issue #33): Hypothesis draws JSON-RPC messages
(every method the double and the SDK know and some they do not, ids and params of every
JSON type, batches, JSON that is not JSON-RPC, bytes that are not JSON) and posts each to a
served double (HTTP), and feeds a run of them to one stdio server. Over HTTP each gets an
answer below 500 (the script has no server faults) and the double serves on; over stdio the
server answers a ping after all of them, and every line it wrote is JSON. Derandomized (the
suite's profile), a small ``max_examples``: the slow tier runs it."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_mcp_stdio import INIT, exchange, line

from _tls import shared_tls
from stuntset.doubles.mcp import McpDouble
from stuntset.script import Script, ToolCall, ToolResult, Turn

pytestmark = [pytest.mark.slow, pytest.mark.real_time, pytest.mark.timeout(120)]

#: Every tool call answered, as often as it comes.
SCRIPT = Script(turns=(Turn(steps=(ToolCall("t"), ToolResult("ok")), times=10**6),))
METHODS = [
    "initialize",
    "notifications/initialized",
    "tools/call",
    "tools/list",
    "ping",
    "resources/list",
    "prompts/get",
    "logging/setLevel",
    "completion/complete",
    "bogus",
    "",
]
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**20), 10**20),
        st.sampled_from([2**63, 10**400]),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
        st.sampled_from(["", "\x00", "\ud800", "x" * 3000]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
params = st.one_of(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["t", "nope"]) | values},
        optional={"arguments": values, "_meta": values},
    ),
    st.fixed_dictionaries(
        {
            "protocolVersion": st.sampled_from(["2025-11-25", "2024-11-05", "1"]) | values,
            "capabilities": values,
            "clientInfo": values,
        }
    ),
    values,
)
requests = st.builds(
    lambda method, ident, body, extra: {
        "jsonrpc": "2.0",
        "method": method,
        **ident,
        **body,
        **extra,
    },
    st.sampled_from(METHODS),
    st.one_of(st.just({}), st.builds(lambda i: {"id": i}, st.integers(0, 9) | values)),
    st.one_of(st.just({}), st.builds(lambda p: {"params": p}, params)),
    st.dictionaries(st.sampled_from(["jsonrpc", "result", "error", "x"]), values, max_size=1),
)


def encoded(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8", "surrogatepass")


bodies = st.one_of(
    requests.map(encoded),
    requests.map(encoded),
    st.lists(requests, min_size=1, max_size=3).map(encoded),  # a batch
    values.map(encoded),
    st.sampled_from([b"", b"{", b"[" * 5000, b"\xff\xfe", b'{"jsonrpc": "2.0", "method"']),
)


@pytest.fixture
def served() -> Iterator[tuple[McpDouble, str]]:
    double = McpDouble(SCRIPT)
    server = double.serve_http()
    yield double, server.url
    double.close()


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies)
def test_every_generated_post_gets_an_answer_below_500(
    served: tuple[McpDouble, str], body: bytes
) -> None:
    _, url = served
    with httpx2.Client(headers=HEADERS, verify=shared_tls(), timeout=30) as client:
        response = client.post(url, content=body)
        assert response.status_code < 500, (body[:300], response.status_code, response.text[:300])
        alive = client.post(
            url,
            content=encoded(
                {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "t"}}
            ),
        )
    assert alive.status_code < 500  # the double serves on


def fresh_pipes() -> tuple[BinaryIO, BinaryIO, BinaryIO, BinaryIO]:
    """(server stdin, client writes), (client reads, server stdout), as ``pipes`` has them."""
    r_in, w_in = os.pipe()
    r_out, w_out = os.pipe()
    return (
        os.fdopen(r_in, "rb"),
        os.fdopen(w_in, "wb", buffering=0),
        os.fdopen(r_out, "rb"),
        os.fdopen(w_out, "wb", buffering=0),
    )


@settings(max_examples=12, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(bodies, min_size=1, max_size=6))
def test_a_stdio_server_answers_a_ping_after_any_run_of_generated_lines(
    tmp_path: Path, lines: list[bytes]
) -> None:
    sent = [INIT, *(b.replace(b"\n", b" ") + b"\n" for b in lines)]
    sent.append(line({"jsonrpc": "2.0", "id": "last-ping", "method": "ping"}))
    pipes = fresh_pipes()
    try:
        out = anyio.run(lambda: exchange(pipes, tmp_path, SCRIPT, *sent, until=b'"id":"last-ping"'))
    finally:
        for file in pipes:
            if not file.closed:
                file.close()
    assert b'"id":"last-ping"' in out, out[-500:]  # it served on to the last line
    for written in out.splitlines():
        assert isinstance(json.loads(written), dict | list), written[:200]
