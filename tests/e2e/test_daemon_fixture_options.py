"""The ``daemon`` and ``session_service`` fixtures take the user's providers and allowed
origins through their markers, and the daemon serves the file ``log_seam`` seeds."""

from __future__ import annotations

import base64
import http.client
import os
from pathlib import Path

import anyio
import pytest

from stuntset.errors import UsageError
from stuntset.providers import ScriptedProvider
from stuntset.runtime import SessionService
from stuntset.runtime._pytest import providers_from
from stuntset.runtime.client import DaemonClient
from stuntset.runtime.daemon import DaemonHandle
from stuntset.runtime.security import normalize_origins
from stuntset.runtime.testing import LogSeam
from stuntset.script import Script, Text


def my_provider() -> ScriptedProvider:
    """A user's own provider factory (not in the catalog)."""
    return ScriptedProvider(Script.of([Text("from my provider")]), name="mine")


def handshake(daemon: DaemonHandle, origin: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", daemon.info.port, timeout=5)
    try:
        connection.request(
            "GET",
            "/ws",
            headers={
                "Authorization": f"Bearer {daemon.info.token}",
                "Origin": origin,
                "Upgrade": "websocket",
                "Connection": "Upgrade",
                "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
                "Sec-WebSocket-Version": "13",
            },
        )
        return connection.getresponse().status
    finally:
        connection.close()


def texts(client: DaemonClient, session_id: str) -> list[str]:
    found: list[str] = []
    while True:
        [event] = client.events(1)
        if event["type"] == "message.completed":
            found.append(event["text"])
        if event["type"] == "run.completed":
            return found


@pytest.mark.daemon(providers={"mine": my_provider})
def test_the_daemon_marker_takes_a_users_registry(daemon: DaemonHandle, tmp_path: Path) -> None:
    with daemon.client() as client:
        task = client.call("create_task", workdir=str(tmp_path))
        session = client.call("create_session", task_id=task["task_id"], provider="mine")
        client.call("subscribe", session_id=session["session_id"])
        client.call("start_turn", session_id=session["session_id"], prompt="hi")
        said = texts(client, session["session_id"])
        refused = client.request("create_session", task_id=task["task_id"], provider="happy_path")
    assert said == ["from my provider"]
    assert refused["type"] == "error"  # the registry replaces the catalog's
    assert "happy_path" in refused["message"]


@pytest.mark.daemon(providers=my_provider)
def test_one_factory_is_the_default_provider(daemon: DaemonHandle, tmp_path: Path) -> None:
    with daemon.client() as client:
        task = client.call("create_task", workdir=str(tmp_path))
        session = client.call("create_session", task_id=task["task_id"], provider="default")
        client.call("subscribe", session_id=session["session_id"])
        client.call("start_turn", session_id=session["session_id"], prompt="hi")
        assert texts(client, session["session_id"]) == ["from my provider"]


@pytest.mark.anyio
@pytest.mark.session_service(providers={"mine": my_provider})
async def test_the_session_service_marker_takes_a_users_registry(
    session_service: SessionService, tmp_path: Path
) -> None:
    async with session_service as host:
        session = host.create_session(host.create_task(tmp_path).task_id, "mine")
        await host.start_turn(session.session_id, "hi")
        with anyio.fail_after(5):
            await host.wait_idle(session.session_id)
        events = host.log.read(session.session_id)
    assert [e.text for e in events if e.type == "message.completed"] == ["from my provider"]


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ({"mine": 3}, "providers['mine'] is int, not a provider factory"),
        ({}, "providers is empty"),
        ("mine", "takes a registry"),
        ({1: my_provider}, "a provider name is a string"),
    ],
)
def test_bad_providers_are_refused_naming_the_marker(given: object, says: str) -> None:
    with pytest.raises(UsageError, match=r"@pytest\.mark\.daemon") as info:
        providers_from(given, where="test_x: @pytest.mark.daemon")
    assert says in str(info.value)


DEV_UI = "http://127.0.0.1:5173"


@pytest.mark.daemon(allowed_origins=[DEV_UI])
def test_an_allowed_origin_gets_through_and_others_still_get_403(daemon: DaemonHandle) -> None:
    assert handshake(daemon, DEV_UI) == 101
    assert handshake(daemon, "http://127.0.0.1:5174") == 403
    assert handshake(daemon, "http://evil.example") == 403
    with DaemonClient(daemon.info, origin=DEV_UI) as client:
        assert client.call("create_task", workdir="/tmp")["workdir"] == "/tmp"


def test_without_allowed_origins_the_dev_ui_gets_403(daemon: DaemonHandle) -> None:
    assert handshake(daemon, DEV_UI) == 403


@pytest.mark.daemon(allowed_origins=[DEV_UI])
def test_an_allowed_origin_does_not_let_a_rebound_host_in(daemon: DaemonHandle) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", daemon.info.port, timeout=5)
    try:
        connection.putrequest("GET", "/health", skip_host=True)
        connection.putheader("Host", f"evil.example:{daemon.info.port}")
        connection.putheader("Origin", DEV_UI)
        connection.endheaders()
        assert connection.getresponse().status == 400
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("given", "normal"),
    [
        ("http://127.0.0.1:5173", "http://127.0.0.1:5173"),
        ("HTTP://LocalHost:5173/", "http://localhost:5173"),
        ("https://dev.example:443", "https://dev.example"),
        ("http://[::1]:5173", "http://[::1]:5173"),
    ],
)
def test_origins_are_kept_as_a_browser_sends_them(given: str, normal: str) -> None:
    assert normalize_origins([given]) == (normal,)


@pytest.mark.parametrize(
    "given", ["*", "null", "127.0.0.1:5173", "http://a/b", "ftp://a", "http://u@a", "http://a?x"]
)
def test_malformed_origins_are_refused(given: str) -> None:
    with pytest.raises(UsageError, match="allowed_origins"):
        normalize_origins([given])


def test_one_string_is_not_a_list_of_origins() -> None:
    with pytest.raises(UsageError, match="a list of origins"):
        normalize_origins(DEV_UI)


def test_a_session_seeded_by_log_seam_is_read_through_the_daemon(
    log_seam: LogSeam, daemon: DaemonHandle
) -> None:
    seeded = log_seam.seed()
    log_seam.publish(seeded, "message.delta", "message.completed")
    log_seam.finish(seeded)
    with daemon.client() as client:
        client.call("subscribe", session_id=seeded.session_id)
        events = client.events(4)
        # the daemon sees the seeded rows too: the session takes its next turn
        client.call("start_turn", session_id=seeded.session_id, prompt="again")
        while client.events(1)[0]["type"] != "run.completed":
            pass
    assert [e["type"] for e in events] == [
        "run.started",
        "message.delta",
        "message.completed",
        "run.completed",
    ]
    assert {e["run_id"] for e in events} == {seeded.run_id}
