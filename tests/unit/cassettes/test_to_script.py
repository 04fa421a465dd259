"""A recording of each model wire (made by the model double itself) turns back into the script
that produced it: same text, same tool calls with the same arguments, same usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

import stuntset
from stuntset.cassettes import Cassette, Frame, Interaction, RecordedRequest, RecordedResponse
from stuntset.cassettes.sse import parse_sse
from stuntset.cassettes.to_script import dumps_script_toml, script_from_cassette
from stuntset.doubles.model import ModelDouble
from stuntset.errors import ScriptError
from stuntset.script import (
    AuthExpired,
    HttpError,
    Reasoning,
    Script,
    StreamCut,
    Text,
    ToolCall,
    Usage,
    loads_script,
)

ORIGINAL = Script.of(
    [
        Reasoning("The user wants a file."),
        Text("Let me look."),
        ToolCall("read_file", {"path": "a.txt", "n": [1, 2]}),
        Usage(40, 18),
    ],
    [Text("It says hello, world."), Usage(55, 6)],
    [HttpError(429, message="slow down", retry_after_ms=5)],
)

WIRES = {
    "openai-chat": (
        "/v1/chat/completions",
        {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]},
    ),
    "openai-responses": ("/v1/responses", {"model": "gpt-x", "input": "hi"}),
    "anthropic-messages": (
        "/v1/messages",
        {"model": "claude-x", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]},
    ),
    "gemini": (
        "/v1beta/models/gemini-x:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    ),
}


def record(wire: str, stream: bool, *, sse: bool = True) -> Cassette:
    path, body = WIRES[wire]
    interactions = []
    with httpx2.Client(transport=stuntset.transport(ORIGINAL), base_url="http://stand-in") as http:
        for index in range(len(ORIGINAL.turns)):
            request = {**body, "stream": stream}
            params = {}
            if stream and wire == "gemini":  # Gemini streams by its method, not a field
                path = path.replace(":generateContent", ":streamGenerateContent")
                # as google-genai asks; without it the stream is one JSON array (recorded whole)
                params = {"alt": "sse"} if sse else {}
            if stream and wire == "openai-chat":
                request["stream_options"] = {"include_usage": True}
            response = http.post(
                path,
                json=request,
                params=params,
                headers={"anthropic-version": "2023-06-01", "x-stainless-retry-count": "0"},
            )
            streamed = stream and sse and response.status_code == 200
            interactions.append(
                Interaction(
                    id=f"i-{index + 1}",
                    wire=wire,
                    request=RecordedRequest(method="POST", path=path, body=request),
                    response=RecordedResponse(
                        status=response.status_code,
                        headers=dict(response.headers),
                        frames=[
                            Frame(t=0.0, event=e, data=d) for e, d in parse_sse(response.content)
                        ]
                        if streamed
                        else None,
                        body=None if streamed else response.json(),
                    ),
                )
            )
    return Cassette(interactions=interactions, source=f"{wire}.jsonl")


def essentials(script: Script) -> list[list[Any]]:
    turns = []
    for turn in script.turns:
        steps: list[Any] = []
        for step in turn.steps:
            if isinstance(step, Text | Reasoning):
                steps.append((type(step).__name__, step.text))
            elif isinstance(step, ToolCall):
                steps.append(("ToolCall", step.name, step.input))
            elif isinstance(step, Usage):
                steps.append(("Usage", step.input_tokens, step.output_tokens))
            elif isinstance(step, HttpError):
                steps.append(("HttpError", step.status, step.message))
        turns.append(steps)
    return turns


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("wire", list(WIRES))
def test_a_recording_becomes_the_script_that_made_it(wire: str, stream: bool) -> None:
    script = script_from_cassette(record(wire, stream))
    assert essentials(script) == essentials(ORIGINAL)
    assert [t.name for t in script.turns] == ["i-1", "i-2", "i-3"]
    assert script.turns[2].steps[0].retry_after_ms == 5  # type: ignore[union-attr]
    if stream:
        assert script.turns[1].steps[0].chunks == 4  # type: ignore[union-attr]


def test_a_gemini_array_stream_recorded_whole_becomes_the_script_that_made_it() -> None:
    cassette = record("gemini", True, sse=False)
    assert isinstance(cassette.interactions[0].response.body, list)  # the array, whole
    assert isinstance(cassette.interactions[2].response.body, list)  # the one-error array
    assert essentials(script_from_cassette(cassette)) == essentials(ORIGINAL)


KEY_EXPIRED = {
    "code": 400,
    "message": "API key expired. Please renew the API key.",
    "status": "INVALID_ARGUMENT",
    "details": [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"},
        {"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US"},
    ],
}


@pytest.mark.parametrize(
    "body",
    [{"error": KEY_EXPIRED}, [{"error": KEY_EXPIRED}]],
    ids=["object", "array"],
)
def test_a_recorded_gemini_expired_key_becomes_auth_expired(body: Any) -> None:
    gemini = "/v1beta/models/g:generateContent"
    recorded = Interaction(
        id="i-1",
        wire="gemini",
        request=RecordedRequest(method="POST", path=gemini),
        response=RecordedResponse(status=400, body=body),
    )
    (turn,) = script_from_cassette(Cassette(interactions=[recorded])).turns
    assert turn.steps == (AuthExpired(message="API key expired. Please renew the API key."),)
    # and the Gemini wire renders it back as the API sent it
    reply = ModelDouble(Script(turns=(turn,))).handle(
        "POST", gemini, "", {}, json.dumps({"contents": [{"parts": [{"text": "hi"}]}]}).encode()
    )
    assert reply.status == 400
    sent = json.loads(b"".join(a for a in reply.actions if isinstance(a, bytes)))
    assert sent["error"]["details"][0]["reason"] == "API_KEY_INVALID"


def test_any_other_gemini_400_stays_an_http_error() -> None:
    recorded = Interaction(
        id="i-1",
        wire="gemini",
        request=RecordedRequest(method="POST", path="/v1beta/models/g:generateContent"),
        response=RecordedResponse(
            status=400, body={"error": {**KEY_EXPIRED, "details": [], "message": "bad"}}
        ),
    )
    (turn,) = script_from_cassette(Cassette(interactions=[recorded])).turns
    assert turn.steps == (HttpError(400, message="bad", error_type="INVALID_ARGUMENT"),)


def test_the_toml_reads_back_as_the_same_script() -> None:
    script = script_from_cassette(record("anthropic-messages", True))
    text = dumps_script_toml(script)
    assert text.startswith("# from anthropic-messages.jsonl: edit freely")
    again = loads_script(text, source="edited.toml")
    assert again.turns == script.turns


def test_a_stream_without_its_terminal_event_becomes_a_cut() -> None:
    frames = [
        Frame(t=0.0, data=json.dumps({"choices": [{"index": 0, "delta": {"content": "par"}}]}))
    ]
    cassette = Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="openai-chat",
                request=RecordedRequest(method="POST", path="/v1/chat/completions"),
                response=RecordedResponse(status=200, frames=frames),
            )
        ]
    )
    assert script_from_cassette(cassette).turns[0].steps == (
        Text("par", chunks=1),
        StreamCut(clean=True),
    )


def test_toml_cannot_hold_null() -> None:
    script = Script.of([ToolCall("x", {"a": None})])
    with pytest.raises(ScriptError, match=r"turn 0, step 0: 'a' is null"):
        dumps_script_toml(script)


def test_the_command_writes_a_script_that_checks(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from stuntset.cassettes import write_cassette
    from stuntset.cli import main

    cassette = write_cassette(tmp_path / "c.jsonl", record("openai-responses", True))
    runner = CliRunner()
    result = runner.invoke(
        main, ["cassettes", "to-script", str(cassette), "-o", str(tmp_path / "s.toml")]
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["script", "check", str(tmp_path / "s.toml")])
    assert result.exit_code == 0, result.output
    assert "3 turn(s)" in result.output
    printed = runner.invoke(main, ["cassettes", "to-script", str(cassette)])
    assert printed.output == (tmp_path / "s.toml").read_text()


def test_a_gemini_stream_with_an_error_chunk_and_a_binary_signature() -> None:
    chunk = {
        "candidates": [
            {
                "content": {
                    "parts": [{"text": "hm", "thought": True, "thoughtSignature": "/w=="}],
                    "role": "model",
                },
                "index": 0,
            }
        ]
    }
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    frames = [
        Frame(t=0.0, data=json.dumps(chunk)),
        Frame(t=0.0, data="{not json"),
        Frame(t=0.0, data=json.dumps(error)),
    ]
    cassette = Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="gemini",
                request=RecordedRequest(
                    method="POST", path="/v1beta/models/g:streamGenerateContent"
                ),
                response=RecordedResponse(status=200, frames=frames),
            )
        ]
    )
    (turn,) = script_from_cassette(cassette).turns
    assert turn.steps == (
        Reasoning("hm", signature="/w==", chunks=1),  # not text: kept as the API sent it
        HttpError(503, message="The model is overloaded.", error_type="UNAVAILABLE"),
    )


class _Counted(str):
    """A delta that counts the characters a ``+`` with it copies (``acc + delta`` calls its
    ``__radd__``: a subclass's reflected method goes first)."""

    copied = 0

    def __radd__(self, other: str) -> str:
        _Counted.copied += len(other) + len(self)
        return str.__add__(other, str(self))


def test_accumulating_a_streams_text_is_linear_in_its_length() -> None:
    # issue #33: `cassettes show` took 0.4 / 0.9 / 2.6 s for 2,000 / 4,000 / 8,000 frames:
    # each delta copied the whole text so far. Counted, not timed.
    from stuntset.wires import ResponseReader as _Turn

    copied = []
    for n in (1_000, 2_000, 4_000, 8_000):
        _Counted.copied = 0
        turn = _Turn()
        turn.item("tool", "tool", name="t", id=None)
        for _ in range(n):
            turn.add("text", "text", _Counted("word "))
            turn.add("tool", "tool", _Counted('{"a":1}'), field="args")
        steps = turn.steps()
        texts = [step.text for step in steps if hasattr(step, "text")]
        assert [len(t) for t in texts] == [5 * n]
        copied.append(_Counted.copied)
    assert all(c <= 20 for c in copied), copied  # joined once, never re-copied per delta
