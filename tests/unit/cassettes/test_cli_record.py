"""Recording a CLI transcript: the wrapper tees a (here: fake) claude driven by the real,
unmodified claude-agent-sdk, and the cassette holds both directions with timing."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from stuntset import scenarios
from stuntset.cassettes import load_cassette, verify_tree
from stuntset.cassettes.cli_record import install_cli_recorder
from stuntset.doubles.cli import install_cli

claude_agent_sdk = pytest.importorskip("claude_agent_sdk")


@pytest.mark.real_time
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_a_claude_session_is_recorded_through_the_tee(tmp_path: Path) -> None:
    real = install_cli(
        "claude", scenarios.build("tool_use"), bin_dir=tmp_path / "real", time_scale=0
    )
    cassette = tmp_path / "cassettes" / "claude.jsonl"
    wrapper = install_cli_recorder("claude", real.path, cassette, bin_dir=tmp_path / "bin")
    options = claude_agent_sdk.ClaudeAgentOptions(cli_path=str(wrapper))
    seen = [m async for m in claude_agent_sdk.query(prompt="read a.txt", options=options)]
    assert type(seen[-1]).__name__ == "ResultMessage"
    await anyio.lowlevel.checkpoint()

    recorded = load_cassette(cassette)
    (interaction,) = recorded.interactions
    assert (interaction.id, interaction.wire, interaction.response.status) == (
        "i-1",
        "claude-cli",
        0,
    )
    assert "--output-format" in interaction.request.body["argv"]
    stdin = [json.loads(line["data"]) for line in interaction.request.body["stdin"]]
    assert stdin[0]["type"] == "control_request"
    assert stdin[0]["request"]["subtype"] == "initialize"
    assert any(message["type"] == "user" for message in stdin)
    frames = interaction.response.frames
    assert frames is not None
    kinds = [json.loads(frame.data)["type"] for frame in frames]
    assert kinds[:2] == ["control_response", "system"]
    assert kinds.index("result") > kinds.index("assistant")
    assert [frame.t for frame in frames] == sorted(frame.t for frame in frames)
    assert verify_tree(cassette.parent) == (1, [])
    assert len(real.invocations) == 1
