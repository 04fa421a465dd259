"""Replay: a session recorded (from a model double standing in for the provider) is served
again to the real, unmodified clients, frame by frame."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

import stuntset
from stuntset import scenarios
from stuntset.cassettes import (
    Cassette,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    load_cassette,
)
from stuntset.cassettes.record import record
from stuntset.cassettes.replay import (
    CassetteMismatch,
    Replayer,
    UnusedInteractions,
    request_key,
)
from stuntset.errors import UsageError

ASK = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def chat_cassette(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cassettes") / "chat.jsonl"
    with (
        ExitStack() as stack,
        stuntset.serve(scenarios.build("multi_turn", turns=2)) as upstream,
        record(upstream.url("openai"), path) as rec,
    ):
        client = stack.enter_context(openai.OpenAI(api_key="k", base_url=rec.url))
        stream = client.chat.completions.create(
            model="gpt-x", messages=ASK, stream=True, metadata={"run": "1"}
        )
        assert (
            "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            == "Answer number 1."
        )
        whole = client.chat.completions.create(
            model="gpt-x", messages=[*ASK, {"role": "user", "content": "more"}]
        )
        assert whole.choices[0].message.content == "Answer number 2."
    return path


def openai_client(replayer: Replayer) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="k",
        base_url="http://replay/v1",
        http_client=httpx2.Client(transport=replayer.transport()),
    )


@pytest.mark.slow
def test_replay_serves_the_recording_to_the_real_client(chat_cassette: Path) -> None:
    replayer = Replayer(load_cassette(chat_cassette))
    client = openai_client(replayer)
    # volatile fields (metadata) may differ from the recording
    stream = client.chat.completions.create(
        model="gpt-x", messages=ASK, stream=True, metadata={"run": "2"}
    )
    assert (
        "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Answer number 1."
    )
    with pytest.raises(
        UnusedInteractions,
        match=r"1 recorded interaction\(s\) were never requested: i-2 \(POST /chat/completions\)",
    ):
        replayer.verify()
    replayer.verify(allow_unused=["i-2"])
    whole = client.chat.completions.create(
        model="gpt-x", messages=[*ASK, {"role": "user", "content": "more"}]
    )
    assert whole.choices[0].message.content == "Answer number 2."
    replayer.verify()


@pytest.mark.anyio
# openai's async stream leaves its inner generators to the garbage collector, which trio reports
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_async_and_legacy_httpx_clients_replay_too(chat_cassette: Path) -> None:
    replayer = Replayer(load_cassette(chat_cassette))
    client = openai.AsyncOpenAI(
        api_key="k",
        base_url="http://replay/v1",
        http_client=httpx.AsyncClient(transport=replayer.transport()),
    )  # type: ignore[arg-type]
    stream = await client.chat.completions.create(model="gpt-x", messages=ASK, stream=True)
    assert (
        "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        == "Answer number 1."
    )


def test_an_unmatched_request_shows_the_nearest_and_the_difference(chat_cassette: Path) -> None:
    client = openai_client(Replayer(load_cassette(chat_cassette)))
    with pytest.raises(CassetteMismatch) as info:
        client.chat.completions.create(model="gpt-other", messages=ASK, stream=True)
    message = str(info.value)
    assert "no recorded interaction in" in message
    assert "matches POST /v1/chat/completions (model 'gpt-other')" in message
    assert "nearest: i-1" in message
    assert 'body.model: recorded "gpt-x", got "gpt-other"' in message
    assert "Re-record" in message


def test_sessions_replay_in_their_own_order() -> None:
    def chat(index: int, session: str, question: str, answer: str) -> Interaction:
        body = {"model": "m", "messages": [{"role": "user", "content": question}]}
        return Interaction(
            id=f"i-{index}",
            wire="openai-chat",
            session=session,
            request=RecordedRequest(method="POST", path="/v1/chat/completions", body=body),
            response=RecordedResponse(
                status=200,
                body={
                    "id": f"c{index}",
                    "object": "chat.completion",
                    "created": 1,
                    "model": "m",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": answer},
                        }
                    ],
                },
            ),
        )

    cassette = Cassette(
        interactions=[
            chat(1, "main", "plan", "delegating"),
            chat(2, "sub", "plan", "sub-agent plan"),
            chat(3, "sub", "work", "sub-agent done"),
            chat(4, "main", "summarise", "all done"),
        ]
    )
    replayer = Replayer(cassette)
    client = openai.OpenAI(
        api_key="k",
        base_url="http://replay/v1",
        http_client=httpx2.Client(transport=replayer.transport()),
    )

    def ask(question: str) -> str | None:
        return (
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": question}]
            )
            .choices[0]
            .message.content
        )

    # identical first requests bind to sessions in first-request order; then each session
    # continues with its own stream whatever the interleaving
    assert ask("plan") == "delegating"
    assert ask("plan") == "sub-agent plan"
    assert ask("summarise") == "all done"
    assert ask("work") == "sub-agent done"
    replayer.verify()
    with pytest.raises(CassetteMismatch, match="All 4 recorded interactions were played"):
        ask("plan")


def test_recorded_pace_is_kept_on_request() -> None:
    frames = [
        Frame(t=0.0, event="message_start", data="{}"),
        Frame(t=0.05, event="ping", data="{}"),
    ]
    interaction = Interaction(
        id="i-1",
        wire="anthropic-messages",
        request=RecordedRequest(method="POST", path="/v1/messages", body=None),
        response=RecordedResponse(status=200, frames=frames),
    )
    delays = [
        d
        for d, _ in Replayer(Cassette(interactions=[interaction]), pace="scaled", scale=2).delays(
            [(0.0, b""), (0.05, b"")]
        )
    ]
    assert delays == [0.0, 0.1]
    assert [d for d, _ in Replayer(Cassette(), pace="none").delays([(0.0, b""), (0.05, b"")])] == [
        0.0,
        0.0,
    ]
    with pytest.raises(UsageError, match="pace='fast'"):
        Replayer(Cassette(), pace="fast")  # type: ignore[arg-type]


def test_anthropic_stream_helper_over_a_recording(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with (
        stuntset.serve(scenarios.build("interleaved_streaming")) as upstream,
        record(upstream.url("anthropic"), path) as rec,
        anthropic.Anthropic(api_key="k", base_url=rec.url) as live,
        live.messages.stream(model="claude-x", max_tokens=100, messages=ASK) as stream,
    ):
        recorded = stream.get_final_message()
    replayer = Replayer(load_cassette(path))
    client = anthropic.Anthropic(
        api_key="k",
        base_url="http://replay",
        http_client=httpx2.Client(transport=replayer.transport()),
    )
    with client.messages.stream(model="claude-x", max_tokens=100, messages=ASK) as stream:
        replayed = stream.get_final_message()
    assert replayed.model_dump() == recorded.model_dump()


def _turns(sessions: int, turns: int) -> Cassette:
    return Cassette(
        interactions=[
            Interaction(
                id=f"i-{s}-{t}",
                wire="openai-chat",
                session=f"s-{s}",
                request=RecordedRequest(
                    method="POST",
                    path="/v1/chat/completions",
                    body={"model": "m", "messages": [{"role": "user", "content": f"{s}/{t}"}]},
                ),
                response=RecordedResponse(status=200, body={"n": f"{s}/{t}"}),
            )
            for s in range(sessions)
            for t in range(turns)
        ]
    )


def _ask(replayer: Replayer, text: str, **extra: Any) -> str:
    body = {"model": "m", "messages": [{"role": "user", "content": text}], **extra}
    return str(replayer.match("POST", "/v2/chat/completions", body).response.body["n"])


def test_many_sessions_asked_out_of_order_each_get_their_own_stream() -> None:
    replayer = Replayer(_turns(50, 3))
    for t in range(3):
        for s in reversed(range(50)):
            assert _ask(replayer, f"{s}/{t}", metadata={"volatile": s}) == f"{s}/{t}"
    replayer.verify()
    with pytest.raises(CassetteMismatch, match="All 150 recorded interactions were played"):
        _ask(replayer, "0/0")


def test_a_request_not_next_in_its_session_is_a_miss_explained_by_the_nearest() -> None:
    replayer = Replayer(_turns(2, 2))
    with pytest.raises(CassetteMismatch) as raised:
        _ask(replayer, "0/1")  # the second turn before the first
    message = str(raised.value)
    assert "nearest: i-0-0 (session 's-0')" in message
    assert 'body.messages: recorded [{"content": "0/0"' in message
    assert _ask(replayer, "0/0") == "0/0"  # a miss consumes nothing


def test_equal_as_python_compares_still_matches_when_written_apart() -> None:
    """1 and 1.0 (and true) are equal under ==, which matching always used; canonical JSON
    writes them apart, so the index misses and the field-by-field comparison finds them."""
    cassette = Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="openai-chat",
                request=RecordedRequest(
                    method="POST", path="/v1/chat/completions", body={"temperature": 1.0}
                ),
                response=RecordedResponse(status=200, body={"n": "one"}),
            )
        ]
    )
    replayer = Replayer(cassette)
    assert replayer.match("POST", "/chat/completions", {"temperature": 1}).id == "i-1"
    nan = Replayer(cassette)
    with pytest.raises(CassetteMismatch):
        nan.match("POST", "/chat/completions", {"temperature": float("nan")})


def test_request_keys_are_canonical() -> None:
    a = request_key("POST", "/v1/messages", {"b": [1, {"y": 2, "x": 3}], "a": "é", "user": "u1"})
    b = request_key("POST", "/anthropic/v1/messages", {"a": "é", "b": [1, {"x": 3, "y": 2}]})
    assert a == b  # key order, base-URL prefix and volatile fields do not count
    assert request_key("POST", "/v1/messages", {"a": float("nan")}) is None
    assert request_key("POST", "/v1/messages", {"a": {1, 2}}) is None


def test_a_request_recorded_in_many_sessions_binds_them_in_recording_order() -> None:
    """Identical first turns (the heap path): each ask binds the first session still waiting,
    then each session continues with its own turns, whatever the order they are asked in."""
    interactions = []
    for s in range(30):
        for t, text in enumerate(["start", f"{s}/1", "same end"]):
            interactions.append(
                Interaction(
                    id=f"i-{s}-{t}",
                    wire="openai-chat",
                    session=f"s-{s}",
                    request=RecordedRequest(
                        method="POST",
                        path="/v1/chat/completions",
                        body={"model": "m", "messages": [{"role": "user", "content": text}]},
                    ),
                    response=RecordedResponse(status=200, body={"n": f"{s}/{t}"}),
                )
            )
    replayer = Replayer(Cassette(interactions=interactions))
    assert [_ask(replayer, "start") for _ in range(30)] == [f"{s}/0" for s in range(30)]
    for s in reversed(range(30)):
        assert _ask(replayer, f"{s}/1") == f"{s}/1"
    # the last turns are all alike: sessions 0, 1, 2… in recording order again
    assert [_ask(replayer, "same end") for _ in range(30)] == [f"{s}/2" for s in range(30)]
    replayer.verify()
