"""The official SDKs' defaults over the doubles pass every resilience rule they should:
openai and anthropic honour retry-after-ms, keep the body, stop at their retry budget and do
not retry a 401; google-genai does not retry by default; claude-agent-sdk interrupts a stuck
CLI and leaves no process behind. Nothing here sleeps: the catalog's 429/503 ask for 1 ms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import anyio
import openai
import pytest

from stuntset import scenarios
from stuntset.checks import check_resilience, resilience_verdicts
from stuntset.doubles.model import StandIn
from stuntset.script import AuthExpired, HttpError, Overloaded, RateLimit, Script, Text, Turn

from ._clients import anthropic_client, openai_client

HI = [{"role": "user", "content": "hi"}]


def retried_then_ok(fault: Any, times: int = 2) -> Script:
    return Script.of(Turn(steps=(fault,), times=times), [Text("ok")])


def ask_openai(stand_in: StandIn) -> None:
    client = openai_client(stand_in, "in-process")
    client.chat.completions.create(model="gpt-test", messages=HI)  # type: ignore[arg-type]


def ask_anthropic(stand_in: StandIn) -> None:
    client = anthropic_client(stand_in, "in-process")
    client.messages.create(model="claude-test", max_tokens=64, messages=HI)  # type: ignore[arg-type]


ASK = {"openai": ask_openai, "anthropic": ask_anthropic}


@pytest.mark.parametrize("sdk", sorted(ASK))
@pytest.mark.parametrize("fault", [RateLimit(), Overloaded()], ids=["429", "overloaded"])
def test_sdk_retries_pass_every_rule(stand_in: StandIn, sdk: str, fault: Any) -> None:
    stand_in.play(retried_then_ok(fault))
    ASK[sdk](stand_in)
    assert len(stand_in.requests) == 3
    check_resilience(stand_in)


@pytest.mark.parametrize("sdk", sorted(ASK))
def test_sdk_retry_after_in_seconds_is_honoured(stand_in: StandIn, sdk: str) -> None:
    stand_in.play(retried_then_ok(RateLimit(retry_after=0.05, retry_after_ms=None), times=1))
    ASK[sdk](stand_in)
    check_resilience(stand_in)


@pytest.mark.parametrize("sdk", sorted(ASK))
def test_sdk_does_not_retry_a_401(stand_in: StandIn, sdk: str) -> None:
    stand_in.play(Script.of([AuthExpired()]))
    with pytest.raises((openai.AuthenticationError, anthropic.AuthenticationError)):
        ASK[sdk](stand_in)
    assert len(stand_in.requests) == 1
    check_resilience(stand_in, outcome="error")


@pytest.mark.parametrize("sdk", sorted(ASK))
def test_sdk_gives_up_within_the_storm_bound(stand_in: StandIn, sdk: str) -> None:
    stand_in.play(Script.of(Turn(steps=(RateLimit(),), times=3)))
    with pytest.raises((openai.RateLimitError, anthropic.RateLimitError)):
        ASK[sdk](stand_in)
    assert len(stand_in.requests) == 3  # the SDKs' default: 2 retries
    check_resilience(stand_in, outcome="error", max_attempts=3)


@pytest.mark.slow
@pytest.mark.parametrize("sdk", sorted(ASK))
def test_sdk_backs_off_after_a_500_without_retry_after(stand_in: StandIn, sdk: str) -> None:
    """A 500 asks no wait: the SDKs' own backoff (0.5 s doubling, jittered) is real time."""
    stand_in.play(retried_then_ok(HttpError(status=500), times=1))
    ASK[sdk](stand_in)
    check_resilience(stand_in)


@pytest.mark.slow  # importing google-genai takes seconds
def test_google_genai_default_does_not_retry(stand_in: StandIn) -> None:
    from google.genai import errors

    from ._gemini import gemini_client

    stand_in.play(Script.of([RateLimit()]))
    client = gemini_client(stand_in, "in-process")
    with pytest.raises(errors.ClientError):
        client.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert len(stand_in.requests) == 1
    check_resilience(stand_in, outcome="error")
    assert resilience_verdicts(stand_in) == []


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_claude_agent_sdk_interrupts_a_stuck_cli_and_leaves_nothing_running(
    tmp_path: Path, anyio_backend: str
) -> None:
    pytest.importorskip("claude_agent_sdk")
    from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ClaudeSDKClient

    from stuntset.doubles.cli import install_cli

    cli = install_cli("claude", scenarios.build("stuck"), bin_dir=tmp_path / "bin")
    with anyio.fail_after(20):
        async with ClaudeSDKClient(ClaudeAgentOptions(cli_path=cli.path)) as client:
            await client.query("go")
            async for message in client.receive_messages():
                if isinstance(message, AssistantMessage):
                    break
            await client.interrupt()
            async for _ in client.receive_response():
                pass
    check_resilience(cli)


@pytest.mark.slow  # the SDKs back off in real time after a read timeout (0.5 s or so)
@pytest.mark.parametrize("sdk", sorted(ASK))
def test_sdk_read_timeout_ends_a_stall_within_the_bound(stand_in: StandIn, sdk: str) -> None:
    """Their default read timeout (600 s, on the FakeClock here: at once) is the bound."""
    from stuntset.script import Stall

    stand_in.play(Script.of([Stall()], [Text("ok")]))
    client: Any = (
        openai.OpenAI(
            http_client=__import__("httpx2").Client(transport=stand_in.transport()), api_key="k"
        )
        if sdk == "openai"
        else anthropic.Anthropic(
            http_client=__import__("httpx2").Client(transport=stand_in.transport()), api_key="k"
        )
    )
    with client:
        if sdk == "openai":
            client.chat.completions.create(model="gpt-test", messages=HI)
        else:
            client.messages.create(model="claude-test", max_tokens=64, messages=HI)
    (hold,) = stand_in.double.journal.holds
    assert (hold.seconds, hold.ended) == (600.0, "read timeout")
    check_resilience(stand_in)
    assert [v.rule for v in resilience_verdicts(stand_in, stall_bound=60)] == [
        "stalled_stream_held"
    ]
