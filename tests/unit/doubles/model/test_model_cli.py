"""``stuntset serve``: a standalone model double for clients in any language."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _serve(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-c", "from stuntset.cli import main; main()", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first.startswith("stuntset model double on http://127.0.0.1:"), first
    return process, first.split(" on ", 1)[1].strip()


def _stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=20)


@pytest.mark.slow
def test_serve_plays_a_script_file_and_every_scenario(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps({"turns": [{"steps": [{"kind": "text", "text": "from the file"}]}]})
    )
    process, base = _serve("--script", str(script))
    try:
        answer = httpx2.post(f"{base}/openai/v1/chat/completions", json=BODY).json()
        assert answer["choices"][0]["message"]["content"] == "from the file"
        failing = f"{base}/scenarios/auth_expired_mid_run/anthropic/v1/messages"
        body = {**BODY, "max_tokens": 5}
        first = httpx2.post(failing, json=body)
        assert first.status_code == 200
        assert first.json()["stop_reason"] == "tool_use"
        tool_result = {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "x", "content": "ok"}],
        }
        second = httpx2.post(failing, json={**body, "messages": [*BODY["messages"], tool_result]})
        assert second.status_code == 401
        assert second.json()["error"]["type"] == "authentication_error"
    finally:
        _stop(process)
    assert process.returncode == 0
