"""The ``ollama`` Python client (0.6.3), unmodified, against the Ollama wire of the model double:
``chat`` and ``generate``, streamed (NDJSON) and not, sync and async, thinking, tool calls and
their results, usage, Ollama's ``{"error": "..."}`` shape, its OpenAI-compatible ``/v1``, and
every catalog scenario as this client sees it (stuntset.wires.ollama)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import ollama
import openai
import pytest

from stuntset import scenarios
from stuntset.doubles.model import StandIn
from stuntset.script import (
    HttpError,
    Match,
    Reasoning,
    Script,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)

from ._catalog_content import CONTENT, USAGE

MODEL = "llama3.2"
TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
OPEN: list[ollama.Client] = []


@pytest.fixture(autouse=True)
def _close_first(stand_in: StandIn) -> Iterator[None]:
    yield
    while OPEN:
        OPEN.pop()._client.close()


def client(stand_in: StandIn, mode: str = "in-process", **options: Any) -> ollama.Client:
    options.setdefault("timeout", httpx.Timeout(5.0, read=5.0))
    if mode == "loopback":
        made = ollama.Client(host=stand_in.url("ollama"), **options)
    else:
        made = ollama.Client(
            host="http://stand-in/ollama", transport=stand_in.transport(), **options
        )
    OPEN.append(made)
    return made


@pytest.mark.parametrize("mode", ["in-process", "loopback"])
def test_a_streamed_chat_with_thinking_and_usage(stand_in: StandIn, mode: str) -> None:
    stand_in.play(Script.of([Reasoning("let me see"), Text("Hello there, friend."), Usage(7, 4)]))
    parts = list(
        client(stand_in, mode).chat(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True, think=True
        )
    )
    assert "".join(p.message.content or "" for p in parts) == "Hello there, friend."
    assert "".join(p.message.thinking or "" for p in parts) == "let me see"
    assert [p.done for p in parts].count(True) == 1
    last = parts[-1]
    assert (last.done, last.done_reason, last.prompt_eval_count, last.eval_count) == (
        True,
        "stop",
        7,
        4,
    )
    assert last.model == MODEL
    assert last.created_at is not None
    assert last.created_at.endswith("Z")
    [entry] = stand_in.requests
    assert (entry.path, entry.wire) == ("/api/chat", "ollama-api")


def test_a_tool_call_and_its_result(stand_in: StandIn) -> None:
    stand_in.play(
        Script.of([ToolCall("get_weather", {"city": "Oslo"}), ToolResult("snow"), Text("Snowing.")])
    )
    ask: Any = [{"role": "user", "content": "Weather in Oslo?"}]
    chat = client(stand_in).chat
    first = chat(model=MODEL, messages=ask, tools=TOOLS, stream=False)
    [call] = first.message.tool_calls or []
    assert (call.function.name, dict(call.function.arguments)) == ("get_weather", {"city": "Oslo"})
    assert first.done_reason == "stop"
    history = [*ask, first.message, {"role": "tool", "content": "snow", "tool_name": "get_weather"}]
    second = list(chat(model=MODEL, messages=history, tools=TOOLS, stream=True))
    assert "".join(p.message.content or "" for p in second) == "Snowing."
    body = stand_in.requests[1].body
    assert body["messages"][-1] == {"role": "tool", "content": "snow", "tool_name": "get_weather"}


def test_generate_streamed_and_not(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("Once upon a time.")], [Text("The end.")]))
    generate = client(stand_in).generate
    parts = list(generate(model=MODEL, prompt="Tell a story", stream=True))
    assert "".join(p.response for p in parts) == "Once upon a time."
    assert parts[-1].done
    assert parts[-1].context
    whole = generate(model=MODEL, prompt="And then?")
    assert whole.response == "The end."
    assert [e.path for e in stand_in.requests] == ["/api/generate"] * 2
    assert stand_in.requests[0].body["prompt"] == "Tell a story"


@pytest.mark.stand_in(allow_unused_turns=True)
def test_generate_refuses_a_scripted_tool_call(stand_in: StandIn) -> None:
    stand_in.play(Script.of([ToolCall("get_weather", {"city": "Oslo"})]))
    with pytest.raises(ollama.ResponseError) as refused:
        client(stand_in).generate(model=MODEL, prompt="x")
    assert refused.value.status_code == 400
    assert "/api/chat" in refused.value.error


@pytest.mark.stand_in(allow_unused_turns=True)
def test_errors_are_ollamas_shape(stand_in: StandIn) -> None:
    chat = client(stand_in).chat
    ask: Any = [{"role": "user", "content": "hi"}]
    stand_in.play(Script.of([HttpError(404, 'model "nope" not found, try pulling it first')]))
    with pytest.raises(ollama.ResponseError) as missing:
        chat(model="nope", messages=ask)
    assert (missing.value.status_code, missing.value.error) == (
        404,
        'model "nope" not found, try pulling it first',
    )
    stand_in.play(
        Script.of([Text("half way"), HttpError(500, "llama runner process has terminated")])
    )
    with pytest.raises(ollama.ResponseError) as mid:
        list(chat(model=MODEL, messages=ask, stream=True))
    assert mid.value.error == "llama runner process has terminated"
    with httpx.Client(transport=stand_in.transport()) as raw:
        refused = raw.post("http://stand-in/api/chat", json={"messages": []})
    assert (refused.status_code, refused.json()) == (400, {"error": "model is required"})


def test_the_async_client(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("async hello")], [Text("whole")]))

    async def main() -> tuple[str, str]:
        made = ollama.AsyncClient(host=stand_in.url("ollama"))
        ask: Any = [{"role": "user", "content": "hi"}]
        stream = await made.chat(model=MODEL, messages=ask, stream=True)
        text = "".join([p.message.content or "" async for p in stream])
        whole = await made.chat(model=MODEL, messages=ask)
        await made._client.aclose()
        return text, whole.message.content or ""

    assert asyncio.run(main()) == ("async hello", "whole")


@pytest.mark.parametrize("mode", ["in-process", "loopback"])
def test_list_shows_the_models_the_script_names_with_their_tags(
    stand_in: StandIn, mode: str
) -> None:
    """``ollama.Client.list()`` (``GET /api/tags``) reads the models the script matches on,
    each with its tag as Ollama names a pulled model; with none named, the wire's default."""
    stand_in.play(Script(turns=(Turn(steps=(Text("ok"),), match=Match(model="qwen3:8b")),)))
    ollama_client = client(stand_in, mode)
    listed = ollama_client.list()
    assert [(m.model, m.size, m.details.format if m.details else None) for m in listed.models] == [
        ("qwen3:8b", 0, "gguf")
    ]
    assert listed.models[0].modified_at is not None
    chosen = listed.models[0].model or ""
    said = ollama_client.chat(model=chosen, messages=[{"role": "user", "content": "hi"}])
    assert said.message.content == "ok"  # the listed name is the one the script answers
    stand_in.play(Script.of([Text("ok")]))
    assert [m.model for m in ollama_client.list().models] == ["llama3.2:latest"]
    assert stand_in.requests[-1].path.endswith("/api/tags")
    ollama_client.chat(model=MODEL, messages=[{"role": "user", "content": "hi"}])


