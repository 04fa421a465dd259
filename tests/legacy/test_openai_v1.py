"""openai 1.x (built on httpx, not httpx2) against the model doubles: the same answers, and
the faults as that generation of the SDK reports them (stream faults escape as raw httpx
errors there, per reliability.md §1)."""

from __future__ import annotations

import httpx
import openai
import pytest

import stuntset
from stuntset import scenarios
from stuntset.script import AuthExpired, Text

ASK = [{"role": "user", "content": "read a.txt"}]


def client_for(script: stuntset.Script, **options: object) -> openai.OpenAI:
    http = httpx.Client(transport=stuntset.transport(script))  # type: ignore[arg-type]
    return openai.OpenAI(
        api_key="sk-test", base_url="http://stand-in/v1", http_client=http, **options
    )  # type: ignore[arg-type]


def test_it_is_the_httpx_generation() -> None:
    assert openai.__version__.startswith("1.")


def test_a_tool_round_trip_streamed_and_whole() -> None:
    with client_for(scenarios.build("tool_use")) as client:
        with client.chat.completions.stream(model="gpt-x", messages=ASK) as stream:  # type: ignore[arg-type]
            first = stream.get_final_completion().choices[0].message
        assert first.content == "Let me look at that file."
        assert first.tool_calls is not None
        call = first.tool_calls[0]
        assert (call.function.name, call.function.arguments) == ("read_file", '{"path":"a.txt"}')
        follow = [
            *ASK,
            first.model_dump(exclude_none=True, exclude={"parsed"}),
            {"role": "tool", "tool_call_id": call.id, "content": "hello from a.txt"},
        ]
        answer = client.chat.completions.create(model="gpt-x", messages=follow)  # type: ignore[arg-type]
    assert answer.choices[0].message.content == "The file says: hello from a.txt"
    assert answer.usage is not None


def test_responses_and_retries() -> None:
    with client_for(scenarios.build("rate_limited")) as client:
        response = client.responses.create(model="gpt-x", input="hi")
    assert response.output_text == "Sorry for the wait. Here is the answer."


def test_faults_as_the_httpx_generation_reports_them() -> None:
    expiring = stuntset.Script.of([Text("first answer")], [AuthExpired()])
    with client_for(expiring, max_retries=0) as client:
        client.chat.completions.create(model="gpt-x", messages=ASK)  # type: ignore[arg-type]
        with pytest.raises(openai.AuthenticationError):
            client.chat.completions.create(model="gpt-x", messages=ASK)  # type: ignore[arg-type]
    with (
        client_for(scenarios.build("stream_cut"), max_retries=0) as client,
        pytest.raises(httpx.RemoteProtocolError),  # 1.x lets it escape raw; 3.x wraps it
    ):
        for _ in client.chat.completions.create(model="gpt-x", messages=ASK, stream=True):  # type: ignore[arg-type]
            pass


@pytest.mark.real_time
def test_over_loopback() -> None:
    with (
        stuntset.serve(scenarios.build("happy_path")) as stand_in,
        openai.OpenAI(api_key="sk-test", base_url=stand_in.url("openai")) as client,
    ):
        reply = client.chat.completions.create(model="gpt-x", messages=ASK)  # type: ignore[arg-type]
    assert reply.choices[0].message.content == "Hello! How can I help you today?"
