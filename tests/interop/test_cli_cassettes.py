"""CLI cassettes with the real, unmodified SDKs: a run is recorded through the tee, then the
replaying fake serves it back and the SDK sees exactly what it saw the first time.

The recorded program is our fake ``claude``/``codex`` (dogfood), and — where the wheel bundles
one — the real ``claude`` binary itself, pointed at the model double over loopback: a
recording of a program no one here wrote."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

import stuntset
from stuntset import scenarios
from stuntset.cassettes import load_cassette, verify_tree
from stuntset.cassettes.cli_record import install_cli_recorder
from stuntset.cassettes.cli_replay import install_cli_replay
from stuntset.cassettes.replay import CassetteMismatch
from stuntset.cassettes.session import CassetteSession
from stuntset.doubles.cli import install_cli

claude_agent_sdk = pytest.importorskip("claude_agent_sdk")
openai_codex = pytest.importorskip("openai_codex")

from claude_agent_sdk import (  # noqa: E402
    ClaudeAgentOptions,
    ClaudeSDKClient,
    PermissionResultAllow,
    ProcessError,
    ToolPermissionContext,
    query,
)
from openai_codex import Codex, CodexConfig  # noqa: E402

BUNDLED_CLAUDE = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
needs_bundled_claude = pytest.mark.skipif(
    not BUNDLED_CLAUDE.exists(), reason="this claude-agent-sdk wheel bundles no CLI"
)


async def real_claude(cli_path: Path, base_url: str, tmp_path: Path) -> list[Any]:
    """``query("read a.txt")`` through ``cli_path`` (the real claude, or a stand-in for it),
    talking to the Anthropic API at ``base_url``, in a home of its own under ``tmp_path``."""
    (tmp_path / "a.txt").write_text("hello from a.txt\n")
    env = {
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "test-key",
        "HOME": str(tmp_path / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "home" / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    options = ClaudeAgentOptions(
        cli_path=str(cli_path), env=env, cwd=str(tmp_path), model="claude-sonnet-4-5"
    )
    return [message async for message in query(prompt="read a.txt", options=options)]


async def allow(name: str, tool_input: dict[str, Any], context: ToolPermissionContext) -> Any:
    return PermissionResultAllow()


async def converse(cli_path: Path, prompt: str) -> list[Any]:
    """One ``ClaudeSDKClient`` conversation answering approvals: every message it yields."""
    options = ClaudeAgentOptions(cli_path=str(cli_path), can_use_tool=allow)
    async with ClaudeSDKClient(options) as client:
        await client.query(prompt)
        return [message async for message in client.receive_response()]


@pytest.mark.real_time
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_a_claude_conversation_with_approvals_replays_identically(tmp_path: Path) -> None:
    real = install_cli(
        "claude", scenarios.build("needs_approval"), bin_dir=tmp_path / "real", time_scale=0
    )
    cassette = tmp_path / "claude.jsonl"
    recorder = install_cli_recorder("claude", real.path, cassette, bin_dir=tmp_path / "rec")
    recorded = await converse(recorder, "delete the temp files")
    replay = install_cli_replay("claude", cassette, bin_dir=tmp_path / "replay")
    replayed = await converse(replay.path, "delete the temp files")
    await anyio.lowlevel.checkpoint()

    assert replayed == recorded
    assert [type(m).__name__ for m in replayed][-1] == "ResultMessage"
    replay.verify()
    (invocation,) = replay.invocations
    # the SDK's random control-request id this time, not the recorded one
    (initialize,) = [
        m for m in invocation.control_requests if m["request"]["subtype"] == "initialize"
    ]
    answers = [m for m in invocation.stdout if m.get("type") == "control_response"]
    assert answers[0]["response"]["request_id"] == initialize["request_id"]
    recorded_stdin = load_cassette(cassette).interactions[0].request.body["stdin"]
    assert initialize["request_id"] not in json.dumps(recorded_stdin)
    # the approval the fake asked for was answered again, to the recorded request id
    assert [m["response"]["response"]["behavior"] for m in invocation.control_responses] == [
        "allow"
    ]


@pytest.mark.real_time
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_another_prompt_fails_the_sdk_and_verify_says_why(tmp_path: Path) -> None:
    real = install_cli("claude", scenarios.build("happy_path"), bin_dir=tmp_path / "real")
    cassette = tmp_path / "claude.jsonl"
    recorder = install_cli_recorder("claude", real.path, cassette, bin_dir=tmp_path / "rec")
    options = ClaudeAgentOptions(cli_path=str(recorder))
    [m async for m in query(prompt="say hello", options=options)]
    replay = install_cli_replay("claude", cassette, bin_dir=tmp_path / "replay")
    options = ClaudeAgentOptions(cli_path=str(replay.path))
    with pytest.raises(ProcessError, match="exit code 1"):  # the SDK's error for exit 1
        [m async for m in query(prompt="say goodbye", options=options)]
    with pytest.raises(CassetteMismatch, match=r'message.content: recorded "say hello", got'):
        replay.verify()


@pytest.mark.slow
@pytest.mark.real_cli  # the recording tee (a Python child) starts the real claude
@pytest.mark.real_time
@needs_bundled_claude
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_the_real_claude_recorded_against_the_model_double_replays(tmp_path: Path) -> None:
    cassette = tmp_path / "claude.jsonl"
    with stuntset.serve(scenarios.build("tool_use")) as stand_in:
        url = stand_in.url("anthropic")
        recorder = install_cli_recorder("claude", BUNDLED_CLAUDE, cassette, bin_dir=tmp_path / "r")
        recorded = await real_claude(recorder, url, tmp_path)
        assert stand_in.requests  # the real program spoke to the double
    replay = install_cli_replay("claude", cassette, bin_dir=tmp_path / "replay")
    replayed = await real_claude(replay.path, url, tmp_path)  # only the cassette answers
    await anyio.lowlevel.checkpoint()

    assert replayed == recorded
    kinds = [type(m).__name__ for m in recorded]
    assert (kinds[0], kinds[-1]) == ("SystemMessage", "ResultMessage")
    replay.verify()
    # the key it ran with is in no cassette (nor in the session files the real CLI wrote)
    assert verify_tree(tmp_path)[1] == []


def _close(codex: Codex) -> None:
    """``Codex.close()`` leaves the child's stdout and stderr pipes to the GC: close them.

    Before it, the child is let end by itself at the end of its input: ``close()`` sends
    SIGTERM and SIGKILLs 2 s later (openai-codex 0.1), and a recorder whose exit (writing the
    cassette, measuring its coverage) takes longer on a loaded machine lost its cassette
    ("no such cassette") and was left unreaped."""
    process = codex._client._proc
    if process is not None and process.stdin is not None:
        process.stdin.close()
        process.wait(timeout=120)  # a hang guard only: it ends at once at EOF
    codex.close()
    if process is not None:
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _codex_turn(codex_bin: Path, tmp_path: Path, prompt: str) -> tuple[str | None, list[str]]:
    codex = Codex(
        config=CodexConfig(
            codex_bin=str(codex_bin), cwd=str(tmp_path), env={"CODEX_HOME": str(tmp_path / "h")}
        )
    )
    try:
        result = codex.thread_start().run(prompt)
    finally:
        _close(codex)
    return result.final_response, [item.root.type for item in result.items]


@pytest.mark.real_time
def test_a_codex_app_server_session_replays_to_the_sdk(tmp_path: Path) -> None:
    real = install_cli("codex", scenarios.build("tool_use"), bin_dir=tmp_path / "real")
    cassette = tmp_path / "codex.jsonl"
    recorder = install_cli_recorder("codex", real.path, cassette, bin_dir=tmp_path / "rec")
    recorded = _codex_turn(recorder, tmp_path, "read a.txt")
    replay = install_cli_replay("codex", cassette, bin_dir=tmp_path / "replay")
    assert _codex_turn(replay.path, tmp_path, "read a.txt") == recorded
    assert recorded[0] == "The file says: hello from a.txt"
    replay.verify()
    (invocation,) = replay.invocations
    assert invocation.argv == ["app-server", "--listen", "stdio://"]


@pytest.mark.real_time
def test_codex_exec_json_replays_as_the_typescript_sdk_reads_it(tmp_path: Path) -> None:
    real = install_cli("codex", scenarios.build("happy_path"), bin_dir=tmp_path / "real")
    cassette = tmp_path / "codex.jsonl"
    argv = ["exec", "--experimental-json", "--skip-git-repo-check", "-"]
    env = {**os.environ, "CODEX_HOME": str(tmp_path / "h")}

    def run(path: Path) -> list[dict[str, Any]]:
        done = subprocess.run(
            [str(path), *argv], input=b"Say hello", capture_output=True, env=env, check=True
        )
        return [json.loads(line) for line in done.stdout.splitlines()]

    recorded = run(install_cli_recorder("codex", real.path, cassette, bin_dir=tmp_path / "rec"))
    replay = install_cli_replay("codex", cassette, bin_dir=tmp_path / "replay")
    assert run(replay.path) == recorded
    assert [event["type"] for event in recorded][-1] == "turn.completed"
    replay.verify()


@pytest.mark.real_cli
@pytest.mark.real_time
@needs_bundled_claude
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.anyio
async def test_the_real_claudes_model_traffic_is_recorded_and_served_back(tmp_path: Path) -> None:
    """The other half: the real program's HTTP calls recorded through the cassette session's
    proxy, then answered by the session's loopback replay server — the real ``claude`` runs
    its whole turn against a cassette, with no model double left."""
    cassette = tmp_path / "cassettes" / "test_it.jsonl"
    with stuntset.serve(scenarios.build("tool_use")) as stand_in:
        recording = CassetteSession(cassette, mode="refresh", upstream=stand_in.url("anthropic"))
        recorded = await real_claude(BUNDLED_CLAUDE, recording.server_url(), tmp_path)
        recording.close()
    replaying = CassetteSession(cassette)
    replayed = await real_claude(BUNDLED_CLAUDE, replaying.server_url(), tmp_path)
    replaying.close()  # every recorded call was asked for again, and matched
    await anyio.lowlevel.checkpoint()

    texts = [
        [block.text for block in m.content if hasattr(block, "text")]
        for m in replayed
        if type(m).__name__ == "AssistantMessage"
    ]
    assert texts == [["Let me look at that file."], [], ["The file says: hello from a.txt"]]
    assert [type(m).__name__ for m in replayed] == [type(m).__name__ for m in recorded]
    assert load_cassette(cassette).wires == ["anthropic-messages"]