def test_the_openai_compatible_v1(stand_in: StandIn) -> None:
    """Ollama's ``/v1`` is OpenAI Chat under Ollama's base path."""
    stand_in.play(Script.of([Text("compatible")]))
    with openai.OpenAI(base_url=stand_in.url("ollama") + "/v1", api_key="ollama") as oc:
        reply = oc.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}]
        )
    assert reply.choices[0].message.content == "compatible"
    assert (stand_in.requests[0].path, stand_in.requests[0].wire) == (
        "/v1/chat/completions",
        "openai-chat",
    )


def test_each_stream_line_is_one_json_object(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("two words")]))
    with httpx.Client(transport=stand_in.transport()) as raw:
        response = raw.post("http://stand-in/ollama/api/chat", json={"model": MODEL})
    assert response.headers["content-type"] == "application/x-ndjson"
    lines = response.text.splitlines()
    assert all(isinstance(json.loads(line), dict) for line in lines)
    assert [json.loads(line)["done"] for line in lines][-1] is True


# --- the catalog, as the ollama client sees it --------------------------------------------------

#: Status faults: the client has no retries, so rate_limited and overloaded raise at once.
STATUS = {"auth_expired_mid_run": 401, "rate_limited": 429, "overloaded": 503}
#: What else the client raises, streamed / whole (observed; the client wraps nothing).
RAISES: dict[str, tuple[type[BaseException], type[BaseException]]] = {
    "stream_cut": (httpx.RemoteProtocolError, httpx.RemoteProtocolError),
    "crash_mid_turn": (httpx.RemoteProtocolError, httpx.RemoteProtocolError),
    "malformed_json": (json.JSONDecodeError, json.JSONDecodeError),
    "garbage_bytes": (json.JSONDecodeError, UnicodeDecodeError),
    "stuck": (httpx.ReadTimeout, httpx.ReadTimeout),
}
MODEL_SCENARIOS = [s.name for s in scenarios.all() if s.name != "spawn_missing"]


