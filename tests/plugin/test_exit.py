"""A pytest run that used the plugin's fixtures ends clean: nothing the plugin opened for the
session (the shared loopback server, fake CLI folders, the seams) is left for the interpreter's
last collection, which would print ``ResourceWarning: unclosed …`` after ``[100%]`` — the very
thing the plugin fails users' tests for."""

from __future__ import annotations

import sys

import pytest

USER_SUITE = """
import subprocess

import httpx2
import pytest


@pytest.mark.stand_in("happy_path")
def test_over_loopback(stand_in):
    with httpx2.Client(base_url=stand_in.url("openai")) as client:
        reply = client.post("/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert reply.status_code == 200


@pytest.mark.stand_in("happy_path")
def test_in_process(stand_in):
    with httpx2.Client(transport=stand_in.transport(), base_url="http://double/v1") as client:
        assert client.post("/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}).is_success


@pytest.mark.fake_claude("happy_path")
def test_a_fake_cli(fake_claude):
    done = subprocess.run(
        [str(fake_claude.path), "-p", "hi", "--output-format", "stream-json", "--verbose"],
        capture_output=True,
        check=True,
    )
    assert b'"type":"result"' in done.stdout.replace(b" ", b"")
"""


# the control: a suite that keeps a connected socket in a module global until the end
LEAKY_SUITE = """
import socket

KEPT = []


def test_keeps_a_socket():
    server = socket.create_server(("127.0.0.1", 0))
    KEPT.append(server)
"""


def run_at_exit(pytester: pytest.Pytester, suite: str) -> tuple[int, str]:
    pytester.makepyfile(test_user=suite)
    # -X dev shows ResourceWarning (the default filters hide it); -W error makes one raised
    # during the run an error, and one at the interpreter's exit is printed on stderr
    result = pytester.run(
        sys.executable,
        "-X",
        "dev",
        "-W",
        "error::ResourceWarning",
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-W",
        "error::ResourceWarning",
    )
    return result.ret, result.stdout.str() + result.stderr.str()


@pytest.mark.slow  # a pytest in a subprocess, with every plugin
def test_the_run_ends_without_a_resource_warning(pytester: pytest.Pytester) -> None:
    status, output = run_at_exit(pytester, USER_SUITE)
    assert status == 0, output
    assert "3 passed" in output
    assert "ResourceWarning" not in output
    assert "unclosed" not in output


@pytest.mark.slow
def test_a_socket_left_for_the_exit_is_seen(pytester: pytest.Pytester) -> None:
    status, output = run_at_exit(pytester, LEAKY_SUITE)
    assert status == 0, output  # it passed, and only the exit says what it left
    assert "ResourceWarning: unclosed <socket.socket" in output
