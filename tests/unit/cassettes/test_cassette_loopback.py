"""The cassettes' loopback plumbing (cassettes/_loopback.py): a request body read whole,
however many ASGI messages it came in, and an app served on 127.0.0.1 until the block ends."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest

from stuntset.cassettes._loopback import read_body, serving


def test_a_body_in_several_messages_is_read_whole() -> None:
    messages = [
        {"type": "http.request", "body": b"ab", "more_body": True},
        {"type": "http.request", "more_body": True},  # a message without a body
        {"type": "http.request", "body": b"c", "more_body": False},
    ]

    async def receive() -> dict[str, Any]:
        return messages.pop(0)

    assert anyio.run(read_body, receive) == b"abc"
    assert messages == []


def test_an_app_is_served_until_the_block_ends() -> None:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(receive)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body[::-1]})

    with serving(app, name="test-loopback") as url, httpx2.Client(base_url=url) as client:
        assert url.startswith("http://127.0.0.1:")
        assert client.post("/", content=b"stressed").content == b"desserts"


# uvicorn ends its thread with SystemExit (ignored by threading, reported by pytest)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_an_app_that_cannot_load_fails_at_once_naming_the_server() -> None:
    # uvicorn cannot import the app and ends its thread before start-up: no 30 s wait
    with (
        pytest.raises(RuntimeError, match=r"test-loopback could not start on 127\.0\.0\.1:0"),
        serving("no_such_module_here:app", name="test-loopback"),
    ):
        pass  # pragma: no cover - never entered
