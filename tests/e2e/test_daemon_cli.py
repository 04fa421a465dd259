"""`stuntset daemon` as a real process: it announces itself, writes its token file, serves,
and exits 0 on `POST /shutdown`."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path


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
