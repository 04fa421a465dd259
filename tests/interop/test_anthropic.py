"""The official ``anthropic`` 2.x SDK, unmodified, against the model double: create, the
stream helper and ``get_final_message``, thinking with signatures, tool_use input streamed as
``input_json_delta``, in-band errors, 529, and both auth header forms."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx2
import pytest

from stuntset.doubles.model import StandIn
from stuntset.script import HttpError, Overloaded, Reasoning, Script, Text, ToolCall, Usage

from ._clients import Mode, anthropic_client

MESSAGES: Any = [{"role": "user", "content": "Hello"}]
TURN = [
    Reasoning("Think first.", signature="sig-123"),
    Text("Calling."),
    ToolCall("lookup", {"q": "x", "n": [1, 2]}, fragments=4),
    Usage(11, 6),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["in-process", "loopback"])
def test_create_and_stream_helper_agree(stand_in: StandIn, mode: Mode) -> None:
    stand_in.play(Script.of(TURN, TURN))
    client = anthropic_client(stand_in, mode)
    whole = client.messages.create(model="claude-x", max_tokens=100, messages=MESSAGES)
    with client.messages.stream(model="claude-x", max_tokens=100, messages=MESSAGES) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    for message in (whole, final):
        assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
        thinking, text, tool = message.content
        assert thinking.type == "thinking"
        assert thinking.signature == "sig-123"
        assert text.type == "text"
        assert text.text == "Calling."
        assert tool.type == "tool_use"
        assert tool.input == {"q": "x", "n": [1, 2]}
        assert message.stop_reason == "tool_use"
        assert (message.usage.input_tokens, message.usage.output_tokens) == (11, 6)
    assert kinds[0] == "message_start"
    assert kinds[-1] == "message_stop"
    assert "input_json" in kinds
    assert "signature" in kinds
    assert final.id.startswith("msg-")


@pytest.mark.anyio
async def test_async_stream(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("async words", chunks=4)]))
    client = anthropic.AsyncAnthropic(
        http_client=httpx2.AsyncClient(transport=stand_in.transport()), api_key="k"
    )
    async with client.messages.stream(model="c", max_tokens=10, messages=MESSAGES) as stream:
        text = "".join([piece async for piece in stream.text_stream])
    assert text == "async words"


def test_a_mid_stream_error_event_raises_during_iteration(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("partial answer"), Overloaded()]))
    seen: list[str] = []
    client = anthropic_client(stand_in, "in-process")
    stream = client.messages.stream(model="c", max_tokens=10, messages=MESSAGES)
    with pytest.raises(anthropic.APIStatusError) as raised, stream as events:
        seen.extend(events.text_stream)
    assert "".join(seen) == "partial answer"
    assert raised.value.status_code == 200  # the HTTP status was 200: not an OverloadedError
    assert not isinstance(raised.value, anthropic.OverloadedError)
    assert raised.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, anthropic.BadRequestError),
        (401, anthropic.AuthenticationError),
        (403, anthropic.PermissionDeniedError),
        (404, anthropic.NotFoundError),
        (413, anthropic.APIStatusError),
        (429, anthropic.RateLimitError),
        (500, anthropic.InternalServerError),
        (529, anthropic.OverloadedError),
    ],
)
def test_statuses_carry_anthropic_error_types(
    stand_in: StandIn, status: int, error: type[Exception]
) -> None:
    stand_in.play(Script.of([HttpError(status)]))
    with pytest.raises(error) as raised:
        anthropic_client(stand_in, "in-process", max_retries=0).messages.create(
            model="c", max_tokens=10, messages=MESSAGES
        )
    assert raised.value.status_code == status  # type: ignore[attr-defined]
    assert raised.value.request_id == "req-1"  # type: ignore[attr-defined]


def test_both_auth_header_forms_are_accepted(stand_in: StandIn) -> None:
    """anthropic 2.x sends Authorization: Bearer; 0.x and Claude Code send x-api-key."""
    stand_in.play(Script.of([Text("bearer")], [Text("api key")]))
    anthropic_client(stand_in, "in-process").messages.create(
        model="c", max_tokens=10, messages=MESSAGES
    )
    raw = httpx2.Client(transport=stand_in.transport())
    answer = raw.post(
        "http://stand-in/v1/messages?beta=true",
        json={"model": "c", "max_tokens": 10, "messages": MESSAGES},
        headers={"x-api-key": "sk-ant-secret", "anthropic-version": "2023-06-01"},
    )
    assert answer.json()["content"][0]["text"] == "api key"
    bearer, api_key = stand_in.requests
    assert bearer.headers["authorization"] == "Bearer <redacted>"
    assert api_key.headers["x-api-key"] == "<redacted>"
    assert api_key.query == "beta=true"


def test_every_stream_event_has_an_event_line_matching_its_type(stand_in: StandIn) -> None:
    """Without ``event:`` lines the SDK yields nothing at all (protocols.md pitfall 1)."""
    import json

    stand_in.play(Script.of(TURN))
    raw = httpx2.Client(transport=stand_in.transport())
    body = raw.post(
        "http://stand-in/v1/messages",
        json={"model": "c", "max_tokens": 9, "stream": True, "messages": MESSAGES},
    ).text
    frames = [f for f in body.split("\n\n") if f]
    for frame in frames:
        event, data = frame.split("\n")
        assert event.removeprefix("event: ") == json.loads(data.removeprefix("data: "))["type"]
    assert frames[-1].startswith("event: message_stop")
