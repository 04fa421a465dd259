"""Cassettes on the Azure OpenAI wires with the real ``openai.AzureOpenAI``: recorded through
the proxy in front of the model double (the ``api-key`` header never reaches the file), the
deployment path named as Azure's wire, replayed to the SDK over loopback, and turned into a
script."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest

import stuntset
from stuntset import scenarios
from stuntset.cassettes import load_cassette
from stuntset.cassettes.record import record
from stuntset.cassettes.replay_server import replay_server
from stuntset.cassettes.to_script import script_from_cassette
from stuntset.script import Text, ToolCall

KEY = "4f1c" + "9a7e" * 7
ASK: Any = [{"role": "user", "content": "read a.txt"}]


def _converse(endpoint: str) -> tuple[list[str], str]:
    """A streamed tool call, its result sent back, and the whole answer."""
    with openai.AzureOpenAI(
        azure_endpoint=endpoint, api_version="2024-10-21", api_key=KEY, timeout=5.0
    ) as client:
        with client.chat.completions.stream(model="dep", messages=ASK) as events:
            for _ in events:
                pass
            first = events.get_final_completion().choices[0].message
        calls = [c.function.name for c in first.tool_calls or []]
        history = [
            *ASK,
            first.model_dump(exclude_none=True, exclude={"parsed"}),
            *(
                {"role": "tool", "tool_call_id": c.id, "content": "x"}
                for c in first.tool_calls or []
            ),
        ]
        answer = client.chat.completions.create(model="dep", messages=history)
        return calls, answer.choices[0].message.content or ""


@pytest.mark.slow
@pytest.mark.real_time
def test_an_azure_session_is_recorded_key_free_and_replays_to_the_sdk(tmp_path: Path) -> None:
    path = tmp_path / "azure.jsonl"
    with (
        stuntset.serve(scenarios.build("tool_use")) as upstream,
        record(upstream.url("azure"), path) as recording,
    ):
        assert _converse(recording.url) == (["read_file"], "The file says: hello from a.txt")
    written = path.read_text()
    assert KEY not in written
    cassette = load_cassette(path)
    assert [i.wire for i in cassette.interactions] == ["azure-openai-chat"] * 2
    first = cassette.interactions[0]
    assert first.request.path == "/openai/deployments/dep/chat/completions"
    assert first.request.query == "api-version=2024-10-21"
    assert "api-key" not in first.request.headers
    assert first.response.frames is not None
    with replay_server(path) as server:
        assert _converse(server.url) == (["read_file"], "The file says: hello from a.txt")
    steps = [step for turn in script_from_cassette(cassette).turns for step in turn.steps]
    assert any(isinstance(s, ToolCall) and s.input == {"path": "a.txt"} for s in steps)
    assert Text("The file says: hello from a.txt") in steps
