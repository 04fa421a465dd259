"""Cassettes on the Vertex AI wires with the real ``AnthropicVertex`` and ``google-genai``
(``vertexai=True``): recorded through the proxy in front of the model double (the bearer token
never reaches the file), the publisher paths named as Vertex's wires, replayed to the clients
over loopback."""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest
from google import genai
from google.genai import types
from google.oauth2.credentials import Credentials

import stuntset
from stuntset.cassettes import load_cassette
from stuntset.cassettes.record import record
from stuntset.cassettes.replay_server import replay_server
from stuntset.script import Script, Text

from ._gemini import tls_args

TOKEN = "ya29." + "a0AfB_" + "Zx8" * 12


def _claude(root: str) -> str:
    with (
        anthropic.AnthropicVertex(
            region="us-east5",
            project_id="p",
            access_token=TOKEN,
            base_url=root + "/v1",
            timeout=5.0,
        ) as client,
        client.messages.stream(
            model="claude-sonnet-4@20250514",
            max_tokens=32,
            messages=[{"role": "user", "content": "hi"}],
        ) as events,
    ):
        return events.get_final_text()


def _gemini(root: str) -> str:
    client = genai.Client(
        vertexai=True,
        project="p",
        location="us-central1",
        credentials=Credentials(token=TOKEN),  # type: ignore[no-untyped-call]
        http_options=types.HttpOptions(base_url=root + "/", timeout=5000, **tls_args()),
    )
    try:
        return client.models.generate_content(model="gemini-2.5-flash", contents="hi").text or ""
    finally:
        client.close()


@pytest.mark.slow
@pytest.mark.real_time
def test_a_vertex_session_is_recorded_token_free_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "vertex.jsonl"
    with (
        stuntset.serve(Script.of([Text("Claude here.")], [Text("Gemini here.")])) as upstream,
        record(upstream.url("vertex"), path) as recording,
    ):
        assert (_claude(recording.url), _gemini(recording.url)) == ("Claude here.", "Gemini here.")
    assert TOKEN not in path.read_text()
    cassette = load_cassette(path)
    assert [i.wire for i in cassette.interactions] == ["vertex-anthropic", "vertex-gemini"]
    assert all("authorization" not in i.request.headers for i in cassette.interactions)
    with replay_server(path) as server:
        assert (_claude(server.url), _gemini(server.url)) == ("Claude here.", "Gemini here.")
