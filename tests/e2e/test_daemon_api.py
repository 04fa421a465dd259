"""The daemon's WebSocket API over a real socket: turns, subscriptions with cursor resume,
and malformed messages that get an error naming the field while the connection lives on."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed

from stuntset import check_events
from stuntset.events import decode
from stuntset.log import SqliteEventLog
from stuntset.providers import ScriptedProvider
from stuntset.runtime.client import DaemonClient, DaemonError
from stuntset.runtime.daemon import DaemonHandle, start_daemon
from stuntset.runtime.testing import build_event, scenario_registry


def new_session(client: DaemonClient, tmp_path: Path, provider: str) -> str:
    task = client.call("create_task", workdir=str(tmp_path))
    return str(
        client.call("create_session", task_id=task["task_id"], provider=provider)["session_id"]
    )


def test_a_turn_streams_to_a_subscriber(daemon: DaemonHandle, tmp_path: Path) -> None:
    with DaemonClient(daemon.info) as client:
        session_id = new_session(client, tmp_path, "tool_use")
        assert client.call("subscribe", session_id=session_id) == {}
        run = client.call("start_turn", session_id=session_id, prompt="read a.txt")
        events = client.events(19)

    stream = [decode(json.dumps(e)) for e in events]
    check_events(stream)
    assert [e.seq for e in stream] == list(range(1, 20))
    assert {e.run_id for e in stream} == {run["run_id"]}
    assert stream[-1].type == "run.completed"


def test_disconnect_mid_stream_and_resume_from_the_cursor(
    daemon: DaemonHandle, tmp_path: Path
) -> None:
    with DaemonClient(daemon.info) as first:
        session_id = new_session(first, tmp_path, "needs_approval")
        first.call("subscribe", session_id=session_id)
        first.call("start_turn", session_id=session_id, prompt="clean up")
        seen: list[dict[str, Any]] = []
        while not seen or seen[-1]["type"] != "approval.requested":
            seen += first.events(1)
    # disconnected; the turn goes on once answered, and its events land while we are away
    with DaemonClient(daemon.info) as second:
        second.call(
            "respond", session_id=session_id, request_id=seen[-1]["request_id"], decision="allow"
        )
        second.call("subscribe", session_id=session_id, after=seen[-1]["seq"])
        rest: list[dict[str, Any]] = []
        while not rest or rest[-1]["type"] != "run.completed":
            rest += second.events(1)
        second.call("unsubscribe", session_id=session_id)
        second.call("subscribe", session_id=session_id)  # a full replay to compare with
        replay = second.events(len(seen) + len(rest))

    assert [e["seq"] for e in seen + rest] == list(range(1, len(seen) + len(rest) + 1))
    assert seen + rest == replay
    check_events([decode(json.dumps(e)) for e in replay])


def test_interrupt_and_close_over_the_socket(daemon: DaemonHandle, tmp_path: Path) -> None:
    with DaemonClient(daemon.info) as client:
        session_id = new_session(client, tmp_path, "stuck")
        client.call("subscribe", session_id=session_id)
        client.call("start_turn", session_id=session_id, prompt="hang")
        assert client.events(1)[0]["type"] == "run.started"
        client.call("interrupt", session_id=session_id)
        assert client.events(1)[0]["type"] == "run.killed"
        client.call("close", session_id=session_id)
        with pytest.raises(DaemonError, match="is closed"):
            client.call("start_turn", session_id=session_id, prompt="again")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("message", "field", "says"),
    [
        (
            '{"op": "subscribe", "id": 1, "session_id": "s", "after": "x"}',
            "after",
            "Expected `int`",
        ),
        ('{"op": "subscribe", "id": 7, "session_id": "s", "epoch": -1}', "epoch", ">= 0"),
        ('{"op": "start_turn", "id": 2, "session_id": "s"}', "prompt", "missing required field"),
        ('{"op": "teleport", "id": 3}', "op", "known ops: close, create_session"),
        ('{"op": "close", "id": 4, "session_id": "s", "extra": 1}', "extra", "unknown field"),
        ('{"op": "create_task"', None, "malformed JSON"),
        ('{"op": "create_task", "id": 5, "workdir": "relative"}', None, "absolute path"),
        ('{"op": "start_turn", "id": 6, "session_id": "nope", "prompt": "p"}', None, "no session"),
    ],
)
def test_bad_messages_get_an_error_naming_the_field_and_the_connection_lives_on(
    daemon: DaemonHandle, tmp_path: Path, message: str, field: str | None, says: str
) -> None:
    with DaemonClient(daemon.info) as client:
        client.send_raw(message)
        request_id = json.loads(message)["id"] if message.endswith("}") else None
        reply = client.reply(request_id)
        assert reply["type"] == "error"
        assert reply["field"] == field
        assert says in reply["message"]
        # the same connection still works
        assert client.call("create_task", workdir=str(tmp_path))["workdir"] == str(tmp_path)


def test_a_stale_cursor_is_refused_naming_after(daemon: DaemonHandle, tmp_path: Path) -> None:
    with DaemonClient(daemon.info) as client:
        session_id = new_session(client, tmp_path, "tool_use")
        with pytest.raises(DaemonError, match="cursor 5 is stale") as info:
            client.call("subscribe", session_id=session_id, after=5)
        assert info.value.field == "after"


def test_shutdown_stops_the_daemon(daemon: DaemonHandle) -> None:
    import urllib.request

    request = urllib.request.Request(
        daemon.info.url + "/shutdown",
        method="POST",
        headers={"Authorization": f"Bearer {daemon.info.token}"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert json.load(response) == {"ok": True, "shutting_down": True}
    daemon.stop()  # returns once the serving thread ended
    with pytest.raises((OSError, ConnectionClosed)):
        DaemonClient(daemon.info, timeout=1)


def test_a_client_leaving_mid_stream_leaves_no_error_behind(
    daemon: DaemonHandle, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        with daemon.client() as client:
            session_id = new_session(client, tmp_path, "long_stream")
            client.call("subscribe", session_id=session_id)
            client.call("start_turn", session_id=session_id, prompt="go")
            seen = client.events(3)
        with daemon.client() as again:  # the daemon serves on; the turn went on without us
            again.call("subscribe", session_id=session_id, after=seen[-1]["seq"])
            rest: list[dict[str, Any]] = []
            while not rest or rest[-1]["type"] != "run.completed":
                rest += again.events(1)
    assert [e["seq"] for e in seen + rest] == list(range(1, len(seen) + len(rest) + 1))
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_the_demo_section_resumes_a_scripted_session_over_the_socket(
    daemon: DaemonHandle, tmp_path: Path
) -> None:
    from stuntset.runtime._demo import _play

    row = _play(daemon, tmp_path, "tool_use")
    assert (row.ok, row.events, row.outcome) == (True, 19, "run.completed")


class _MisquotingClient:
    """A client whose live stream shows the first text delta with other text."""

    def __init__(self, inner: DaemonClient) -> None:
        self.inner = inner

    def __enter__(self) -> _MisquotingClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.inner.close()

    def call(self, op: str, **fields: Any) -> Any:
        return self.inner.call(op, **fields)

    def position(self, session_id: str) -> tuple[int, int]:
        return self.inner.position(session_id)

    def events(self, count: int) -> list[dict[str, Any]]:
        events = self.inner.events(count)
        for event in events:
            if event["type"] == "message.delta" and event["seq"] <= 3:
                event["text"] = "misquoted"
        return events


class _MisquotingDaemon:
    """A daemon handle whose resumed stream differs from its replay."""

    def __init__(self, daemon: DaemonHandle) -> None:
        self.daemon, self.info = daemon, daemon.info

    def client(self) -> _MisquotingClient:
        return _MisquotingClient(self.daemon.client())


def test_the_demo_section_reports_a_resumed_stream_that_differs_from_the_replay(
    daemon: DaemonHandle, tmp_path: Path
) -> None:
    from stuntset.runtime._demo import _row

    row = _row(_MisquotingDaemon(daemon), tmp_path, "happy_path")  # type: ignore[arg-type]
    assert (row.ok, row.events) == (False, 0)
    assert "happy_path: the resumed stream differs from the replay" in row.detail
    assert "at event #1: live " in row.detail
    assert '"text":"misquoted"' in row.detail


def test_a_provider_that_fails_to_start_gets_an_error_reply_and_the_daemon_lives_on(
    tmp_path: Path,
) -> None:
    def broken() -> ScriptedProvider:
        raise RuntimeError("the agent binary is missing")

    handle = start_daemon(
        db=tmp_path / "host.db", providers={"broken": broken, **scenario_registry()}
    )
    try:
        with handle.client() as client:
            session_id = new_session(client, tmp_path, "broken")
            with pytest.raises(DaemonError, match="start_turn failed: RuntimeError: the agent"):
                client.call("start_turn", session_id=session_id, prompt="hi")
            healthy = new_session(client, tmp_path, "happy_path")
            client.call("subscribe", session_id=healthy)
            client.call("start_turn", session_id=healthy, prompt="hi")
            while client.events(1)[0]["type"] != "run.completed":
                pass
    finally:
        handle.stop()


def test_a_client_away_across_a_rollback_and_reappend_is_told_on_resume(
    daemon: DaemonHandle, tmp_path: Path
) -> None:
    # The daemon's own file, opened beside it: the rollback happens out of band.
    with SqliteEventLog(tmp_path / "stuntset-events.db") as log:
        with daemon.client() as first:
            session_id = new_session(first, tmp_path, "happy_path")
            log.append(session_id, [build_event("message.delta", text=f"old{i}") for i in range(5)])
            first.call("subscribe", session_id=session_id)
            frames = [first.next_message() for _ in range(5)]
            position = first.position(session_id)
        log.rollback(session_id, 2)
        log.append(session_id, [build_event("message.delta", text=f"new{i}") for i in range(3)])

        with daemon.client() as second:
            refused = second.request("subscribe", session_id=session_id, after=5, epoch=0)
            with pytest.raises(DaemonError, match="rolled back to seq 2") as info:
                second.call("subscribe", session_id=session_id, after=5, epoch=0)
            second.call("subscribe", session_id=session_id, after=2, epoch=0)
            rest = [second.next_message() for _ in range(3)]
            resumed = second.position(session_id)
            second.call("unsubscribe", session_id=session_id)
            # without the epoch the old call is accepted (a plain seq cannot tell)
            assert second.call("subscribe", session_id=session_id, after=5) == {}

    assert [(f["type"], f["epoch"], f["event"]["seq"]) for f in frames] == [
        ("event", 0, seq) for seq in range(1, 6)
    ]
    assert position == (0, 5)
    assert refused["type"] == "error"
    assert (refused["field"], refused["resume_at"]) == ("after", 2)
    assert "cursor 5 is stale" in refused["message"]
    assert (info.value.field, info.value.resume_at) == ("after", 2)
    assert [(f["epoch"], f["event"]["seq"], f["event"]["text"]) for f in rest] == [
        (1, 3, "new0"),
        (1, 4, "new1"),
        (1, 5, "new2"),
    ]
    assert resumed == (1, 5)


def test_a_rollback_below_a_live_subscribers_cursor_sends_a_stale_frame(
    daemon: DaemonHandle, tmp_path: Path
) -> None:
    with SqliteEventLog(tmp_path / "stuntset-events.db") as log, daemon.client() as client:
        session_id = new_session(client, tmp_path, "happy_path")
        log.append(session_id, [build_event("message.delta") for _ in range(4)])
        client.call("subscribe", session_id=session_id)
        client.events(4)
        log.rollback(session_id, 1)  # the daemon's subscription notices at its next poll

        stale = client.next_message()
        client.call("subscribe", session_id=session_id, after=stale["resume_at"], epoch=0)
        log.append(session_id, [build_event("message.delta", text="again")])
        again = client.next_message()

    assert stale["type"] == "stale"
    assert (stale["session_id"], stale["cursor"], stale["resume_at"]) == (session_id, 4, 1)
    assert "rolled back to seq 1" in stale["message"]
    assert (again["epoch"], again["event"]["seq"], again["event"]["text"]) == (1, 2, "again")


HOSTILE = [
    ("nested 10,000 deep", "[" * 10_000 + "]" * 10_000, None, None, "Expected `object`"),
    (
        "a field nested 10,000 deep",
        '{"op": "create_task", "id": 9, "workdir": ' + '{"a": ' * 10_000 + "1" + "}" * 10_001,
        None,  # too deep to read even its id: the reply's id is null
        "workdir",
        "Expected `str`",
    ),
    (
        "a cursor of 5,000 digits",
        '{"op": "subscribe", "id": 10, "session_id": "s", "after": ' + "9" * 5_000 + "}",
        10,
        "after",
        "out of range",
    ),
    (
        "an id of 5,000 digits",
        '{"op": "close", "id": ' + "9" * 5_000 + ', "session_id": "s"}',
        None,
        "id",
        "out of range",
    ),
]


@pytest.mark.parametrize(
    ("message", "request_id", "field", "says"),
    [case[1:] for case in HOSTILE],
    ids=[case[0] for case in HOSTILE],
)
def test_hostile_messages_get_an_error_and_the_connection_lives_on(
    daemon: DaemonHandle,
    tmp_path: Path,
    message: str,
    request_id: int | None,
    field: str | None,
    says: str,
) -> None:
    with DaemonClient(daemon.info) as client:
        client.send_raw(message)
        reply = client.reply(request_id)
        assert reply["type"] == "error"
        assert reply["field"] == field
        assert says in reply["message"]
        assert client.call("create_task", workdir=str(tmp_path))["workdir"] == str(tmp_path)


@pytest.mark.slow
def test_events_of_10_mb_reach_a_subscriber_written_by_another_connection(
    daemon: DaemonHandle, tmp_path: Path
) -> None:
    """Batches are bounded by bytes on the server and the client takes frames as large as the
    server sends; the appends come through another connection (woken by data_version)."""
    big = "x" * (10 * 1024 * 1024)
    with DaemonClient(daemon.info, timeout=60) as client:
        session_id = new_session(client, tmp_path, "tool_use")
        client.call("subscribe", session_id=session_id)
        with SqliteEventLog(tmp_path / "stuntset-events.db") as writer:
            writer.append(session_id, [build_event("run.started", session_id=session_id)])
            for index in range(3):
                writer.append(
                    session_id, [build_event("message.delta", item_id=f"m{index}", text=big)]
                )
        events = client.events(4)
    assert [e["seq"] for e in events] == [1, 2, 3, 4]
    assert [len(e["text"]) for e in events[1:]] == [len(big)] * 3


def test_a_row_that_does_not_decode_ends_the_subscription_with_an_error_frame(
    daemon: DaemonHandle, tmp_path: Path
) -> None:
    """A row stored before events were checked (planted with raw sqlite3): the subscriber is
    told which seq and what to run, and its connection lives on."""
    import sqlite3

    with DaemonClient(daemon.info) as client:
        session_id = new_session(client, tmp_path, "tool_use")
        raw = sqlite3.connect(tmp_path / "stuntset-events.db")
        raw.execute(
            "INSERT INTO events (session_id, seq, run_id, type, data) VALUES (?, 1, 'r', "
            "'message.delta', ?)",
            (session_id, b'{"type":"message.delta","run_id":"r","ts":"now","item_id":"m"}'),
        )
        raw.commit()
        raw.close()
        client.call("subscribe", session_id=session_id)
        message = client.next_message()
        assert message["type"] == "error"
        assert message["session_id"] == session_id
        assert "seq 1 does not decode" in message["message"]
        assert "stuntset log doctor" in message["message"]
        assert client.call("create_task", workdir=str(tmp_path))["workdir"] == str(tmp_path)
