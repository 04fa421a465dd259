"""Cassettes on the Ollama wire with the real ``ollama`` client: an NDJSON stream recorded
through the proxy in front of the model double, a line a frame, replayed to the client over
loopback as the same lines, and turned into a script."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ollama
import pytest

import stuntset
from stuntset import scenarios
from stuntset.cassettes import load_cassette
from stuntset.cassettes.record import record
from stuntset.cassettes.replay_server import replay_server
from stuntset.cassettes.to_script import script_from_cassette
from stuntset.script import Text, ToolCall, Usage

ASK: Any = [{"role": "user", "content": "read a.txt"}]


def _converse(host: str) -> tuple[list[str], str]:
    """A streamed tool call, its result sent back, and the whole answer."""
    client = ollama.Client(host=host, timeout=5.0)
    try:
        parts = list(client.chat(model="llama3.2", messages=ASK, stream=True))
        calls = [c for p in parts for c in p.message.tool_calls or []]
        history = [
            *ASK,
            {"role": "assistant", "content": "", "tool_calls": [c.model_dump() for c in calls]},
            *({"role": "tool", "content": "x", "tool_name": c.function.name} for c in calls),
        ]
        answer = client.chat(model="llama3.2", messages=history)
        return [c.function.name for c in calls], answer.message.content or ""
    finally:
        client._client.close()


@pytest.mark.slow
@pytest.mark.real_time
def test_an_ollama_session_is_recorded_and_replays_to_the_client(tmp_path: Path) -> None:
    path = tmp_path / "ollama.jsonl"
    with (
        stuntset.serve(scenarios.build("tool_use")) as upstream,
        record(upstream.url("ollama"), path) as recording,
    ):
        assert _converse(recording.url) == (["read_file"], "The file says: hello from a.txt")
    cassette = load_cassette(path)
    assert [i.wire for i in cassette.interactions] == ["ollama-api"] * 2
    first, second = cassette.interactions
    assert first.request.path == "/api/chat"
    assert first.response.frames is not None
    assert all(f.event is None for f in first.response.frames)
    assert '"done":true' in first.response.frames[-1].data
    assert second.response.frames is None
    with replay_server(path) as server:
        assert _converse(server.url) == (["read_file"], "The file says: hello from a.txt")
    steps = [step for turn in script_from_cassette(cassette).turns for step in turn.steps]
    assert any(isinstance(s, ToolCall) and s.input == {"path": "a.txt"} for s in steps)
    assert Text("The file says: hello from a.txt") in steps
    assert Usage(40, 18) in steps
