"""Drive the real, unmodified boto3 (``bedrock-runtime``: ``converse``, ``converse_stream``)
and anthropic's ``AnthropicBedrock`` (``invoke`` / ``invoke-with-response-stream``) through a
conversation with the model double, with static fake credentials and no network."""

from __future__ import annotations

import json
from contextlib import closing
from typing import Any, Literal

import anthropic
import boto3
import httpx2
import pytest
from botocore.config import Config
from botocore.retries import standard

from stuntset.doubles.model import StandIn

from ._clients import DEFAULT_TIMEOUT, OPEN, Answer, _anthropic

MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
#: Static fake credentials: botocore signs with them (SigV4), the double reads no signature.
KEY_ID = "AKIA" + "IOSFODNN7" + "EXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
TOKEN = "FwoGZXIvYXdzEXAMPLE" + "sessiontoken" * 4
Mode = Literal["in-process", "loopback"]
#: boto3 clients made for the current test (closed by the test module's autouse fixture).
BOTO_OPEN: list[Any] = []


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's standard retry mode with its waits at zero (it sleeps ``random() * 2**n``
    seconds in real time between attempts; what it retries and how often stay its own)."""
    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0.0)


def boto_client(url: str, *, attempts: int = 3, read_timeout: float = 5.0, **config: Any) -> Any:
    """A ``bedrock-runtime`` client on ``url`` (the double's ``url("bedrock")``), in
    botocore's standard retry mode with ``attempts`` attempts in all."""
    options = Config(
        retries={"mode": "standard", "total_max_attempts": attempts},
        read_timeout=read_timeout,
        connect_timeout=5,
        **config,
    )
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
        aws_session_token=TOKEN,
        config=options,
    )
    BOTO_OPEN.append(client)
    return client


def close_boto_clients() -> None:
    while BOTO_OPEN:
        BOTO_OPEN.pop().close()


def _boto_turn(client: Any, messages: list[dict[str, Any]], stream: bool) -> Answer:
    if not stream:
        response = client.converse(modelId=MODEL, messages=messages)
        content = response["output"]["message"]["content"]
        text = "".join(block.get("text", "") for block in content)
        calls = [(b["toolUse"]["name"], b["toolUse"]["input"]) for b in content if "toolUse" in b]
        ids = [b["toolUse"]["toolUseId"] for b in content if "toolUse" in b]
        usage = response["usage"]
    else:
        response = client.converse_stream(modelId=MODEL, messages=messages)
        text, calls, ids, usage = "", [], [], {}
        inputs: dict[int, str] = {}
        with closing(response["stream"]) as stream:  # its connection, however it ends
            events = list(stream)
        for event in events:
            if "contentBlockStart" in event:
                start = event["contentBlockStart"]
                use = start["start"]["toolUse"]
                ids.append(use["toolUseId"])
                calls.append((use["name"], {}))
                inputs[start["contentBlockIndex"]] = ""
            elif "contentBlockDelta" in event:
                delta = event["contentBlockDelta"]["delta"]
                text += delta.get("text", "")
                if "toolUse" in delta:
                    index = event["contentBlockDelta"]["contentBlockIndex"]
                    inputs[index] += delta["toolUse"]["input"]
            elif "metadata" in event:
                usage = event["metadata"]["usage"]
        calls = [
            (name, json.loads(raw)) for (name, _), raw in zip(calls, inputs.values(), strict=True)
        ]
    answer = Answer(text, calls, usage.get("inputTokens", 0), usage.get("outputTokens", 0))
    answer.ids = ids  # type: ignore[attr-defined]
    return answer


def converse_boto(
    stand_in: StandIn, *, stream: bool, client: Any = None, **options: Any
) -> list[Answer]:
    """A whole conversation on Converse (tool rounds and follow-up prompts) until the
    script is used up; botocore's exception propagates as raised."""
    client = client or boto_client(stand_in.url("bedrock"), **options)
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "Hello there"}]}]
    answers: list[Answer] = []
    for _ in range(8):
        if not stand_in.double.unused():
            break
        answer = _boto_turn(client, messages, stream)
        answers.append(answer)
        ids: list[str] = answer.ids  # type: ignore[attr-defined]
        if answer.calls:
            uses = [
                {"toolUse": {"toolUseId": i, "name": name, "input": args}}
                for i, (name, args) in zip(ids, answer.calls, strict=True)
            ]
            results = [{"toolResult": {"toolUseId": i, "content": [{"text": "ok"}]}} for i in ids]
            messages += [
                {"role": "assistant", "content": uses},
                {"role": "user", "content": results},
            ]
        else:
            messages += [
                {"role": "assistant", "content": [{"text": answer.text or "-"}]},
                {"role": "user", "content": [{"text": "And then?"}]},
            ]
    return answers


def bedrock_client(stand_in: StandIn, mode: Mode, **options: Any) -> anthropic.AnthropicBedrock:
    """``AnthropicBedrock`` on the double: over loopback through ``base_url``, in process
    through an ``httpx2`` client on its transport."""
    options.setdefault("timeout", DEFAULT_TIMEOUT)
    credentials = {"aws_access_key": KEY_ID, "aws_secret_key": SECRET, "aws_region": "us-east-1"}
    if mode == "loopback":
        client = anthropic.AnthropicBedrock(
            base_url=stand_in.url("bedrock"), **credentials, **options
        )
    else:
        http = httpx2.Client(transport=stand_in.transport())
        client = anthropic.AnthropicBedrock(
            base_url="http://stuntset.invalid/bedrock", http_client=http, **credentials, **options
        )
    OPEN.append(client)  # type: ignore[arg-type]
    return client


def converse_sdk(
    stand_in: StandIn, client: anthropic.AnthropicBedrock, *, stream: bool
) -> list[Answer]:
    """The Anthropic wire's conversation (``_clients``), played by ``AnthropicBedrock``."""
    answers: list[Answer] = []
    history: list[dict[str, Any]] = [{"role": "user", "content": "Hello there"}]
    for _ in range(8):
        if not stand_in.double.unused():
            break
        answer, history = _anthropic(client, history, stream)  # type: ignore[arg-type]
        answers.append(answer)
    return answers
