"""Azure OpenAI through the real, unmodified ``openai.AzureOpenAI`` / ``AsyncAzureOpenAI``:
deployment paths with ``api-version``, the ``api-key`` header, Azure's headers and error bodies,
and every catalog scenario as the client sees it (stuntset.wires.azure_openai)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx2
import openai
import pytest

from stuntset import scenarios
from stuntset.doubles.model import StandIn
from stuntset.script import AuthExpired, HttpError, RateLimit, Script, Text, ToolCall, ToolResult

from . import _clients
from ._catalog_content import CONTENT, USAGE
from .test_catalog import MODEL_SCENARIOS, NO_RETRY, expected_error

VERSION = "2024-10-21"


@pytest.fixture(autouse=True)
def _close_first(stand_in: StandIn) -> Iterator[None]:
    # torn down before the stand-in: a loopback server stopping with a client's keep-alive
    # connection still open waits for it
    yield
    _clients.close_clients()


def azure(stand_in: StandIn, mode: _clients.Mode = "loopback", **options: Any) -> openai.OpenAI:
    options.setdefault("timeout", _clients.DEFAULT_TIMEOUT)
    if mode == "loopback":
        endpoint = stand_in.url("azure")
        client = openai.AzureOpenAI(
            azure_endpoint=endpoint, api_version=VERSION, api_key="azure-key-1", **options
        )
    else:
        http = httpx2.Client(transport=stand_in.transport())
        client = openai.AzureOpenAI(
            azure_endpoint="http://stand-in/azure",
            api_version=VERSION,
            api_key="azure-key-1",
            http_client=http,
            **options,
        )
    _clients.OPEN.append(client)
    return client


def test_chat_goes_to_the_deployment_path_with_the_api_key(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("Hello from Azure.")]))
    completion = azure(stand_in).chat.completions.create(
        model="my-gpt", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content == "Hello from Azure."
    entry = stand_in.requests[0]
    assert entry.path == "/openai/deployments/my-gpt/chat/completions"
    assert entry.query == f"api-version={VERSION}"
    assert entry.wire == "azure-openai-chat"
    assert entry.headers["api-key"] != ""  # recorded (redacted), not an Authorization header
    assert "authorization" not in entry.headers
    raw = completion.model_dump()
    assert raw["prompt_filter_results"][0]["content_filter_results"]["hate"]["filtered"] is False
    assert raw["choices"][0]["content_filter_results"]["violence"]["severity"] == "safe"


def test_a_stream_starts_with_the_prompt_filter_chunk(stand_in: StandIn) -> None:
    """What breaks a raw ``chunk.choices[0]`` loop written against OpenAI itself."""
    stand_in.play(Script.of([Text("streamed")]))
    chunks = list(
        azure(stand_in).chat.completions.create(
            model="my-gpt", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    assert chunks[0].choices == []
    assert chunks[0].id == ""
    assert "".join(c.choices[0].delta.content or "" for c in chunks[1:] if c.choices) == (
        "streamed"
    )


def test_responses_and_tool_calls_through_the_azure_client(stand_in: StandIn) -> None:
    stand_in.play(
        Script.of([ToolCall("search", {"q": "x"}, id="call_1"), ToolResult("ok"), Text("found it")])
    )
    answers = []
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    client = azure(stand_in)
    for _ in range(2):
        answer, history = _clients._responses(client, history, stream=True)
        answers.append(answer)
    assert [(a.text, a.calls) for a in answers] == [
        ("", [("search", {"q": "x"})]),
        ("found it", []),
    ]
    assert [e.path for e in stand_in.requests] == ["/openai/responses"] * 2
    assert {e.wire for e in stand_in.requests} == {"azure-openai-responses"}


def test_the_v1_paths_below_azure(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("one")], [Text("two")]))
    client = openai.OpenAI(base_url=stand_in.url("azure") + "/openai/v1", api_key="azure-key-1")
    _clients.OPEN.append(client)
    chat = client.chat.completions.create(model="gpt", messages=[{"role": "user", "content": "a"}])
    response = client.responses.create(model="gpt", input="b")
    assert (chat.choices[0].message.content, response.output_text) == ("one", "two")
    assert [e.wire for e in stand_in.requests] == ["azure-openai-chat", "azure-openai-responses"]


def test_the_deployment_path_at_the_server_root(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("root")]))
    client = openai.AzureOpenAI(
        azure_endpoint=stand_in.base_url, api_version=VERSION, api_key="azure-key-1"
    )
    _clients.OPEN.append(client)
    completion = client.chat.completions.create(
        model="dep", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content == "root"
    assert stand_in.requests[0].wire == "azure-openai-chat"


@pytest.mark.stand_in(allow_unused_turns=True)
def test_azure_errors_as_the_client_sees_them(stand_in: StandIn) -> None:
    client = azure(stand_in, max_retries=0)
    messages: Any = [{"role": "user", "content": "hi"}]
    stand_in.play(Script.of([AuthExpired()]))
    with pytest.raises(openai.AuthenticationError) as denied:
        client.chat.completions.create(model="dep", messages=messages)
    assert denied.value.body == {
        "code": "401",
        "message": denied.value.body["message"],  # type: ignore[index]
    }
    assert str(denied.value.body["message"]).startswith("Access denied")  # type: ignore[index]
    assert denied.value.response.headers["x-ms-region"] == "East US"
    assert denied.value.response.headers["apim-request-id"]
    stand_in.play(Script.of([RateLimit(retry_after=6)]))
    with pytest.raises(openai.RateLimitError) as limited:
        client.chat.completions.create(model="dep", messages=messages)
    assert limited.value.code == "429"
    assert "ChatCompletions_Create Operation" in limited.value.message
    assert "Please retry after 6 seconds" in limited.value.message
    assert limited.value.response.headers["retry-after"] == "6"
    stand_in.play(Script.of([HttpError(404)]))
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="dep", messages=messages)
    assert missing.value.code == "DeploymentNotFound"
    stand_in.play(Script.of([HttpError(400, "filtered", error_type="content_filter")]))
    with pytest.raises(openai.BadRequestError) as filtered:
        client.chat.completions.create(model="dep", messages=messages)
    assert filtered.value.code == "content_filter"
    assert filtered.value.body["innererror"]["code"] == "ResponsibleAIPolicyViolation"  # type: ignore[index]
    stand_in.play(Script.of([HttpError(500)]))
    with pytest.raises(openai.InternalServerError) as failed:
        client.chat.completions.create(model="dep", messages=messages)
    assert failed.value.type == "server_error"


@pytest.mark.parametrize("mode", ["loopback", "in-process"])
def test_the_api_version_is_checked_before_any_turn(stand_in: StandIn, mode: _clients.Mode) -> None:
    """No ``api-version``: Azure's 404 "Resource not found"; a retired or malformed one: its
    400 "API version not supported" (stuntset.wires.azure_openai's docs cite both). Neither
    reaches the script: the next request with a supported version gets its turn."""
    stand_in.play(Script.of([Text("Answered.")], [Text("Responses.")]))
    messages: Any = [{"role": "user", "content": "hi"}]
    endpoint = stand_in.url("azure") if mode == "loopback" else "http://stand-in/azure"
    http = httpx2.Client(transport=stand_in.transport()) if mode == "in-process" else None

    def client(version: str) -> openai.AzureOpenAI:
        made = openai.AzureOpenAI(
            azure_endpoint=endpoint,
            api_version=version,
            api_key="azure-key-1",
            max_retries=0,
            http_client=http,
        )
        _clients.OPEN.append(made)
        return made

    with pytest.raises(openai.NotFoundError) as missing:
        client("").chat.completions.create(model="dep", messages=messages)
    assert missing.value.body == {"code": "404", "message": "Resource not found"}
    assert missing.value.response.headers["x-ms-region"] == "East US"
    for version in ("2023-03-15-preview", "0613", "2021-01-01"):
        with pytest.raises(openai.BadRequestError) as unsupported:
            client(version).chat.completions.create(model="dep", messages=messages)
        assert unsupported.value.body == {
            "code": "BadRequest",
            "message": "API version not supported",
        }, version
    with pytest.raises(openai.NotFoundError):
        client("").responses.create(model="dep", input="hi")
    answered = client(VERSION).chat.completions.create(model="dep", messages=messages)
    assert answered.choices[0].message.content == "Answered."
    later = client("2025-04-01-preview").responses.create(model="dep", input="hi")
    assert later.output_text == "Responses."
    assert [(e.query, e.status) for e in stand_in.requests] == [
        ("api-version=", 404),
        ("api-version=2023-03-15-preview", 400),
        ("api-version=0613", 400),
        ("api-version=2021-01-01", 400),
        ("api-version=", 404),
        (f"api-version={VERSION}", 200),
        ("api-version=2025-04-01-preview", 200),
    ]
    if http is not None:
        http.close()


@pytest.mark.stand_in(allow_unused_turns=True)
def test_rate_limits_are_retried_after_retry_after_ms(stand_in: StandIn) -> None:
    stand_in.play(scenarios.build("rate_limited"))
    client = azure(stand_in)
    completion = client.chat.completions.create(
        model="dep", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.choices[0].message.content
    assert [e.status for e in stand_in.requests][-1] == 200
    assert len(stand_in.requests) >= 2


def test_the_async_client(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("async hello")]))

    async def main() -> str:
        async with openai.AsyncAzureOpenAI(
            azure_endpoint=stand_in.url("azure"), api_version=VERSION, api_key="k"
        ) as client:
            stream = await client.chat.completions.create(
                model="dep", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    assert asyncio.run(main()) == "async hello"


# --- the catalog -------------------------------------------------------------------------------


def _converse(
    stand_in: StandIn, wire: _clients.Wire, stream: bool, **options: Any
) -> list[_clients.Answer]:
    client = azure(stand_in, "in-process", **options)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Hello there"}]
    answers = []
    try:
        for _ in range(8):
            if not stand_in.double.unused():
                break
            talk = _clients._chat if wire == "chat" else _clients._responses
            answer, history = talk(client, history, stream)
            answers.append(answer)
    finally:
        _clients.close_clients()
    return answers


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("wire", ["chat", "responses"])
@pytest.mark.parametrize("name", MODEL_SCENARIOS)
def test_catalog_through_azure(
    stand_in: StandIn, name: str, wire: _clients.Wire, stream: bool
) -> None:
    """Every catalog scenario, through ``AzureOpenAI``, as through ``OpenAI``: the same content
    and the same exceptions (Azure changes the bodies and headers, not the client's view)."""
    stand_in.play(scenarios.build(name))
    options: dict[str, Any] = {"max_retries": 0} if name in NO_RETRY else {}
    if name in CONTENT:
        answers = _converse(stand_in, wire, stream, **options)
        assert [(a.text, a.calls) for a in answers] == CONTENT[name]
        if name in USAGE:
            assert (answers[-1].input_tokens, answers[-1].output_tokens) == USAGE[name]
        assert {e.wire for e in stand_in.requests} == {f"azure-openai-{wire}"}
        return
    with pytest.raises(expected_error(name, wire, stream)):
        _converse(stand_in, wire, stream, **options)
