"""`stuntset daemon` as a real process: it announces itself, writes its token file, serves,
and exits 0 on `POST /shutdown`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from stuntset.commands.daemon import default_token_file, run_daemon_command


def test_stuntset_daemon_serves_until_shut_down(tmp_path: Path) -> None:
    token_file = tmp_path / "run" / "daemon.json"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "stuntset.cli",
            "daemon",
            "--db",
            str(tmp_path / "host.db"),
            "--token-file",
            str(token_file),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        announced = process.stdout.readline()  # printed once it listens
        assert announced.startswith("stuntset daemon on http://127.0.0.1:"), announced
        info = json.loads(token_file.read_text())
        assert token_file.stat().st_mode & 0o777 == 0o600
        with urllib.request.urlopen(info["url"] + "/health", timeout=5) as response:
            assert json.load(response) == {"ok": True}
        shutdown = urllib.request.Request(
            info["url"] + "/shutdown",
            method="POST",
            headers={"Authorization": f"Bearer {info['token']}"},
        )
        with urllib.request.urlopen(shutdown, timeout=5) as response:
            assert response.status == 200
        assert process.wait(timeout=15) == 0
        assert not token_file.exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()  # type: ignore[union-attr]
        process.stderr.close()  # type: ignore[union-attr]


def test_the_daemon_command_in_process_and_its_default_token_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STUNTSET_RUNTIME_DIR", str(tmp_path / "rt"))
    assert default_token_file() == tmp_path / "rt" / "daemon.json"
    monkeypatch.delenv("STUNTSET_RUNTIME_DIR")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    assert default_token_file() == tmp_path / "xdg" / "stuntset" / "daemon.json"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert default_token_file().name == "daemon.json"

    monkeypatch.setenv("STUNTSET_RUNTIME_DIR", str(tmp_path / "rt"))
    announced = threading.Event()
    lines: list[str] = []

    def echo(line: str) -> None:
        lines.append(line)
        announced.set()

    server = threading.Thread(
        target=run_daemon_command, args=(str(tmp_path / "host.db"), 0, None, echo)
    )
    server.start()
    try:
        assert announced.wait(10), "the daemon never announced itself"
        info = json.loads((tmp_path / "rt" / "daemon.json").read_text())
        assert lines == [
            f"stuntset daemon on {info['url']} (WebSocket {info['url'].replace('http', 'ws')}/ws); "
            f"db {tmp_path / 'host.db'}; token in {tmp_path / 'rt' / 'daemon.json'} (0600); "
            f"pid {os.getpid()}"
        ]
    finally:
        if announced.is_set():
            shutdown = urllib.request.Request(
                info["url"] + "/shutdown",
                method="POST",
                headers={"Authorization": f"Bearer {info['token']}"},
            )
            urllib.request.urlopen(shutdown, timeout=5).close()
        server.join(15)
    assert not server.is_alive()


def test_the_daemon_command_lets_an_allowed_origin_in(tmp_path: Path) -> None:
    from stuntset.runtime.client import DaemonClient
    from stuntset.runtime.protocol import DaemonInfo

    lines: list[str] = []
    announced = threading.Event()

    def echo(line: str) -> None:
        lines.append(line)
        if line.startswith("also allowed origins"):
            announced.set()

    token_file = tmp_path / "rt" / "daemon.json"
    server = threading.Thread(
        target=run_daemon_command,
        args=(str(tmp_path / "host.db"), 0, str(token_file), echo),
        kwargs={"allowed_origins": ("HTTP://127.0.0.1:5173/",)},
    )
    server.start()
    try:
        assert announced.wait(10), f"the daemon never announced its origins: {lines}"
        info = DaemonInfo(**json.loads(token_file.read_text()))
        with DaemonClient(info, origin="http://127.0.0.1:5173") as client:
            assert client.call("create_task", workdir=str(tmp_path))["workdir"] == str(tmp_path)
    finally:
        if announced.is_set():
            shutdown = urllib.request.Request(
                info.url + "/shutdown",
                method="POST",
                headers={"Authorization": f"Bearer {info.token}"},
            )
            urllib.request.urlopen(shutdown, timeout=5).close()
        server.join(15)
    assert not server.is_alive()
    assert lines[1] == "also allowed origins: http://127.0.0.1:5173"
