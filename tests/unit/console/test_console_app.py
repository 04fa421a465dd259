"""The console's routes: what each page holds, and the daemon's guard (Host, Origin,
token) in front of every one of them."""

from __future__ import annotations

import html
import http.client
import re
from pathlib import Path

import httpx
import pytest

from stuntset.cassettes.format import Cassette, dumps_cassette
from stuntset.console.testing import ConsoleServer

ROUTES = [
    "/",
    "/requests",
    "/requests/rows?after=-1",
    "/sessions",
    "/sessions/nope",
    "/cassettes",
    "/cassettes/show?name=x",
    "/cassettes/diff?a=x&b=y",
    "/static/console.js",
    "/static/console.css",
]


def raw_get(
    console: ConsoleServer, path: str, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", console.daemon.info.port, timeout=5)
    try:
        connection.putrequest("GET", f"/console{path}", skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("path", ROUTES)
def test_every_route_refuses_a_request_without_the_token(console: ConsoleServer, path: str) -> None:
    host = f"127.0.0.1:{console.daemon.info.port}"
    status, headers, body = raw_get(console, path, {"Host": host})
    assert status == 401, body
    assert b"token is required" in body
    assert not any(name.startswith("access-control") for name in headers)


@pytest.mark.parametrize("path", ROUTES)
def test_every_route_refuses_a_rebound_host_and_a_foreign_origin(
    console: ConsoleServer, path: str
) -> None:
    port = console.daemon.info.port
    token = f"Bearer {console.token}"
    status, _, body = raw_get(
        console, path, {"Host": f"evil.example:{port}", "Authorization": token}
    )
    assert status == 400
    assert b"evil.example" in body
    status, _, body = raw_get(
        console,
        path,
        {"Host": f"127.0.0.1:{port}", "Authorization": token, "Origin": "http://evil.example"},
    )
    assert status == 403
    assert b"evil.example" in body


def test_a_wrong_token_in_the_query_or_any_cookie_is_refused(console: ConsoleServer) -> None:
    host = {"Host": f"127.0.0.1:{console.daemon.info.port}"}
    assert raw_get(console, "/requests?token=wrong", host)[0] == 401
    # issue #33: a browser sends 127.0.0.1's cookies to every port of it, so the token is
    # never taken from a cookie, whatever its name
    for name in (f"stuntset-token-{console.daemon.info.port}", "token", "stuntset-token-1"):
        assert raw_get(console, "/requests", {**host, "Cookie": f"{name}={console.token}"})[0] == (
            401
        )


def test_a_page_opened_with_the_token_sets_no_cookie_and_carries_the_token_on(
    console: ConsoleServer, tmp_path: Path
) -> None:
    assert console.cassettes is not None
    (console.cassettes / "a.jsonl").write_bytes(dumps_cassette(Cassette()))
    with console.client() as client:
        task = client.call("create_task", workdir=str(tmp_path))
        client.call("create_session", task_id=task["task_id"], provider="happy_path")
    carried = f"token={console.token}"
    for path in ("/requests", "/sessions", "/cassettes", "/cassettes/show?name=a.jsonl"):
        response = httpx.get(console.login_url(path))
        assert response.status_code == 200, path
        assert "set-cookie" not in response.headers
        assert "no-store" in response.headers["cache-control"]
        assert "default-src 'none'" in response.headers["content-security-policy"]
        links = re.findall(r'(?:href|src)="([^"]*)"', response.text)
        assert links, path
        for link in links:  # every link (the views, the static files) opens with the token
            assert carried in html.unescape(link), (path, link)
            assert httpx.get(f"{console.daemon.info.url}{html.unescape(link)}").status_code == 200
        assert f'data-token="{console.token}"' in response.text  # for the script
    form = httpx.get(console.login_url("/cassettes")).text
    assert f'<input type="hidden" name="token" value="{console.token}">' in form


def test_a_page_opened_with_a_bearer_header_carries_no_token(console: ConsoleServer) -> None:
    page = get(console, "/requests").text
    assert console.token not in page


def test_the_index_redirects_to_requests_with_the_token(console: ConsoleServer) -> None:
    response = httpx.get(console.login_url("/"))
    assert response.headers["location"] == f"/console/requests?token={console.token}"
    assert "set-cookie" not in response.headers
    bearer = {"Authorization": f"Bearer {console.token}"}
    assert httpx.get(console.url("/"), headers=bearer).headers["location"] == "/console/requests"


def get(console: ConsoleServer, path: str) -> httpx.Response:
    return httpx.get(console.url(path), headers={"Authorization": f"Bearer {console.token}"})


def test_requests_page_lists_each_request_with_its_frames_and_fault(
    console: ConsoleServer,
) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    httpx.post(console.stand_in.url("openai") + "/chat/completions", json=body)
    failing = console.stand_in.url("openai", scenario="rate_limited")
    httpx.post(failing + "/chat/completions", json={**body, "stream": False})
    page = get(console, "/requests").text
    assert "2 request(s)" in page
    assert 'data-wire="openai-chat"' in page
    assert "rate_limited" in page
    assert "rate_limit" in page
    assert ">429<" in page
    assert "+0 B · 0 ms" in page  # the first frame, at its offset
    assert page.count('class="request failed"') == 1
    rows = get(console, "/requests/rows?after=0")
    assert rows.status_code == 200
    assert rows.text.count("<tr") == 1
    assert get(console, "/requests/rows?after=1").status_code == 204
    assert get(console, "/requests/rows?after=x").text.count("<tr") == 2  # bad after: all


def test_sessions_page_lists_sessions_and_an_unknown_one_is_404(
    console: ConsoleServer, tmp_path: Path
) -> None:
    assert "No sessions yet." in get(console, "/sessions").text
    with console.client() as client:
        task = client.call("create_task", workdir=str(tmp_path))
        session = client.call("create_session", task_id=task["task_id"], provider="happy_path")
    listing = get(console, "/sessions").text
    assert session["session_id"] in listing
    assert "happy_path" in listing
    one = get(console, f"/sessions/{session['session_id']}")
    assert one.status_code == 200
    assert 'data-ws="/ws"' in one.text
    missing = get(console, "/sessions/nope")
    assert missing.status_code == 404
    assert "no session &#x27;nope&#x27;" in missing.text


def test_static_files_are_served_and_others_are_not(console: ConsoleServer) -> None:
    script = get(console, "/static/console.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert "new WebSocket" in script.text
    assert "http" not in script.text.replace("https:", "")
    assert get(console, "/static/../app.py").status_code == 404
    assert get(console, "/static/other.js").status_code == 404


def handshake(console: ConsoleServer, headers: dict[str, str], query: str = "") -> int:
    connection = http.client.HTTPConnection("127.0.0.1", console.daemon.info.port, timeout=5)
    try:
        connection.putrequest("GET", f"/ws{query}", skip_host=True, skip_accept_encoding=True)
        base = {
            "Host": f"127.0.0.1:{console.daemon.info.port}",
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version": "13",
        }
        for name, value in {**base, **headers}.items():
            connection.putheader(name, value)
        connection.endheaders()
        return connection.getresponse().status
    finally:
        connection.close()


def test_the_token_in_the_query_opens_the_websocket_only_from_the_daemons_own_origin(
    console: ConsoleServer,
) -> None:
    port = console.daemon.info.port
    own = {"Origin": f"http://127.0.0.1:{port}"}
    assert handshake(console, own, f"?token={console.token}") == 101
    assert handshake(console, {"Origin": "http://evil.example"}, f"?token={console.token}") == 403
    assert handshake(console, {**own, "Cookie": f"stuntset-token-{port}={console.token}"}) != 101
    assert handshake(console, own) != 101  # no token
