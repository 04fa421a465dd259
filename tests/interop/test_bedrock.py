"""The real, unmodified boto3 / botocore (``bedrock-runtime``) and anthropic's
``AnthropicBedrock`` against the Bedrock wires of the model double: Converse and
ConverseStream, InvokeModel and InvokeModelWithResponseStream, the binary event stream
(checked by botocore's CRCs), Bedrock's error shapes, exceptions inside a stream, and
botocore's standard retry mode against scripted throttling. Static fake credentials, no
network: boto3 is pointed at the double with ``endpoint_url=``, ``AnthropicBedrock`` with
``base_url=``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import closing
from typing import Any

import anthropic
import httpx2
import pytest
import urllib3
from botocore.eventstream import ChecksumMismatch
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    EventStreamError,
    ReadTimeoutError,
)

from stuntset import scenarios
from stuntset.doubles.model import StandIn
from stuntset.script import (
    AuthExpired,
    HttpError,
    Overloaded,
    RateLimit,
    Reasoning,
    Script,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from stuntset.wires import Framing

from ._bedrock import (
    MODEL,
    bedrock_client,
    boto_client,
    close_boto_clients,
    converse_boto,
    converse_sdk,
)
from ._bedrock import no_backoff as no_backoff  # the fixture, for the tests below
from ._catalog_content import CONTENT, USAGE


@pytest.fixture(autouse=True)
def _close_boto_clients(stand_in: StandIn) -> Iterator[None]:
    # set up after the stand-in, so torn down before it: a loopback server stopping with a
    # client's keep-alive connection still open waits for it (and the leak check sees it)
    yield
    close_boto_clients()


#: every test here starts boto3 or a loopback server: over the fast tier's ~0.2 s budget
pytestmark = pytest.mark.slow

MODEL_SCENARIOS = [s.name for s in scenarios.all() if s.name != "spawn_missing"]

#: What boto3 raises for each fault of the catalog on Converse (observed, botocore 1.44):
#: (streamed, whole). A whole body botocore cannot parse as JSON is read as an empty
#: response (no ``output``: the KeyError is the caller's), not raised.
BOTO_FAULTS: dict[str, tuple[type[BaseException], type[BaseException]]] = {
    "auth_expired_mid_run": (ClientError, ClientError),
    "stream_cut": (urllib3.exceptions.ProtocolError, KeyError),
    "malformed_json": (KeyError, KeyError),
    "garbage_bytes": (ChecksumMismatch, UnicodeDecodeError),
    "crash_mid_turn": (urllib3.exceptions.ProtocolError, ConnectionClosedError),
    # a stream's read timeout is urllib3's own (botocore wraps only what it reads itself)
    "stuck": (urllib3.exceptions.ReadTimeoutError, ReadTimeoutError),
}
#: A whole response's dropped connection or read timeout is retried by botocore (and by
#: the anthropic SDK): with one attempt the fault itself is raised, not the used-up script.
ONE_ATTEMPT = ("stream_cut", "crash_mid_turn", "stuck")


def _boto_check(stand_in: StandIn, name: str, stream: bool) -> None:
    stand_in.play(scenarios.build(name))
    options: dict[str, Any] = {"read_timeout": 0.3} if name == "stuck" else {}
    if name in ONE_ATTEMPT and not stream:
        options["attempts"] = 1
    if name in CONTENT:
        answers = converse_boto(stand_in, stream=stream, **options)
        assert [(a.text, a.calls) for a in answers] == CONTENT[name]
        if name in USAGE:
            assert (answers[-1].input_tokens, answers[-1].output_tokens) == USAGE[name]
        if name in ("rate_limited", "overloaded"):  # botocore retried the 429 / 503 itself
            assert [r.status for r in stand_in.requests] == [429 if "rate" in name else 503, 200]
        return
    if name == "out_of_order":
        # neither is detected: a delta after messageStop is more text, and a stream event
        # where the response belongs parses as a response without ``output``
        if stream:
            assert [a.text for a in converse_boto(stand_in, stream=True)] == ["out of order"]
        else:
            with pytest.raises(KeyError, match="output"):
                converse_boto(stand_in, stream=False)
        return
    expected = BOTO_FAULTS[name][0 if stream else 1]
    with pytest.raises(expected) as raised:
        converse_boto(stand_in, stream=stream, **options)
    if name == "auth_expired_mid_run":
        assert isinstance(raised.value, ClientError)
        error = raised.value.response["Error"]
        assert error["Code"] == "ExpiredTokenException"
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


@pytest.mark.slow
@pytest.mark.real_time
@pytest.mark.usefixtures("no_backoff")
@pytest.mark.stand_in(allow_unused_turns=True)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", MODEL_SCENARIOS)
def test_catalog_with_boto3_converse(stand_in: StandIn, name: str, stream: bool) -> None:
    _boto_check(stand_in, name, stream)


#: What ``AnthropicBedrock`` raises for each fault (observed, anthropic 2.14): (streamed,
#: whole). Its stream decoder is botocore's (``EventStreamBuffer``: CRCs checked).
SDK_FAULTS: dict[str, tuple[type[BaseException], type[BaseException]]] = {
    "auth_expired_mid_run": (anthropic.PermissionDeniedError, anthropic.PermissionDeniedError),
    # a whole body's transport errors are wrapped (and retried, so ``max_retries=0`` here)
    "stream_cut": (httpx2.RemoteProtocolError, anthropic.APIConnectionError),
    "malformed_json": (json.JSONDecodeError, json.JSONDecodeError),
    "garbage_bytes": (ChecksumMismatch, AttributeError),
    "crash_mid_turn": (httpx2.RemoteProtocolError, anthropic.APIConnectionError),
    "stuck": (httpx2.ReadTimeout, anthropic.APITimeoutError),
    "out_of_order": (IndexError, TypeError),
}


def _sdk_check(stand_in: StandIn, name: str, stream: bool) -> None:
    stand_in.play(scenarios.build(name))
    options: dict[str, Any] = {"timeout": httpx2.Timeout(0.3)} if name == "stuck" else {}
    if name in ONE_ATTEMPT and not stream:
        options["max_retries"] = 0
    client = bedrock_client(stand_in, "in-process", **options)
    if name in CONTENT:
        answers = converse_sdk(stand_in, client, stream=stream)
        assert [(a.text, a.calls) for a in answers] == CONTENT[name]
        if name in USAGE:
            assert (answers[-1].input_tokens, answers[-1].output_tokens) == USAGE[name]
        return
    with pytest.raises(SDK_FAULTS[name][0 if stream else 1]):
        converse_sdk(stand_in, client, stream=stream)


@pytest.mark.slow
@pytest.mark.stand_in(allow_unused_turns=True)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("name", MODEL_SCENARIOS)
def test_catalog_with_anthropic_bedrock(stand_in: StandIn, name: str, stream: bool) -> None:
    _sdk_check(stand_in, name, stream)


# --- Converse ---------------------------------------------------------------------------------

TURN = [
    Reasoning("Think first.", signature="sig-123"),
    Text("Calling."),
    ToolCall("lookup", {"q": "x", "n": [1, 2]}, id="tooluse_1"),
    ToolResult("found"),
    Text("Found it."),
    Usage(11, 6),
]


@pytest.mark.real_time
@pytest.mark.stand_in(allow_unused_turns=True)  # the streamed call is not answered
def test_converse_stream_and_whole_agree_and_the_tool_result_goes_back(stand_in: StandIn) -> None:
    stand_in.play(Script.of(TURN, TURN))
    client = boto_client(stand_in.url("bedrock"))
    ask = [{"role": "user", "content": [{"text": "Hello"}]}]
    whole = client.converse(modelId=MODEL, messages=ask)
    assert whole["stopReason"] == "tool_use"
    content = whole["output"]["message"]["content"]
    assert content[0] == {"reasoningContent": {"reasoningText": {"text": "Think first.", "signature": "sig-123"}}}  # fmt: skip
    assert content[1:] == [
        {"text": "Calling."},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "lookup", "input": {"q": "x", "n": [1, 2]}}},
    ]
    history = [
        *ask,
        whole["output"]["message"],
        {
            "role": "user",
            "content": [{"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "found"}]}}],
        },
    ]
    final = client.converse(modelId=MODEL, messages=history)
    assert final["output"]["message"]["content"] == [{"text": "Found it."}]
    assert final["usage"] == {"inputTokens": 11, "outputTokens": 6, "totalTokens": 17}
    with closing(client.converse_stream(modelId=MODEL, messages=ask)["stream"]) as stream:
        events = list(stream)
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "messageStart"
    assert kinds[-2:] == ["messageStop", "metadata"]
    assert events[-2]["messageStop"]["stopReason"] == "tool_use"
    starts = [e["contentBlockStart"] for e in events if "contentBlockStart" in e]
    assert starts == [
        {"start": {"toolUse": {"toolUseId": "tooluse_1", "name": "lookup"}}, "contentBlockIndex": 2}
    ]
    deltas = [e["contentBlockDelta"]["delta"] for e in events if "contentBlockDelta" in e]
    assert {"reasoningContent": {"signature": "sig-123"}} in deltas
    arguments = "".join(d["toolUse"]["input"] for d in deltas if "toolUse" in d)
    assert json.loads(arguments) == {"q": "x", "n": [1, 2]}
    first, second, third = stand_in.requests
    assert (first.wire, first.path) == ("bedrock-converse", f"/model/{MODEL}/converse")
    assert third.path == f"/model/{MODEL}/converse-stream"
    assert second.body["messages"][-1]["content"][0]["toolResult"]["toolUseId"] == "tooluse_1"
    # SigV4, signed with the fake keys; the journal keeps no signature
    assert first.headers["authorization"] == "AWS4-HMAC-SHA256 <redacted>"


@pytest.mark.real_time
@pytest.mark.stand_in(
    Script.of([Text("Hello there, byte by byte."), Usage(3, 5)]), framing=Framing(write_size=1)
)
def test_a_stream_split_into_one_byte_writes_reads_the_same(stand_in: StandIn) -> None:
    client = boto_client(stand_in.url("bedrock"))
    ask = [{"role": "user", "content": [{"text": "Hello"}]}]
    with closing(client.converse_stream(modelId=MODEL, messages=ask)["stream"]) as stream:
        events = list(stream)
    text = "".join(e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e)  # fmt: skip
    assert text == "Hello there, byte by byte."


# --- errors and throttling --------------------------------------------------------------------


@pytest.mark.real_time
@pytest.mark.usefixtures("no_backoff")
def test_standard_retry_mode_retries_scripted_throttling_then_gives_up(stand_in: StandIn) -> None:
    stand_in.play(
        Script.of(
            [RateLimit()],
            [RateLimit()],
            [Text("third time")],
            [RateLimit()],
            [RateLimit()],
            [RateLimit()],
        )
    )
    client = boto_client(stand_in.url("bedrock"))  # standard mode: 3 attempts in all
    ask = [{"role": "user", "content": [{"text": "Hello"}]}]
    done = client.converse(modelId=MODEL, messages=ask)
    assert done["output"]["message"]["content"] == [{"text": "third time"}]
    assert done["ResponseMetadata"]["RetryAttempts"] == 2
    with pytest.raises(ClientError) as raised:
        client.converse(modelId=MODEL, messages=ask)
    error = raised.value.response
    assert error["Error"] == {
        "Code": "ThrottlingException",
        "Message": "Too many requests, please wait before trying again.",
    }
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 429
    assert error["ResponseMetadata"]["RetryAttempts"] == 2
    assert "reached max retries: 2" in str(raised.value)
    assert [r.status for r in stand_in.requests] == [429, 429, 200, 429, 429, 429]


ERRORS = [
    (HttpError(400, message="Malformed input request"), 400, "ValidationException", 1),
    (HttpError(403), 403, "AccessDeniedException", 1),
    (
        HttpError(
            403,
            error_type="UnrecognizedClientException",
            message="The security token included in the request is invalid.",
        ),
        403,
        "UnrecognizedClientException",
        1,
    ),
    (AuthExpired(), 403, "ExpiredTokenException", 1),
    (HttpError(500), 500, "InternalServerException", 3),  # transient: retried
    (Overloaded(), 503, "ServiceUnavailableException", 3),
]


@pytest.mark.real_time
@pytest.mark.usefixtures("no_backoff")
@pytest.mark.parametrize(
    ("fault", "status", "code", "attempts"), ERRORS, ids=[e[2] for e in ERRORS]
)
def test_bedrocks_error_shapes_as_botocore_reads_them(
    stand_in: StandIn, fault: Any, status: int, code: str, attempts: int
) -> None:
    stand_in.play(Script.of(*([fault] for _ in range(attempts))))
    client = boto_client(stand_in.url("bedrock"))
    with pytest.raises(ClientError) as raised:
        client.converse(modelId=MODEL, messages=[{"role": "user", "content": [{"text": "x"}]}])
    response = raised.value.response
    assert response["Error"]["Code"] == code
    assert response["ResponseMetadata"]["HTTPStatusCode"] == status
    if code not in ("UnrecognizedClientException", "ExpiredTokenException"):
        assert type(raised.value).__name__ == code  # the operation's modeled exception
    assert len(stand_in.requests) == attempts
    headers = response["ResponseMetadata"]["HTTPHeaders"]
    assert headers["x-amzn-errortype"].startswith(code + ":")
    assert headers["x-amzn-requestid"]


@pytest.mark.real_time
def test_an_error_inside_a_stream_is_botocores_event_stream_error(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("partial"), RateLimit()], [Text("partial"), Overloaded()]))
    client = boto_client(stand_in.url("bedrock"))
    ask = [{"role": "user", "content": [{"text": "Hello"}]}]
    for code in ("throttlingException", "serviceUnavailableException"):
        seen: list[dict[str, Any]] = []
        stream = client.converse_stream(modelId=MODEL, messages=ask)["stream"]
        with closing(stream), pytest.raises(EventStreamError) as raised:
            seen.extend(stream)
        assert raised.value.response["Error"]["Code"] == code
        assert [next(iter(e)) for e in seen][:1] == ["messageStart"]


def test_an_error_inside_an_invoke_stream_is_the_sdks_error_event(stand_in: StandIn) -> None:
    stand_in.play(Script.of([Text("partial"), RateLimit()]))
    client = bedrock_client(stand_in, "in-process", max_retries=0)
    with (
        pytest.raises(anthropic.APIStatusError) as raised,
        client.messages.stream(
            model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}]
        ) as events,
    ):
        for _ in events:
            pass
    assert raised.value.body == {
        "type": "error",
        "error": {
            "type": "throttlingException",
            "message": "Too many requests, please wait before trying again.",
        },
    }


# --- InvokeModel ------------------------------------------------------------------------------


@pytest.mark.stand_in(allow_unused_turns=True)  # the tool calls are not answered
@pytest.mark.parametrize("mode", ["in-process", "loopback"])
def test_anthropic_bedrock_streams_and_creates_on_invoke(stand_in: StandIn, mode: str) -> None:
    stand_in.play(Script.of(TURN, TURN))
    client = bedrock_client(stand_in, mode)  # type: ignore[arg-type]
    ask = [{"role": "user", "content": "Hello"}]
    with client.messages.stream(model=MODEL, max_tokens=64, messages=ask) as events:  # type: ignore[arg-type]
        streamed = events.get_final_message()
    whole = client.messages.create(model=MODEL, max_tokens=64, messages=ask)  # type: ignore[arg-type]
    for message in (streamed, whole):
        assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
        assert message.stop_reason == "tool_use"
        assert message.id.startswith("msg_bdrk")
        assert message.model == MODEL
    first, second = stand_in.requests
    assert (first.wire, first.path) == ("bedrock-invoke", f"/model/{MODEL}/invoke-with-response-stream")  # fmt: skip
    assert second.path == f"/model/{MODEL}/invoke"
    # anthropic 2.14 sends its own API version here, not Bedrock's documented
    # ``bedrock-2023-05-31`` (which the wire's demo client sends): the double takes both
    assert first.body["anthropic_version"] == anthropic._constants.ANTHROPIC_API_VERSION
    assert "model" not in first.body
    assert "stream" not in first.body


@pytest.mark.real_time
def test_boto3_invoke_model_with_response_stream_carries_messages_events(
    stand_in: StandIn,
) -> None:
    stand_in.play(Script.of([Text("Hi from invoke."), Usage(4, 2)]))
    client = boto_client(stand_in.url("bedrock"))
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
    }
    response = client.invoke_model_with_response_stream(modelId=MODEL, body=json.dumps(body))
    with closing(response["body"]) as body_stream:
        events = [json.loads(e["chunk"]["bytes"]) for e in body_stream]
    assert [e["type"] for e in events][:1] == ["message_start"]
    assert events[-1]["type"] == "message_stop"
    text = "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")
    assert text == "Hi from invoke."
    assert stand_in.requests[0].wire == "bedrock-invoke"
