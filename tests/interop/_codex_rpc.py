"""A raw JSON-RPC client for ``codex app-server`` (the real binary or the fake): what the
server writes, field for field, where the SDK's typed models would fill in defaults."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

INITIALIZE = {
    "clientInfo": {"name": "probe", "title": "Probe", "version": "0.0.1"},
    "capabilities": {"experimentalApi": True},
}


class RawSession:
    """One ``app-server`` process: requests out, every message in (kept in ``seen``); server
    requests are answered ``accept``."""

    def __init__(self, binary: Path, *, cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [str(binary), "app-server", "--listen", "stdio://"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            text=True,
        )
        self.seen: list[dict[str, Any]] = []
        self.count = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request; its response (reading, and keeping, everything before it)."""
        self.count += 1
        request_id = f"r{self.count}"
        self.send({"id": request_id, "method": method, "params": params})
        return self.until(lambda m: m.get("id") == request_id and "method" not in m)

    def until(self, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            self.seen.append(message)
            if "id" in message and "method" in message:
                self.send({"id": message["id"], "result": {"decision": "accept"}})
            if done(message):
                return dict(message)
        raise AssertionError("the app-server closed stdout")

    def close(self) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()
        self.seen.extend(json.loads(line) for line in self.proc.stdout)
        self.proc.stdout.close()
        self.proc.wait(timeout=30)
