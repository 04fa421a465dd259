"""The official ``openai`` 3.x SDK, unmodified, against the model double: sync, async, the
stream helpers, and the fault list of reliability.md §1.6 on Chat Completions and Responses."""

from __future__ import annotations

from typing import Any

import httpx2
import openai
import pytest

from stuntset.doubles.model import StandIn
from stuntset.script import (
    Delay,
    Exit,
    HttpError,
    Match,
    RateLimit,
    Reasoning,
    Script,
    Stall,
    StreamCut,
    Text,
    ToolCall,
    Turn,
    Usage,
)

from ._clients import Mode, openai_client

MESSAGES: Any = [{"role": "user", "content": "Hello"}]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the openai async client is only exercised on asyncio here


def chat(stand_in: StandIn, **options: Any) -> openai.OpenAI:
    return openai_client(stand_in, "in-process", **options)


def test_sync_create_stream_and_helper_agree(stand_in: StandIn) -> None:
    turn = [
        Text("Twenty chunks of text " * 2, chunks=20),
        ToolCall("lookup", {"q": "x"}),
        Usage(7, 5),
    ]
    stand_in.play(Script.of(turn, turn, turn))
    client = chat(stand_in)
    whole = client.chat.completions.create(model="m", messages=MESSAGES).choices[0].message
    chunks = list(
        client.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
    )
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 12
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    with client.chat.completions.stream(model="m", messages=MESSAGES) as events:
        kinds = {e.type for e in events}
        final = events.get_final_completion().choices[0].message
    assert whole.content == streamed == final.content
    assert final.tool_calls
    assert final.tool_calls[0].function.arguments == '{"q":"x"}'
    assert {"content.delta", "tool_calls.function.arguments.done"} <= kinds


@pytest.mark.anyio
async def test_async_chat_and_responses(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("async hello")], [Reasoning("hmm"), Text("async response")]))
    client = openai.AsyncOpenAI(
        http_client=httpx2.AsyncClient(transport=stand_in.transport()), api_key="k"
    )
    stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert (
        "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        == "async hello"
    )
    async with client.responses.stream(model="m", input="hi") as events:
        async for _ in events:
            pass
        response = await events.get_final_response()
    assert response.output_text == "async response"
    assert [item.type for item in response.output] == ["reasoning", "message"]


def test_responses_create_whole_and_raw_stream(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("hi"), ToolCall("f", {"a": 1}), Usage(3, 2)], [Text("again")]))
    client = chat(stand_in)
    response = client.responses.create(model="m", input="x")
    assert response.object == "response"
    assert response.status == "completed"
    assert response.output[1].type == "function_call"
    assert response.output[1].arguments == '{"a":1}'
    assert response.usage is not None
    assert response.usage.total_tokens == 5
    events = list(client.responses.create(model="m", input="x", stream=True))
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"
    assert len({e.response.id for e in events if hasattr(e, "response")}) == 1


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (403, openai.PermissionDeniedError),
        (404, openai.NotFoundError),
        (409, openai.ConflictError),
        (422, openai.UnprocessableEntityError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (502, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
def test_any_status_is_the_sdks_own_error(
    stand_in: StandIn, status: int, error: type[Exception]
) -> None:
    stand_in.play(Script.of([HttpError(status, message="scripted failure")]))
    with pytest.raises(error) as raised:
        chat(stand_in, max_retries=0).chat.completions.create(model="m", messages=MESSAGES)
    assert raised.value.status_code == status  # type: ignore[attr-defined]
    assert raised.value.message == f"Error code: {status} - scripted failure"  # type: ignore[attr-defined]
    assert raised.value.request_id == "req-1"  # type: ignore[attr-defined]


def test_fail_the_first_n_attempts_then_succeed(stand_in: StandIn) -> None:
    """The SDK counts its attempts in x-stainless-retry-count; 2 failures recover."""
    stand_in.play(
        Script.of(
            Turn(steps=(HttpError(500, retry_after_ms=1),), match=Match(retry_count=0)),
            Turn(steps=(HttpError(502, retry_after=0.001),), match=Match(retry_count=1)),
            Turn(steps=(Text("third time lucky"),), match=Match(retry_count=2)),
        )
    )
    answer = chat(stand_in).chat.completions.create(model="m", messages=MESSAGES)
    assert answer.choices[0].message.content == "third time lucky"


def test_should_retry_header_overrides_the_status(stand_in: StandIn) -> None:
    stand_in.play(
        Script.of(
            [HttpError(400, should_retry=True, retry_after_ms=1)],
            [Text("ok")],
            [HttpError(500, should_retry=False)],
        )
    )
    client = chat(stand_in)
    assert (
        client.chat.completions.create(model="m", messages=MESSAGES).choices[0].message.content
        == "ok"
    )
    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="m", messages=MESSAGES)
    assert len(stand_in.requests) == 3


@pytest.mark.stand_in(allow_unused_turns=True)
def test_a_retry_after_above_120_s_is_not_retried(stand_in: StandIn) -> None:
    stand_in.play(
        Script.of(
            Turn(
                steps=(
                    RateLimit(retry_after=121, retry_after_ms=None, allow_long_retry_after=True),
                ),
                times=3,
            )
        )
    )
    with pytest.raises(openai.RateLimitError) as raised:
        chat(stand_in).chat.completions.create(model="m", messages=MESSAGES)
    assert raised.value.response.headers["retry-after"] == "121"
    assert len(stand_in.requests) == 1


def test_in_band_errors(stand_in: StandIn) -> None:
    stand_in.play(
        Script.of(
            [Text("partial"), HttpError(500, message="boom")],
            [Text("partial"), HttpError(500, message="boom")],
        )
    )
    client = chat(stand_in)
    with pytest.raises(openai.APIError, match="boom"):
        list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))
    events = list(client.responses.create(model="m", input="x", stream=True))
    assert events[-1].type == "response.failed"
    assert events[-1].response.error is not None
    assert events[-1].response.error.message == "boom"


