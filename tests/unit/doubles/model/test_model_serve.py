"""The loopback server: 127.0.0.1 on a free port, TCP_NODELAY, per-stand-in journals, scenario
base URLs, and a shutdown that ends stalled responses instead of hanging."""

from __future__ import annotations

import socket
import threading

import anthropic
import httpx2
import openai
import pytest

import stuntset
from stuntset.doubles.model import StandIn
from stuntset.doubles.model._loopback_server import _listening_socket
from stuntset.errors import UsageError
from stuntset.script import Script, Stall, Text


def test_the_listening_socket_is_loopback_with_nodelay() -> None:
    sock = _listening_socket("127.0.0.1", 0)
    try:
        host, port = sock.getsockname()
        assert host == "127.0.0.1"
        assert port > 0
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
    finally:
        sock.close()


def test_serve_answers_both_providers_and_stops_by_itself() -> None:
    with stuntset.serve(Script.of([Text("from openai")], [Text("from anthropic")])) as stand_in:
        url = stand_in.url("openai")
        assert url.startswith("http://127.0.0.1:")
        assert url.endswith("/openai/v1")
        with openai.OpenAI(base_url=url, api_key="k") as chat:
            answer = chat.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )
        assert answer.choices[0].message.content == "from openai"
        with anthropic.Anthropic(base_url=stand_in.url("anthropic"), api_key="k") as claude:
            message = claude.messages.create(
                model="c", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
        assert message.content[0].type == "text"
        assert message.content[0].text == "from anthropic"
        port = int(stand_in.base_url.rsplit(":", 1)[1])
        stand_in.verify()
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(f"http://127.0.0.1:{port}/v1/models")


def test_two_stand_ins_never_share_turns_or_journal() -> None:
    with StandIn(Script.of([Text("one")])) as first, StandIn(Script.of([Text("two")])) as second:
        assert first.base_url != second.base_url
        for stand_in, expected in ((first, "one"), (second, "two")):
            # closed: a dropped client's socket would be finalised (and warn) in a later test
            with openai.OpenAI(base_url=stand_in.url("openai"), api_key="k") as client:
                reply = client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "x"}]
                )
            assert reply.choices[0].message.content == expected
        assert len(first.requests) == len(second.requests) == 1


def test_scenario_base_urls() -> None:
    with stuntset.serve() as stand_in:
        with openai.OpenAI(
            base_url=stand_in.url("openai", scenario="rate_limited"), api_key="k"
        ) as client:
            reply = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )
        assert reply.choices[0].message.content == "Sorry for the wait. Here is the answer."
        assert [r.status for r in stand_in.requests] == [429, 200]
        with pytest.raises(UsageError, match="speaks 'openai'"):
            stand_in.url("mistral")  # type: ignore[arg-type]


def test_closing_ends_a_stalled_response() -> None:
    stand_in = stuntset.serve(Script.of([Text("wait for it"), Stall()]))
    errors: list[BaseException] = []
    started = threading.Event()

    def consume() -> None:
        client = httpx2.Client(timeout=httpx2.Timeout(5.0, read=None))
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
        try:
            with client.stream(
                "POST", stand_in.url("openai") + "/chat/completions", json=body
            ) as r:
                for line in r.iter_lines():
                    if "wait" in line:
                        started.set()
        except httpx2.HTTPError as error:
            errors.append(error)
        finally:
            started.set()
            client.close()

    thread = threading.Thread(target=consume)
    thread.start()
    assert started.wait(10)
    stand_in.close()
    thread.join(10)
    assert not thread.is_alive()
    assert [type(e) for e in errors] == [httpx2.RemoteProtocolError]