def _converse(
    stand_in: StandIn, stream: bool, **options: Any
) -> tuple[list[tuple[str, Any]], tuple[Any, Any]]:
    """The conversation's answers (text, calls) and the last one's token counts."""
    chat = client(stand_in, **options).chat
    history: list[Any] = [{"role": "user", "content": "Hello there"}]
    answers: list[tuple[str, Any]] = []
    usage: tuple[Any, Any] = (None, None)
    for _ in range(8):
        if not stand_in.double.unused():
            break
        if stream:
            parts = list(chat(model=MODEL, messages=history, stream=True))
            text = "".join(p.message.content or "" for p in parts)
            calls = [c for p in parts for c in p.message.tool_calls or []]
            last = parts[-1]
        else:
            last = chat(model=MODEL, messages=history)
            text, calls = last.message.content or "", list(last.message.tool_calls or [])
        answers.append((text, [(c.function.name, dict(c.function.arguments)) for c in calls]))
        usage = (last.prompt_eval_count, last.eval_count)
        if calls:
            history += [
                {
                    "role": "assistant",
                    "content": text,
                    "tool_calls": [c.model_dump() for c in calls],
                },
                *({"role": "tool", "content": "ok", "tool_name": c.function.name} for c in calls),
            ]
        else:
            history += [
                {"role": "assistant", "content": text},
                {"role": "user", "content": "And then?"},
            ]
    return answers, usage


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", MODEL_SCENARIOS)
def test_catalog_through_the_ollama_client(stand_in: StandIn, name: str, stream: bool) -> None:
    stand_in.play(scenarios.build(name))
    options: dict[str, Any] = {}
    if name == "stuck":
        options["timeout"] = httpx.Timeout(5.0, read=0.2)
    if name in STATUS:
        with pytest.raises(ollama.ResponseError) as raised:
            _converse(stand_in, stream, **options)
        assert raised.value.status_code == STATUS[name]
        stand_in.play(Script())  # the recovery turns are never asked for
        return
    if name in RAISES:
        with pytest.raises(RAISES[name][0 if stream else 1]):
            _converse(stand_in, stream, **options)
        return
    if name == "out_of_order":
        if not stream:  # the lines as an array where one object belongs
            with pytest.raises(TypeError):
                _converse(stand_in, stream)
            return
        # the client reads on past the done line: its last part is the late one, not done
        chat = client(stand_in).chat
        parts = list(chat(model=MODEL, messages=[{"role": "user", "content": "x"}], stream=True))
        assert [p.done for p in parts][-2:] == [True, False]
        assert parts[-1].message.content == "out of order"
        return
    answers, usage = _converse(stand_in, stream, **options)
    assert answers == CONTENT[name]
    if name in USAGE:
        assert usage == USAGE[name]
