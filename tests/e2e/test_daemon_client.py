"""The same client tests over both transports of ``DaemonClient``: a WebSocket to the
daemon's port, and in memory (the daemon's ASGI app driven in process, no socket)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stuntset.errors import DaemonError, UsageError
from stuntset.runtime.client import DaemonClient
from stuntset.runtime.daemon import DaemonHandle
from stuntset.runtime.testing import LogSeam

Connect = Callable[..., DaemonClient]


@pytest.fixture(params=["websocket", "memory"])
def connect(request: pytest.FixtureRequest, daemon: DaemonHandle) -> Iterator[Connect]:
    opened: list[DaemonClient] = []

    def make(**options: Any) -> DaemonClient:
        client = daemon.client(request.param, **options)
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()


def new_session(client: DaemonClient, workdir: Path, provider: str = "happy_path") -> str:
    task = client.call("create_task", workdir=str(workdir))
    session = client.call("create_session", task_id=task["task_id"], provider=provider)
    return str(session["session_id"])


def test_a_turn_streams_to_a_subscriber(connect: Connect, tmp_path: Path) -> None:
    client = connect()
    session_id = new_session(client, tmp_path)
    assert client.call("subscribe", session_id=session_id) == {}
    run = client.call("start_turn", session_id=session_id, prompt="hi")
    seen = []
    while not seen or seen[-1]["type"] != "run.completed":
        seen.extend(client.events(1))
    assert seen[0]["type"] == "run.started"
    assert {e["run_id"] for e in seen} == {run["run_id"]}
    assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))
    assert client.position(session_id) == (0, len(seen))


def test_an_error_reply_names_the_field_and_the_connection_lives_on(
    connect: Connect, tmp_path: Path
) -> None:
    client = connect()
    with pytest.raises(DaemonError) as info:
        client.call("start_turn", session_id=7, prompt="hi")
    assert info.value.field == "session_id"
    client.send_raw("{not json")
    assert client.reply(None)["type"] == "error"
    assert client.call("create_task", workdir=str(tmp_path))["workdir"] == str(tmp_path)


def test_a_seeded_session_resumes_from_a_position(connect: Connect, log_seam: LogSeam) -> None:
    seeded = log_seam.seed()
    log_seam.publish(seeded, "message.delta", "message.delta", "message.completed")
    first = connect()
    first.call("subscribe", session_id=seeded.session_id)
    first.events(2)
    epoch, seq = first.position(seeded.session_id)
    first.close()
    second = connect()
    second.call("subscribe", session_id=seeded.session_id, after=seq, epoch=epoch)
    assert [e["seq"] for e in second.events(2)] == [3, 4]


def test_a_foreign_origin_is_refused_and_a_wrong_token_too(connect: Connect) -> None:
    with pytest.raises(Exception, match=r"403|refused"):
        connect(origin="http://evil.example")
    with pytest.raises(Exception, match=r"403|refused"):
        connect(token="wrong")


def test_a_client_closed_twice_is_harmless(connect: Connect, tmp_path: Path) -> None:
    client = connect()
    client.call("create_task", workdir=str(tmp_path))
    client.close()
    client.close()


def test_the_memory_transport_uses_no_socket(daemon: DaemonHandle, tmp_path: Path) -> None:
    with daemon.client("memory") as client:
        assert client.transport == "memory"
        assert client.call("create_task", workdir=str(tmp_path))["workdir"] == str(tmp_path)
        assert not hasattr(client._ws, "_ws")  # no websockets connection behind it


def test_an_unknown_transport_is_refused(daemon: DaemonHandle) -> None:
    with pytest.raises(UsageError, match="'websocket' or 'memory'"):
        daemon.client("carrier-pigeon")  # type: ignore[arg-type]
