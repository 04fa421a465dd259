"""Connection resets (TCP RST, not a clean close) and ``retry-after`` as an HTTP date."""

from __future__ import annotations

import time
from email.utils import parsedate_to_datetime

import httpx2
import openai
import pytest

import stuntset
from stuntset.script import Exit, HttpError, RateLimit, Script, Text

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


def cut(reset: bool) -> Script:
    return Script.of([Text("partial answer"), Exit(reset=reset)])


@pytest.mark.parametrize(
    ("reset", "error"),
    [(True, httpx2.ReadError), (False, httpx2.RemoteProtocolError)],
    ids=["reset", "close"],
)
def test_in_process_a_reset_is_a_read_error_and_a_close_an_early_end(
    reset: bool, error: type[Exception]
) -> None:
    with (
        httpx2.Client(transport=stuntset.transport(cut(reset)), base_url="http://d") as http,
        http.stream("POST", "/v1/chat/completions", json=CHAT) as response,
        pytest.raises(error) as raised,
    ):
        for _ in response.iter_bytes():
            pass
    assert ("reset by peer" in str(raised.value)) is reset


def test_the_sdk_reports_a_reset_mid_stream_as_a_connection_error() -> None:
    client = openai.OpenAI(
        api_key="k",
        base_url="http://d/v1",
        http_client=httpx2.Client(transport=stuntset.transport(cut(True))),
    )
    with client, pytest.raises(openai.APIConnectionError) as raised:
        for _ in client.chat.completions.create(**CHAT):  # type: ignore[call-overload]
            pass
    assert isinstance(raised.value.__cause__, httpx2.ReadError)


@pytest.mark.real_time
def test_over_loopback_the_peer_sees_a_reset() -> None:
    with (
        stuntset.serve(Script.of([Exit(reset=True)])) as stand_in,
        httpx2.Client() as http,
        pytest.raises(httpx2.ReadError),
    ):
        http.post(stand_in.url("openai") + "/chat/completions", json=CHAT)


@pytest.mark.parametrize(
    "step",
    [
        HttpError(429, retry_after=30, retry_after_format="http-date"),
        RateLimit(retry_after=30, retry_after_format="http-date"),
    ],
    ids=["http_error", "rate_limit"],
)
def test_retry_after_as_an_http_date(step: HttpError | RateLimit) -> None:
    with httpx2.Client(
        transport=stuntset.transport(Script.of([step])), base_url="http://d"
    ) as http:
        response = http.post("/v1/chat/completions", json=CHAT)
    assert response.status_code == 429
    header = response.headers["retry-after"]
    assert header.endswith(" GMT")
    ahead = parsedate_to_datetime(header).timestamp() - time.time()
    assert 28 <= ahead <= 31


def test_the_default_stays_seconds() -> None:
    with httpx2.Client(
        transport=stuntset.transport(Script.of([HttpError(503, retry_after=2)])),
        base_url="http://d",
    ) as http:
        assert http.post("/v1/chat/completions", json=CHAT).headers["retry-after"] == "2"


def test_multiline_data_spreads_each_event_over_several_lines() -> None:
    from stuntset.doubles.model import Framing, ModelDouble

    double = ModelDouble(Script.of([Text("hello there")]), framing=Framing(multiline_data=True))
    with httpx2.Client(transport=stuntset.transport(double=double), base_url="http://d") as http:
        body = http.post(
            "/v1/messages",
            json={
                "model": "m",
                "max_tokens": 9,
                "messages": [{"role": "user", "content": "x"}],
                "stream": True,
            },
        ).content
    first_event = body.split(b"\n\n")[0].split(b"\n")
    assert first_event[0] == b"event: message_start"
    assert len(first_event) > 3
    assert all(line.startswith(b"data: ") for line in first_event[1:])


def test_a_gzip_label_on_a_plain_body_fails_the_client_decoding() -> None:
    import anthropic

    from stuntset.doubles.model import Framing, ModelDouble

    double = ModelDouble(Script.of([Text("hi")]), framing=Framing(bad_gzip=True))
    client = anthropic.Anthropic(
        api_key="k",
        base_url="http://d",
        http_client=httpx2.Client(transport=stuntset.transport(double=double)),
        max_retries=0,
    )
    with client, pytest.raises(anthropic.APIConnectionError) as raised:
        client.messages.create(model="m", max_tokens=9, messages=[{"role": "user", "content": "x"}])
    assert isinstance(raised.value.__cause__, httpx2.DecodingError)
    assert "incorrect header check" in str(raised.value.__cause__)


def test_a_repeated_first_event_is_what_each_sdk_makes_of_it() -> None:
    import anthropic

    from stuntset.doubles.model import Framing, ModelDouble

    turn = [Text("hello there")]
    double = ModelDouble(Script.of(turn, turn), framing=Framing(repeat_first_event=True))
    with httpx2.Client(transport=stuntset.transport(double=double), base_url="http://d") as http:
        body = http.post(
            "/v1/messages",
            json={
                "model": "m",
                "max_tokens": 9,
                "messages": [{"role": "user", "content": "x"}],
                "stream": True,
            },
        ).content
    assert body.count(b"event: message_start") == 2
    client = anthropic.Anthropic(
        api_key="k",
        base_url="http://d",
        http_client=httpx2.Client(transport=stuntset.transport(double=double)),
    )
    with (
        client,
        client.messages.stream(
            model="m", max_tokens=9, messages=[{"role": "user", "content": "x"}]
        ) as stream,
    ):
        # the helper starts its snapshot over at the second message_start: the text survives
        assert stream.get_final_message().content[0].text == "hello there"  # type: ignore[union-attr]
