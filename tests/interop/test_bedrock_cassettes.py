"""Cassettes on the Bedrock wires with the real boto3 and ``AnthropicBedrock``: recorded
through the proxy in front of the model double (SigV4's ``authorization``, ``x-amz-date``,
``x-amz-content-sha256`` and the STS ``x-amz-security-token`` never reach the file), the
binary event stream kept message by message (base64 frames) and replayed byte for byte to the
SDKs, which check its CRCs again, and turned into a script."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import anthropic
import pytest
from botocore.exceptions import ClientError

import stuntset
from stuntset.cassettes import load_cassette
from stuntset.cassettes.record import record
from stuntset.cassettes.replay_server import replay_server
from stuntset.cassettes.to_script import script_from_cassette
from stuntset.script import HttpError, RateLimit, Script, Text, ToolCall, Usage

from ._bedrock import KEY_ID, MODEL, SECRET, TOKEN, boto_client, close_boto_clients

pytestmark = [pytest.mark.slow, pytest.mark.real_time]

ASK = [{"role": "user", "content": [{"text": "read a.txt"}]}]
SCRIPT = Script.of(
    [Text("Let me look."), ToolCall("read_file", {"path": "a.txt"}, id="tooluse_1"), Usage(9, 4)],
    [Text("It says hello."), Usage(12, 3)],
    [HttpError(400, message="Malformed input request")],
)


@pytest.fixture(autouse=True)
def _close_boto_clients() -> Iterator[None]:
    yield
    close_boto_clients()


def _session(client: Any) -> tuple[list[str], str, str]:
    """A streamed tool call, a whole answer, then a request Bedrock refuses."""
    with closing(client.converse_stream(modelId=MODEL, messages=ASK)["stream"]) as stream:
        events = list(stream)
    calls = [e["contentBlockStart"]["start"]["toolUse"]["name"] for e in events if "contentBlockStart" in e]  # fmt: skip
    answer = client.converse(modelId=MODEL, messages=ASK)["output"]["message"]["content"][0]["text"]
    with pytest.raises(ClientError) as refused:
        client.converse(modelId=MODEL, messages=ASK)
    return calls, answer, refused.value.response["Error"]["Code"]


def test_a_converse_session_is_recorded_secret_free_and_replays_to_boto3(tmp_path: Path) -> None:
    path = tmp_path / "bedrock.jsonl"
    with (
        stuntset.serve(SCRIPT) as upstream,
        record(upstream.url("bedrock"), path) as recording,
    ):
        seen = _session(boto_client(recording.url, attempts=1))
    assert seen == (["read_file"], "It says hello.", "ValidationException")
    written = path.read_text()
    for secret in (KEY_ID, SECRET, TOKEN, "AWS4-HMAC-SHA256", "Signature="):
        assert secret not in written
    cassette = load_cassette(path)
    streamed, whole, refused = cassette.interactions
    assert [i.wire for i in cassette.interactions] == ["bedrock-converse"] * 3
    assert streamed.request.path == f"/model/{MODEL}/converse-stream"
    for gone in ("authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"):
        assert gone not in streamed.request.headers
    frames = streamed.response.frames
    assert frames is not None
    assert {f.encoding for f in frames} == {"base64"}
    assert [f.event for f in frames][:1] == ["messageStart"]
    assert whole.response.frames is None
    assert refused.response.headers["x-amzn-errortype"].startswith("ValidationException:")
    with replay_server(path) as server:
        assert _session(boto_client(server.url, attempts=1)) == seen
    steps = [t.steps for t in script_from_cassette(cassette).turns]
    assert steps[0][:2] == (Text("Let me look.", chunks=3), ToolCall("read_file", {"path": "a.txt"}, id="tooluse_1"))  # fmt: skip
    assert steps[1][0] == Text("It says hello.")
    assert isinstance(steps[2][0], HttpError)
    assert (steps[2][0].status, steps[2][0].error_type) == (400, "ValidationException")


def test_an_invoke_stream_and_its_exception_replay_to_anthropic_bedrock(tmp_path: Path) -> None:
    path = tmp_path / "invoke.jsonl"
    script = Script.of([Text("Hi from invoke."), Usage(4, 2)], [Text("partial"), RateLimit()])

    def run(url: str) -> tuple[str, Any]:
        client = anthropic.AnthropicBedrock(
            base_url=url,
            aws_access_key=KEY_ID,
            aws_secret_key=SECRET,
            aws_session_token=TOKEN,
            aws_region="us-east-1",
            max_retries=0,
        )
        with client:
            ask = [{"role": "user", "content": "hi"}]
            with client.messages.stream(model=MODEL, max_tokens=64, messages=ask) as events:  # type: ignore[arg-type]
                text = events.get_final_text()
            with (
                pytest.raises(anthropic.APIStatusError) as failed,
                client.messages.stream(model=MODEL, max_tokens=64, messages=ask) as events,  # type: ignore[arg-type]
            ):
                events.get_final_text()
        return text, failed.value.body

    with stuntset.serve(script) as upstream, record(upstream.url("bedrock"), path) as recording:
        seen = run(recording.url)
    assert seen[0] == "Hi from invoke."
    assert seen[1]["error"]["type"] == "throttlingException"
    written = path.read_text()
    assert TOKEN not in written
    first, second = load_cassette(path).interactions
    assert first.wire == "bedrock-invoke"
    assert second.response.frames is not None
    assert second.response.frames[-1].event == "throttlingException"
    with replay_server(path) as server:
        assert run(server.url) == seen
    turns = script_from_cassette(load_cassette(path)).turns
    assert isinstance(turns[1].steps[-1], RateLimit)


def test_a_secret_inside_a_binary_frame_is_scrubbed_and_the_crcs_made_again(
    tmp_path: Path,
) -> None:
    leaked = "sk-ant-api03-" + "Q" * 80
    path = tmp_path / "leak.jsonl"
    script = Script.of([Text(f"the key is {leaked}")])
    with stuntset.serve(script) as upstream, record(upstream.url("bedrock"), path) as recording:
        client = boto_client(recording.url, attempts=1)
        with closing(client.converse_stream(modelId=MODEL, messages=ASK)["stream"]) as stream:
            list(stream)
    written = path.read_text()
    frames = load_cassette(path).interactions[0].response.frames
    assert frames is not None
    raw = b"".join(base64.b64decode(f.data) for f in frames)
    assert leaked.encode() not in raw
    assert leaked not in written
    with replay_server(path) as server:  # botocore checks every CRC of the rebuilt messages
        replayed = boto_client(server.url, attempts=1)
        with closing(replayed.converse_stream(modelId=MODEL, messages=ASK)["stream"]) as stream:
            text = "".join(
                e["contentBlockDelta"]["delta"].get("text", "")
                for e in stream
                if "contentBlockDelta" in e
            )
    assert text.startswith("the key is ")
    assert leaked not in text
