"""`stuntset console`, `stuntset daemon --console` and `stuntset serve --console` as real
processes: each announces the console, which answers only with its token."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


@contextmanager
def command(*argv: str) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "stuntset.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        assert process.stdout is not None
        assert process.stderr is not None
        process.stdout.close()
        process.stderr.close()


def console_url(line: str) -> str:
    found = re.search(r"(http://127\.0\.0\.1:\d+/console/\?token=[\w-]+)", line)
    assert found, line
    return found.group(1)


def logs_in(url: str) -> None:
    base = url.split("?")[0]
    assert httpx.get(base + "requests").status_code == 401
    login = httpx.get(url)
    assert login.status_code == 303
    assert "set-cookie" not in login.headers  # the token stays in the address, never a cookie
    page = httpx.get(base.removesuffix("/console/") + login.headers["location"])
    assert page.status_code == 200
    assert "<h1>Requests</h1>" in page.text


def test_stuntset_console_serves_the_console_and_a_model_double(tmp_path: Path) -> None:
    with command("console", "--db", str(tmp_path / "host.db"), "--cassettes", str(tmp_path)) as p:
        assert p.stdout is not None
        url = console_url(p.stdout.readline())
        double = p.stdout.readline()
        base = re.search(r"(http://127\.0\.0\.1:\d+)/openai/v1", double)
        assert base, double
        logs_in(url)
        reply = httpx.post(
            base.group(1) + "/openai/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert reply.status_code == 200
        page = httpx.get(url, follow_redirects=True)  # to the Requests page, with the token
        assert "1 request(s)" in page.text
        assert "openai-chat" in page.text
    assert p.returncode == 0


def test_stuntset_daemon_console_mounts_the_console(tmp_path: Path) -> None:
    token_file = tmp_path / "run" / "daemon.json"
    argv = ["daemon", "--db", str(tmp_path / "h.db"), "--token-file", str(token_file)]
    with command(*argv, "--console") as process:
        assert process.stdout is not None
        process.stdout.readline()
        assert "/console/?token=<the token in" in process.stdout.readline()
        info = json.loads(token_file.read_text())
        logs_in(f"{info['url']}/console/?token={info['token']}")
        sessions = httpx.get(
            f"{info['url']}/console/sessions",
            headers={"Authorization": f"Bearer {info['token']}"},
        )
        assert "No sessions yet." in sessions.text


def test_stuntset_serve_console_guards_the_console_not_the_double() -> None:
    with command("serve", "--console") as process:
        assert process.stdout is not None
        announce = ""
        for _ in range(20):  # the banner: one line per wire, then the console's
            announce = process.stdout.readline()
            if "console:" in announce:
                break
        url = console_url(announce)
        logs_in(url)
        base = url.split("/console/")[0]
        reply = httpx.post(
            base + "/openai/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert reply.status_code == 200  # the double needs no console token
        assert (
            httpx.get(base + "/console/requests", headers={"Origin": "http://x"}).status_code == 403
        )
