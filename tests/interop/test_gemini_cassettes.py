"""Cassettes on the Gemini wire with the real ``google-genai`` SDK: recorded through the proxy
in front of the model double (the key in ``x-goog-api-key`` and in a ``key=`` query parameter
never reach the file), replayed to the SDK over loopback, and turned into a script."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from google import genai
from google.genai import types

import stuntset
from stuntset import scenarios
from stuntset.cassettes import load_cassette
from stuntset.cassettes.record import record
from stuntset.cassettes.replay_server import replay_server
from stuntset.cassettes.to_script import script_from_cassette
from stuntset.script import HttpError, Text, ToolCall, Usage

from ._gemini import tls_args

KEY = "AIza" + "Sy" + "Q7w" * 11
MODEL = "gemini-2.5-flash"
ASK = [types.Content(role="user", parts=[types.Part(text="read a.txt")])]


def _client(base_url: str) -> genai.Client:
    options = types.HttpOptions(base_url=base_url, timeout=5000, **tls_args())
    return genai.Client(api_key=KEY, http_options=options)


def _converse(client: genai.Client) -> tuple[list[str], str]:
    """A streamed function call, its response sent back, and the whole answer."""
    chunks = list(client.models.generate_content_stream(model=MODEL, contents=ASK))  # type: ignore[arg-type]
    parts = [p for c in chunks for p in c.candidates[0].content.parts]  # type: ignore[index,union-attr]
    calls = [p.function_call.name or "" for p in parts if p.function_call]
    history = [
        *ASK,
        types.Content(role="model", parts=[p for p in parts if p.function_call]),
        types.Content(
            role="user",
            parts=[types.Part.from_function_response(name="read_file", response={"out": "x"})],
        ),
    ]
    answer = client.models.generate_content(model=MODEL, contents=history)  # type: ignore[arg-type]
    return calls, answer.text or ""


@pytest.mark.slow
@pytest.mark.real_time
def test_a_gemini_session_is_recorded_secret_free_and_replays_to_the_sdk(tmp_path: Path) -> None:
    path = tmp_path / "gemini.jsonl"
    with (
        stuntset.serve(scenarios.build("tool_use")) as upstream,
        record(upstream.url("gemini"), path) as recording,
    ):
        client = _client(recording.url + "/")
        assert _converse(client) == (["read_file"], "The file says: hello from a.txt")
        # the other way the Gemini API takes a key: ``?key=`` (the SDK never sends it so)
        raw = httpx.post(
            f"{recording.url}/v1beta/models/{MODEL}:generateContent?key={KEY}",
            json={"contents": [{"role": "user", "parts": [{"text": "again"}]}]},
        )
        assert raw.status_code == 500  # the script is used up: the double's own 500
    written = path.read_text()
    assert KEY not in written
    cassette = load_cassette(path)
    first, second, third = cassette.interactions
    assert [i.wire for i in cassette.interactions] == ["gemini"] * 3
    assert first.request.path == f"/v1beta/models/{MODEL}:streamGenerateContent"
    assert first.request.query == "alt=sse"
    assert "x-goog-api-key" not in first.request.headers
    assert first.response.frames is not None
    assert second.response.frames is None
    assert third.response.status == 500
    assert third.request.query == "key=<scrubbed:key>"
    with replay_server(path) as server:
        assert _converse(_client(server.url + "/")) == (
            ["read_file"],
            "The file says: hello from a.txt",
        )
    steps = [step for turn in script_from_cassette(cassette).turns for step in turn.steps]
    assert any(isinstance(s, ToolCall) and s.input == {"path": "a.txt"} for s in steps)
    assert Text("Let me look at that file.", chunks=6) in steps  # the deltas streamed
    assert Text("The file says: hello from a.txt") in steps
    assert Usage(40, 18) in steps
    assert steps[-1] == HttpError(500, message=steps[-1].message, error_type="INTERNAL")  # type: ignore[union-attr]
