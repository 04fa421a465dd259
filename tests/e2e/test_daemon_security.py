"""Every refusal of the daemon's guard: Host, Origin, token — checked before a WebSocket is
accepted — and no CORS headers; the token file is the user's only."""

from __future__ import annotations

import base64
import http.client
import json
import os
import stat
from pathlib import Path

import pytest
from websockets.exceptions import InvalidStatus

from stuntset.runtime.client import DaemonClient
from stuntset.runtime.daemon import DaemonHandle


def http_request(
    daemon: DaemonHandle, method: str, path: str, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    """One raw HTTP request with exactly these headers (``Host`` included)."""
    connection = http.client.HTTPConnection("127.0.0.1", daemon.info.port, timeout=5)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def handshake(daemon: DaemonHandle, **headers: str) -> int:
    """The HTTP status a WebSocket handshake to ``/ws`` gets (101 = accepted)."""
    base = {
        "Host": f"127.0.0.1:{daemon.info.port}",
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
        "Sec-WebSocket-Version": "13",
    }
    status, _, _ = http_request(daemon, "GET", "/ws", {**base, **headers})
    return status


def bearer(daemon: DaemonHandle) -> str:
    return f"Bearer {daemon.info.token}"


def test_a_well_formed_handshake_is_accepted(daemon: DaemonHandle) -> None:
    assert handshake(daemon, Authorization=bearer(daemon)) == 101
    own = f"http://localhost:{daemon.info.port}"
    assert handshake(daemon, Authorization=bearer(daemon), Origin=own) == 101


def test_a_dns_rebound_host_is_refused_on_http_and_websocket(daemon: DaemonHandle) -> None:
    evil = f"evil.example:{daemon.info.port}"
    status, _, body = http_request(daemon, "GET", "/health", {"Host": evil})
    assert status == 400
    assert b"is not allowed" in body
    assert handshake(daemon, Host=evil, Authorization=bearer(daemon)) == 403


def test_a_foreign_origin_is_refused_before_the_websocket_is_accepted(
    daemon: DaemonHandle,
) -> None:
    assert handshake(daemon, Authorization=bearer(daemon), Origin="http://evil.example") == 403
    with pytest.raises(InvalidStatus):
        DaemonClient(daemon.info, origin="http://evil.example")


@pytest.mark.parametrize("token", [None, "wrong", ""])
def test_a_missing_or_wrong_token_is_refused(daemon: DaemonHandle, token: str | None) -> None:
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    assert handshake(daemon, **headers) == 403
    with pytest.raises(InvalidStatus):
        DaemonClient(daemon.info, token=token or "wrong")


def test_the_token_may_come_as_a_query_parameter_for_browsers(daemon: DaemonHandle) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", daemon.info.port, timeout=5)
    try:
        connection.request(
            "GET",
            f"/ws?token={daemon.info.token}",
            headers={
                "Upgrade": "websocket",
                "Connection": "Upgrade",
                "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
                "Sec-WebSocket-Version": "13",
            },
        )
        assert connection.getresponse().status == 101
    finally:
        connection.close()


def test_shutdown_needs_the_token_and_the_right_origin(daemon: DaemonHandle) -> None:
    host = {"Host": f"127.0.0.1:{daemon.info.port}", "Content-Length": "0"}
    assert http_request(daemon, "POST", "/shutdown", host)[0] == 401
    evil = {**host, "Authorization": bearer(daemon), "Origin": "http://evil.example"}
    assert http_request(daemon, "POST", "/shutdown", evil)[0] == 403
    # still alive
    status, _, body = http_request(daemon, "GET", "/health", host)
    assert (status, json.loads(body)) == (200, {"ok": True})


def test_no_cors_headers_are_ever_sent(daemon: DaemonHandle) -> None:
    headers = {"Host": f"127.0.0.1:{daemon.info.port}", "Origin": "http://evil.example"}
    status, response_headers, _ = http_request(daemon, "GET", "/health", headers)
    assert status == 200
    assert not [name for name in response_headers if name.startswith("access-control-")]
    preflight = {**headers, "Access-Control-Request-Method": "POST"}
    status, response_headers, _ = http_request(daemon, "OPTIONS", "/shutdown", preflight)
    assert status != 200
    assert not [name for name in response_headers if name.startswith("access-control-")]


def test_the_token_file_is_readable_by_the_user_only(daemon: DaemonHandle, tmp_path: Path) -> None:
    path = tmp_path / "stuntset-daemon.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    content = json.loads(path.read_text())
    assert content["token"] == daemon.info.token
    assert content["port"] == daemon.info.port
    daemon.stop()
    assert not path.exists()
