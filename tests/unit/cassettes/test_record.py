"""Recording through the proxy, with a model double standing in for the real provider."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

import stuntset
from stuntset import scenarios
from stuntset.cassettes import load_cassette
from stuntset.cassettes.record import Recording, RecordingProxy, record, wire_of
from stuntset.cassettes.to_script import script_from_cassette
from stuntset.script import Text, ToolCall


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as clients:
        yield clients


KEY = "sk-" + "proj-" + "Zz9" * 12


@pytest.mark.real_time
def test_an_openai_session_is_recorded_as_streamed_and_secret_free(
    tmp_path: Path, stack: ExitStack
) -> None:
    path = tmp_path / "cassettes" / "session.jsonl"
    with (
        stuntset.serve(scenarios.build("tool_use")) as upstream,
        record(upstream.url("openai"), path) as recording,
    ):
        client = stack.enter_context(
            openai.OpenAI(api_key=KEY, base_url=recording.url, max_retries=0)
        )
        stream = client.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "read a.txt"}], stream=True
        )
        calls = [
            c
            for chunk in stream
            for c in (chunk.choices[0].delta.tool_calls or [])
            if chunk.choices
        ]
        assert calls[0].function.name == "read_file"
        answer = client.chat.completions.create(
            model="gpt-x",
            messages=[
                {"role": "user", "content": "read a.txt"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": calls[0].id,
                            "type": "function",
                            "function": {"name": "read_file", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": calls[0].id, "content": "hello from a.txt"},
            ],
        )
        assert answer.choices[0].message.content == "The file says: hello from a.txt"
    data = path.read_bytes()
    assert KEY.encode() not in data
    cassette = load_cassette(path)
    first, second = cassette.interactions
    assert (first.wire, first.request.path, first.response.status) == (
        "openai-chat",
        "/chat/completions",
        200,
    )
    assert "authorization" not in first.request.headers
    assert first.response.frames is not None
    assert first.response.frames[-1].data == "[DONE]"
    offsets = [frame.t for frame in first.response.frames]
    assert offsets == sorted(offsets)
    assert second.response.frames is None
    assert second.response.body["object"] == "chat.completion"
    steps = [step for turn in script_from_cassette(cassette).turns for step in turn.steps]
    assert Text("Let me look at that file.", chunks=6) in steps
    assert any(isinstance(s, ToolCall) and s.input == {"path": "a.txt"} for s in steps)


@pytest.mark.slow
@pytest.mark.real_time
def test_anthropic_and_errors_are_recorded_and_nothing_is_written_on_failure(
    tmp_path: Path, stack: ExitStack
) -> None:
    path = tmp_path / "c.jsonl"
    with (
        stuntset.serve(scenarios.build("rate_limited")) as upstream,
        record(upstream.url("anthropic"), path) as recording,
    ):
        client = stack.enter_context(
            anthropic.Anthropic(api_key=KEY, base_url=recording.url, max_retries=1)
        )
        message = client.messages.create(
            model="claude-x", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
        )
        assert message.content[0].text.startswith("Sorry for the wait")
    cassette = load_cassette(path)
    assert [(i.wire, i.response.status) for i in cassette.interactions] == [
        ("anthropic-messages", 429),
        ("anthropic-messages", 200),
    ]
    assert cassette.interactions[0].response.headers.get("retry-after-ms") == "1"
    assert cassette.interactions[0].response.body["error"]["type"] == "rate_limit_error"

    failed = tmp_path / "failed.jsonl"

    def fail_mid_recording() -> None:
        with (
            stuntset.serve(scenarios.build("happy_path")) as upstream,
            record(upstream.url("openai"), failed) as recording,
        ):
            stack.enter_context(
                openai.OpenAI(api_key="k", base_url=recording.url)
            ).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail_mid_recording()
    assert not failed.exists()


def test_the_recording_says_which_base_url_it_stands_for() -> None:
    def said(upstream: str) -> str:
        return Recording(RecordingProxy(upstream), "http://127.0.0.1:9").stands_for()

    assert said("https://api.openai.com/v1/") == (
        "http://127.0.0.1:9 stands for https://api.openai.com/v1: give it as a client's base URL "
        "that ends in /v1 (OpenAI SDK: base_url=...); http://127.0.0.1:9/<path> is forwarded to "
        "https://api.openai.com/v1/<path>"
    )
    assert "root base URL (Anthropic SDK" in said("https://api.anthropic.com")
    assert "give it as a client's base URL;" in said("https://example.com/llm/api")


def test_wires_are_told_by_path() -> None:
    assert [wire_of(p) for p in ("/v1/chat/completions", "/responses", "/v1/messages", "/v1/models")] == [
        "openai-chat", "openai-responses", "anthropic-messages", "http"
    ]  # fmt: skip


@pytest.mark.slow
@pytest.mark.real_time
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_the_record_command_writes_on_ctrl_c_sigterm_and_sighup(
    tmp_path: Path, stack: ExitStack, signame: str
) -> None:
    import signal
    import subprocess
    import sys

    output = tmp_path / "cli.jsonl"
    with stuntset.serve(scenarios.build("happy_path")) as upstream:
        command = [
            sys.executable,
            "-m",
            "stuntset.cli",
            "record",
            "--upstream",
            upstream.url("openai"),
            "-o",
            str(output),
        ]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            reply = stack.enter_context(
                openai.OpenAI(api_key="k", base_url=url)
            ).chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
            assert reply.choices[0].message.content == "Hello! How can I help you today?"
            process.send_signal(getattr(signal, signame))
            _, err = process.communicate(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, err
    assert (
        f"{url} stands for {upstream.url('openai')}: give it as a client's base URL that ends in /v1"
        in err
    )
    assert "1 interaction(s)" in err
    assert len(load_cassette(output).interactions) == 1


@pytest.mark.real_time
def test_keys_planted_in_real_traffic_never_reach_the_file(
    tmp_path: Path, stack: ExitStack
) -> None:
    """Through the proxy: a key in the query string, one in the request body written with a
    JSON escape, and one the model streams four characters a frame (so no frame holds it)."""
    from stuntset.script import Script, Text

    streamed = "sk-" + "ant-" + "api03-" + "Qw7" * 14
    path = tmp_path / "leaky.jsonl"
    script = Script.of([Text(f"here: {streamed} done", chunk_size=4)])
    with (
        stuntset.serve(script) as upstream,
        record(upstream.url("openai"), path) as recording,
    ):
        client = stack.enter_context(
            openai.OpenAI(api_key=KEY, base_url=recording.url, max_retries=0)
        )
        stream = client.chat.completions.create(
            model="gpt-x",
            messages=[{"role": "user", "content": "my key is " + KEY}],
            stream=True,
            extra_query={"api_key": "q-" + "k" * 20, "token": "t" * 12},
        )
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert streamed in text  # the client got it whole
    written = path.read_text()
    for secret in (KEY, streamed, streamed[8:20], "k" * 20, "t" * 12):
        assert secret not in written
    (interaction,) = load_cassette(path).interactions
    assert interaction.request.query == "api_key=<scrubbed:api_key>&token=<scrubbed:token>"
    frames = interaction.response.frames
    assert frames is not None
    replayed = "".join(
        (json.loads(f.data)["choices"] or [{}])[0].get("delta", {}).get("content") or ""
        for f in frames
        if f.data != "[DONE]"
    )
    assert replayed == "here: <scrubbed:anthropic-key> done"


@pytest.mark.real_time
def test_requests_share_one_pooled_upstream_connection_closed_with_the_recorder(
    tmp_path: Path,
) -> None:
    """Recording opened a client per request (a TLS set-up each, no keep-alive)."""
    from stuntset.cassettes._loopback import serving

    peers: list[object] = []

    async def upstream(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        peers.append(scope["client"])
        body = json.dumps({"id": "r", "object": "chat.completion", "choices": []}).encode()
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    with (
        serving(upstream, name="test-upstream") as url,
        record(url + "/v1", tmp_path / "c.jsonl") as recording,
        httpx2.Client() as client,
    ):
        for _ in range(3):
            client.post(recording.url + "/chat/completions", json={"model": "m"})
        pooled = getattr(recording.proxy, "_client", None)
    assert len(peers) == 3
    assert len(set(map(tuple, peers))) == 1  # type: ignore[arg-type]
    assert pooled is not None
    assert pooled.is_closed
    assert len(load_cassette(tmp_path / "c.jsonl").interactions) == 3