def test_stream_cut_cleanly_after_k_events_is_silently_short(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("one two three four"), StreamCut(after_events=3, clean=True)]))
    chunks = list(chat(stand_in).chat.completions.create(model="m", messages=MESSAGES, stream=True))
    assert len(chunks) == 3
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "one two"


@pytest.mark.parametrize("mode", ["in-process", "loopback"])
@pytest.mark.parametrize(
    ("fault", "cause"),
    [
        (Exit(), "Server disconnected without sending a response"),
        (StreamCut(), "peer closed connection without sending complete message body"),
        (Stall(), "timed out"),
    ],
    ids=["accept-then-close", "truncated-length", "never-respond"],
)
def test_connection_faults_on_a_whole_response(
    stand_in: StandIn, fault: Any, cause: str, mode: Mode
) -> None:
    stand_in.play(Script.of([Text("never whole"), fault]))
    client = openai_client(stand_in, mode, max_retries=0, timeout=httpx2.Timeout(5.0, read=0.2))
    with pytest.raises(openai.APIConnectionError) as raised:
        client.chat.completions.create(model="m", messages=MESSAGES)
    assert cause in str(raised.value.__cause__)


def test_a_first_byte_later_than_the_read_timeout_times_out(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Delay(5.0), Text("too late")]))
    client = chat(stand_in, max_retries=0, timeout=httpx2.Timeout(5.0, read=1.0))  # fake clock
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="m", messages=MESSAGES)


@pytest.mark.slow
@pytest.mark.real_time
def test_real_time_stall_and_slow_drip(stand_in: StandIn) -> None:
    """The read timeout is per read: a drip never times out, a stall does (real clock)."""
    stand_in.play(Script.of([Text("a b c d e", interval=0.03)], [Text("a"), Stall()]))
    # real time: each 0.03 s drip must beat the read timeout even on a loaded machine, so
    # the timeout is wide (the stall then takes it in full)
    client = chat(stand_in, max_retries=0, timeout=httpx2.Timeout(5.0, read=1.0))
    drip = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in drip) == "a b c d e"
    with pytest.raises(openai.APITimeoutError):
        list(client.chat.completions.create(model="m", messages=MESSAGES, stream=True))


def test_auth_expiry_after_n_successful_requests(stand_in: StandIn) -> None:
    from stuntset.script import AuthExpired

    stand_in.play(Script.of(Turn(steps=(Text("fine"),), times=3), [AuthExpired()]))
    client = chat(stand_in)
    for _ in range(3):
        client.chat.completions.create(model="m", messages=MESSAGES)
    with pytest.raises(openai.AuthenticationError):
        client.chat.completions.create(model="m", messages=MESSAGES)
    assert len(stand_in.requests) == 4
