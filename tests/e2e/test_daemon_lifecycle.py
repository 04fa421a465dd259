"""`stuntset daemon` as a real process over its whole life: one per database, graceful
SIGTERM/SIGINT (every running run ends as run.killed, the token file goes, exit 0), and a
failed start that leaves nothing behind."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from stuntset import check_events
from stuntset.events import RunKilled, RunStarted
from stuntset.log import SqliteEventLog
from stuntset.runtime import RunRecord, SessionStore
from stuntset.runtime.client import DaemonClient
from stuntset.runtime.daemon import DaemonInfo


class Daemon:
    def __init__(self, process: subprocess.Popen[str], announced: str, token_file: Path) -> None:
        self.process = process
        self.announced = announced
        self.token_file = token_file
        self.info = DaemonInfo(**json.loads(token_file.read_text()))


def daemon_command(db: Path, token_file: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "stuntset.cli", "daemon", "--db", str(db), "--token-file",
            str(token_file), *extra]  # fmt: skip


@contextmanager
def spawned(db: Path, token_file: Path, *extra: str) -> Iterator[Daemon]:
    process = subprocess.Popen(
        daemon_command(db, token_file, *extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        announced = process.stdout.readline()  # printed once it listens (or EOF if it died)
        assert announced.startswith("stuntset daemon on"), (announced, process.stderr)
        yield Daemon(process, announced, token_file)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()  # type: ignore[union-attr]
        process.stderr.close()  # type: ignore[union-attr]


def start_stuck_run(info: DaemonInfo, workdir: Path) -> tuple[str, str]:
    """A session whose turn never finishes; returns (session_id, run_id) once it started."""
    with DaemonClient(info) as client:
        task = client.call("create_task", workdir=str(workdir))
        session = client.call("create_session", task_id=task["task_id"], provider="stuck")
        session_id = session["session_id"]
        client.call("subscribe", session_id=session_id)
        run = client.call("start_turn", session_id=session_id, prompt="hang")
        assert client.events(1)[0]["type"] == "run.started"
    return session_id, run["run_id"]


@pytest.mark.parametrize("how", ["terminate", "SIGINT"])
def test_sigterm_and_sigint_end_every_running_run_and_remove_the_token_file(
    tmp_path: Path, how: str
) -> None:
    db = tmp_path / "host.db"
    with spawned(db, tmp_path / "run" / "daemon.json") as daemon:
        assert f"db {db};" in daemon.announced
        runs = [start_stuck_run(daemon.info, tmp_path) for _ in range(2)]
        if how == "terminate":
            daemon.process.terminate()  # SIGTERM: what docker stop and systemd send
        else:
            daemon.process.send_signal(signal.SIGINT)
        assert daemon.process.wait(timeout=30) == 0
        assert not daemon.token_file.exists()
        assert daemon.process.stderr is not None
        assert "Traceback" not in daemon.process.stderr.read()

    name = "SIGTERM" if how == "terminate" else "SIGINT"
    with SqliteEventLog(db) as log:
        for session_id, run_id in runs:
            events = [e for e in log.read(session_id) if e.run_id == run_id]
            check_events(events)  # started, then exactly one terminal event
            assert isinstance(events[0], RunStarted)
            last = events[-1]
            assert isinstance(last, RunKilled)
            assert last.reason == f"shutdown: the daemon got {name}"
    store = SessionStore(db)
    try:
        assert {r.status for r in store.all(RunRecord)} == {"abandoned"}
    finally:
        store.close()


@pytest.mark.slow
def test_a_second_daemon_on_the_same_database_refuses_naming_the_first_pid(
    tmp_path: Path,
) -> None:
    db = tmp_path / "host.db"
    with spawned(db, tmp_path / "one" / "daemon.json") as first:
        session_id, run_id = start_stuck_run(first.info, tmp_path)
        second = subprocess.run(
            daemon_command(db, tmp_path / "two" / "daemon.json"),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 2
        lines = second.stderr.splitlines()
        assert len(lines) == 1, lines
        assert f"in use by pid {first.process.pid}" in lines[0]
        assert str(db) in lines[0]
        assert not (tmp_path / "two" / "daemon.json").exists()
        first.process.terminate()
        assert first.process.wait(timeout=30) == 0

    with SqliteEventLog(db) as log:  # the second start did not touch the first's live run
        terminal = [
            e for e in log.read(session_id) if e.run_id == run_id and e.type == "run.killed"
        ]
        assert len(terminal) == 1


def test_a_failed_start_leaves_no_token_file(tmp_path: Path) -> None:
    """A daemon that cannot recover its database (a row an old stuntset stored, in a session
    with a run left running) says so in one line, and removes the token file it wrote."""
    db = tmp_path / "host.db"
    with SqliteEventLog(db) as log:
        log.append("s1", [RunStarted(run_id="r1", ts=1.0, session_id="s1", provider="stuck")])
    store = SessionStore(db)
    store.put(RunRecord(run_id="r1", session_id="s1", prompt="p", status="running", started_at=1.0))
    store.close()
    raw = sqlite3.connect(db)
    raw.execute(
        "INSERT INTO events (session_id, seq, run_id, type, data) VALUES ('s1', 2, 'r1', "
        "'message.delta', ?)",
        (b'{"item_id":"m","run_id":"r1","seq":2,"text":"x","ts":"now","type":"message.delta"}',),
    )
    raw.commit()
    raw.close()
    token_file = tmp_path / "run" / "daemon.json"
    done = subprocess.run(
        daemon_command(db, token_file), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    assert "seq 2 does not decode" in lines[0]
    assert "stuntset log doctor" in lines[0]
    assert not token_file.exists()
    assert [p.name for p in token_file.parent.iterdir()] == []  # no temporary left either


def test_the_default_database_is_absolute_under_the_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stuntset.commands.daemon import default_db

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_db() == tmp_path / "data" / "stuntset" / "host.db"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")  # ignored, as the spec says
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_db() == tmp_path / "home" / ".local" / "share" / "stuntset" / "host.db"
    assert default_db().is_absolute()


def test_the_default_database_is_used_and_printed(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    token_file = tmp_path / "run" / "daemon.json"
    command = [sys.executable, "-m", "stuntset.cli", "daemon", "--token-file", str(token_file)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path
    )
    try:
        assert process.stdout is not None
        announced = process.stdout.readline()
        db = tmp_path / "data" / "stuntset" / "host.db"
        assert f"db {db}; token in {token_file} (0600)" in announced, announced
        assert db.exists()
        process.terminate()
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()  # type: ignore[union-attr]
        process.stderr.close()  # type: ignore[union-attr]


def test_the_daemon_serves_on_ipv6_loopback(tmp_path: Path) -> None:
    probe = socket.socket(socket.AF_INET6)
    try:
        probe.bind(("::1", 0))
    except OSError as error:
        pytest.skip(f"no IPv6 loopback here: {error}")
    finally:
        probe.close()
    with spawned(tmp_path / "host.db", tmp_path / "run" / "daemon.json", "--host", "::1") as daemon:
        assert daemon.info.url.startswith("http://[::1]:")
        with urllib.request.urlopen(daemon.info.url + "/health", timeout=10) as response:
            assert json.load(response) == {"ok": True}
        session_id, _ = start_stuck_run(daemon.info, tmp_path)
        daemon.process.terminate()
        assert daemon.process.wait(timeout=30) == 0
    with SqliteEventLog(tmp_path / "host.db") as log:
        assert log.read(session_id)[-1].type == "run.killed"


def test_sigterm_is_honoured_with_2000_subscriptions_woken_by_another_writer(
    tmp_path: Path,
) -> None:
    # issue #33: each wake-up of a subscriber wrote a byte into the loop's self-pipe (also its
    # signal wakeup fd); with thousands woken at once the pipe filled and SIGTERM was dropped.
    # Here another process's commits wake all 2,000 subscriptions (through the log's watcher)
    # while SIGTERM arrives; the daemon must end its run and exit 0.
    import threading

    from stuntset.events import MessageDelta

    db = tmp_path / "host.db"
    with spawned(db, tmp_path / "run" / "daemon.json") as daemon:
        session_id, run_id = start_stuck_run(daemon.info, tmp_path)
        clients = [DaemonClient(daemon.info) for _ in range(4)]
        try:
            task = clients[0].call("create_task", workdir=str(tmp_path))
            for n in range(2000):
                client = clients[n % 4]
                session = client.call("create_session", task_id=task["task_id"], provider="stuck")
                client.call("subscribe", session_id=session["session_id"])
            writing = threading.Event()
            stop = threading.Event()

            def write() -> None:  # another connection's commits: the watcher wakes everyone
                with SqliteEventLog(db, poll_interval=None) as other:
                    while not stop.is_set():
                        other.append(
                            "elsewhere", [MessageDelta(run_id="x", ts=0.0, item_id="m", text="t")]
                        )
                        writing.set()

            writer = threading.Thread(target=write)
            writer.start()
            try:
                assert writing.wait(30)
                daemon.process.terminate()
                assert daemon.process.wait(timeout=60) == 0
            finally:
                stop.set()
                writer.join(30)
        finally:
            for client in clients:
                with contextlib.suppress(Exception):
                    client.close()
    with SqliteEventLog(db) as log:
        terminal = [e for e in log.read(session_id) if e.run_id == run_id and e.terminal]
        assert [e.type for e in terminal] == ["run.killed"]
