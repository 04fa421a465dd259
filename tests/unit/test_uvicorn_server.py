"""The loopback servers stop when told to, not on uvicorn's next poll tick."""

from __future__ import annotations

import threading

import httpx2
import uvicorn

from stuntset._bind import listening_socket
from stuntset._uvicorn_server import ReadyServer


async def _hello(scope: dict[str, object], receive: object, send: object) -> None:
    assert callable(send)
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


def _serve(server_tick: float) -> tuple[ReadyServer, threading.Thread, str]:
    sock = listening_socket("127.0.0.1", 0)
    config = uvicorn.Config(_hello, http="httptools", lifespan="off", log_config=None)
    ready = threading.Event()
    server = ReadyServer(config, ready)
    server.tick = server_tick
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert ready.wait(10)
    host, port = sock.getsockname()[:2]
    return server, thread, f"http://{host}:{port}"


def test_setting_should_exit_from_another_thread_wakes_the_server_at_once() -> None:
    # a tick of an hour: a server that waited for its tick to notice would not stop here
    server, thread, url = _serve(3600.0)
    with httpx2.Client() as client:  # an idle keep-alive connection is open at the stop
        assert client.get(url).text == "hello"
        server.should_exit = True
        thread.join(10)
    assert not thread.is_alive()
    assert server.should_exit


def test_the_tick_still_runs_while_serving() -> None:
    server, thread, url = _serve(0.001)
    ticks = threading.Event()
    original = server.on_tick

    async def on_tick(counter: int) -> bool:
        if counter >= 3:
            ticks.set()
        return await original(counter)

    server.on_tick = on_tick  # type: ignore[method-assign]
    assert ticks.wait(10)
    assert httpx2.get(url).text == "hello"
    server.should_exit = True
    thread.join(10)
    assert not thread.is_alive()
