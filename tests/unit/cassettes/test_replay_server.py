"""A cassette on a real port: clients in other processes (a real agent CLI, a Node client) get
the recorded responses frame by frame, with the same matching and checks as in-process."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import anthropic
import openai
import pytest

import stuntset
from stuntset import scenarios
from stuntset.cassettes import load_cassette
from stuntset.cassettes.record import record
from stuntset.cassettes.replay import CassetteMismatch, UnusedInteractions
from stuntset.cassettes.replay_server import replay_server
from stuntset.cassettes.session import CassetteSession

ASK = [{"role": "user", "content": "hi"}]


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as clients:
        yield clients


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two exchanges on two wires, recorded from the model double: a streamed chat answer
    and an Anthropic message."""
    path = tmp_path_factory.mktemp("cassettes") / "two.jsonl"
    with (
        ExitStack() as stack,
        stuntset.serve(scenarios.build("multi_turn", turns=2)) as upstream,
        record(upstream.base_url, path) as rec,
    ):
        chat = stack.enter_context(openai.OpenAI(api_key="k", base_url=rec.url + "/openai/v1"))
        stream = chat.chat.completions.create(model="gpt-x", messages=ASK, stream=True)
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        claude = stack.enter_context(
            anthropic.Anthropic(api_key="k", base_url=rec.url + "/anthropic")
        )
        message = claude.messages.create(model="claude-x", max_tokens=10, messages=ASK)
        assert message.content
    return path


def answers(url: str, stack: ExitStack) -> tuple[str, str]:
    chat = stack.enter_context(openai.OpenAI(api_key="k", base_url=url + "/v1", max_retries=0))
    stream = chat.chat.completions.create(model="gpt-x", messages=ASK, stream=True)
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    claude = stack.enter_context(anthropic.Anthropic(api_key="k", base_url=url, max_retries=0))
    message = claude.messages.create(model="claude-x", max_tokens=10, messages=ASK)
    block = message.content[0]
    assert block.type == "text"
    return text, block.text


@pytest.mark.slow
@pytest.mark.real_time
def test_clients_get_the_recording_over_loopback(recorded: Path, stack: ExitStack) -> None:
    with replay_server(recorded) as server:
        assert answers(server.url, stack) == ("Answer number 1.", "Answer number 2.")
    server.replayer.verify()
    assert [i.id for i in server.replayer.played] == ["i-1", "i-2"]


@pytest.mark.real_time
def test_a_request_not_recorded_is_a_400_the_sdk_does_not_retry(
    recorded: Path, stack: ExitStack
) -> None:
    with replay_server(recorded) as server:
        chat = stack.enter_context(openai.OpenAI(api_key="k", base_url=server.url + "/v1"))
        with pytest.raises(openai.BadRequestError, match="no recorded interaction") as raised:
            chat.chat.completions.create(model="gpt-y", messages=ASK)
    assert isinstance(raised.value.body, dict)
    assert raised.value.body["type"] == "stuntset_cassette_mismatch"
    assert 'body.model: recorded "gpt-x", got "gpt-y"' in raised.value.body["message"]
    assert len(server.replayer.mismatches) == 1  # one request: the SDK did not retry a 400
    with pytest.raises(CassetteMismatch, match=r"matches POST /v1/chat/completions"):
        server.replayer.verify()


@pytest.mark.real_time
def test_the_session_serves_its_cassette_to_other_processes(
    recorded: Path, stack: ExitStack
) -> None:
    session = CassetteSession(recorded)
    url = session.server_url()
    assert session.server_url() == url  # one server per session
    chat = stack.enter_context(openai.OpenAI(api_key="k", base_url=url + "/v1"))
    stream = chat.chat.completions.create(model="gpt-x", messages=ASK, stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    with pytest.raises(UnusedInteractions, match="i-2"):  # the Anthropic one was never asked
        session.close()


@pytest.mark.slow
@pytest.mark.real_time
def test_the_serve_command_replays_until_ctrl_c_then_checks(
    recorded: Path, stack: ExitStack
) -> None:
    command = [sys.executable, "-m", "stuntset.cli", "cassettes", "serve", str(recorded)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert answers(url, stack) == ("Answer number 1.", "Answer number 2.")
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert f"played all 2 interaction(s) of {recorded}" in err

    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        process.stdout.readline()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1
    assert "2 recorded interaction(s) were never requested" in err
    assert len(load_cassette(recorded).interactions) == 2  # serving never writes
