"""The hardened Codex client (providers/codex/_client.py): a request cannot outlive its
transport, whether the transport is gone before the request is written or after."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

import pytest
from openai_codex.client import CodexConfig
from openai_codex.errors import TransportClosedError

from stuntset.providers.codex._client import Client


@pytest.fixture
def start() -> Iterator[Callable[[str], Client]]:
    made: list[Client] = []

    def start(program: str) -> Client:
        client = Client(config=CodexConfig(launch_args_override=(sys.executable, "-c", program)))
        client.start()
        made.append(client)
        return client

    yield start
    for client in made:
        process = client._proc
        # a request that could not be written leaves its bytes in stdin's buffer: closing
        # flushes them into the broken pipe again
        with contextlib.suppress(BrokenPipeError):
            client.close()
        if process is not None:  # the SDK leaves these to the garbage collector
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    with contextlib.suppress(BrokenPipeError):
                        stream.close()
            process.wait(10)


def _reader_gone(client: Client) -> None:
    reader = client._reader_thread
    assert reader is not None
    reader.join(10)
    assert not reader.is_alive()


def test_a_request_written_after_the_reader_is_gone_ends_instead_of_waiting(
    start: Callable[[str], Client],
) -> None:
    # the process closes its stdout (the SDK's reader ends) but still reads its stdin, so the
    # request is written; only the reader check can end the wait (real time: one 0.1 s check)
    client = start("import os, sys; os.close(1); sys.stdin.read()")
    _reader_gone(client)
    with pytest.raises(TransportClosedError, match="thread/start: the Codex app-server"):
        client._request_raw("thread/start", {})
    assert client._router._response_waiters == {}


def test_a_request_that_cannot_be_written_leaves_no_waiter(start: Callable[[str], Client]) -> None:
    client = start("pass")
    assert client._proc is not None
    client._proc.wait(10)
    _reader_gone(client)
    with pytest.raises(BrokenPipeError):
        client._request_raw("turn/interrupt")
    assert client._router._response_waiters == {}
