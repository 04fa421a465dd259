"""A consumer that stops reading a stream early must release everything: proven with the real
SDKs on each model wire (in-process and over loopback) and with each fake CLI through its real
SDK, by ``check_no_leaks`` (no task, socket, pipe, child process or pending stream on the
double), and the check shown failing when the consumer does not close."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from stuntset.checks import ResourceLeak, check_no_leaks
from stuntset.doubles.model import StandIn
from stuntset.script import Script, Stall, Text

from ._clients import WIRES, Mode, Wire

pytestmark = pytest.mark.anyio

MODES: tuple[Mode, ...] = ("in-process", "loopback")
#: An answer in many pieces that never ends by itself: only the consumer's close releases it.
ENDLESS = Script.of([*(Text(f"word{i} ") for i in range(40)), Stall()])
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture
def anyio_backend() -> str:
    """The SDKs' async clients and claude-agent-sdk run on asyncio."""
    return "asyncio"


def async_client(stand_in: StandIn, wire: Wire, mode: Mode) -> Any:
    timeout = httpx2.Timeout(10.0, read=5.0)
    if wire == "anthropic":
        if mode == "loopback":
            return anthropic.AsyncAnthropic(
                base_url=stand_in.url("anthropic"), api_key="sk-test", timeout=timeout
            )
        http = httpx2.AsyncClient(transport=stand_in.transport())
        return anthropic.AsyncAnthropic(http_client=http, api_key="sk-test", timeout=timeout)
    if mode == "loopback":
        return openai.AsyncOpenAI(
            base_url=stand_in.url("openai"), api_key="sk-test", timeout=timeout
        )
    http = httpx2.AsyncClient(transport=stand_in.transport())
    return openai.AsyncOpenAI(http_client=http, api_key="sk-test", timeout=timeout)


async def open_stream(client: Any, wire: Wire) -> Any:
    if wire == "chat":
        return await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    if wire == "responses":
        return await client.responses.create(model="m", input="hi", stream=True)
    return await client.messages.create(model="c", max_tokens=100, messages=MESSAGES, stream=True)


async def read_some(stream: Any, count: int = 3) -> int:
    seen = 0
    async for _ in stream:
        seen += 1
        if seen == count:
            break
    return seen


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("wire", WIRES)
async def test_breaking_out_of_a_model_stream_and_closing_releases_everything(
    stand_in: StandIn, wire: Wire, mode: Mode
) -> None:
    stand_in.play(ENDLESS)
    async with check_no_leaks(), async_client(stand_in, wire, mode) as client:
        stream = await open_stream(client, wire)
        async with stream:
            assert await read_some(stream) == 3
    (entry,) = stand_in.requests
    assert entry.body["stream"] is True


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_a_stream_broken_off_and_not_closed_is_reported(
    stand_in: StandIn, mode: Mode
) -> None:
    stand_in.play(ENDLESS)
    async with async_client(stand_in, "chat", mode) as client:
        snapshot = check_no_leaks(kinds=["streams"])
        stream = await open_stream(client, "chat")
        try:
            await read_some(stream)
            with pytest.raises(ResourceLeak) as raised:
                snapshot.check(settle=0.05)
        finally:
            await stream.close()
    assert "[streams] model double stream: " in str(raised.value)


@pytest.mark.slow
def test_the_endless_stream_really_holds_until_closed(stand_in: StandIn) -> None:
    """The control for the tests above: a stream opened before the snapshot and not closed is
    still open at the check (over loopback, with the synchronous SDK)."""
    stand_in.play(ENDLESS)
    client = openai.OpenAI(base_url=stand_in.url("openai"), api_key="sk-test")
    with client:
        snapshot = check_no_leaks(kinds=["streams"])
        stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        next(iter(stream))
        message = ""
        try:
            snapshot.check(settle=0.05)
        except ResourceLeak as leak:
            message = str(leak)
        stream.close()
    assert "/v1/chat/completions (streamed response over loopback) (still open)" in message


# --- the fake CLIs, through their real SDKs --------------------------------------------------

CLI_SCRIPT = Script.of([*(Text(f"part {i}.") for i in range(5)), Stall()])


async def test_claude_agent_sdk_query_stopped_early_leaves_no_process_or_fd(
    fake_claude: Any,
) -> None:
    """``query()`` closed early: the SDK closes its inner generator only when the loop
    finalises it (PEP 533), and then waits for the CLI to finish its turn after stdin's EOF;
    the check settles with the loop running, so that cleanup completes inside it. (Mid-stall,
    the SDK would wait its 5 s grace before SIGTERM, in a task the test's loop cancels when it
    closes: a child left running, which the check reports; ``ClaudeSDKClient`` below does not.)"""
    from claude_agent_sdk import ClaudeAgentOptions, query

    fake_claude(Script.of([Text(f"part {i}.") for i in range(200)]))
    options = ClaudeAgentOptions(cli_path=fake_claude.path)
    async with check_no_leaks(), aclosing(query(prompt="hi", options=options)) as messages:
        async for _ in messages:
            break


async def test_claude_sdk_client_stopped_early_leaves_no_process_or_fd(fake_claude: Any) -> None:
    """The client leaves after the first message; the CLI finishes its turn after stdin's EOF
    and exits. (Mid-stall the SDK would wait its 5 s grace before SIGTERM: that real-time
    path is test_claude_agent_sdk's ``test_a_process_ignoring_sigterm_is_killed...``.)"""
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

    fake_claude(Script.of([Text(f"part {i}.") for i in range(200)]))
    options = ClaudeAgentOptions(cli_path=fake_claude.path)
    async with check_no_leaks(), ClaudeSDKClient(options) as client:
        await client.query("hi")
        async for _ in client.receive_response():
            break


async def test_claude_code_provider_stopped_early_leaves_no_process_or_fd(fake_claude: Any) -> None:
    from claude_agent_sdk import ClaudeAgentOptions

    from stuntset.providers.claude_code import ClaudeCodeProvider

    fake_claude(CLI_SCRIPT)
    async with check_no_leaks():
        provider = ClaudeCodeProvider(ClaudeAgentOptions(cli_path=fake_claude.path))
        async with stopped_early(provider):
            pass


async def test_codex_provider_stopped_early_leaves_no_process_or_fd(
    fake_codex: Any, tmp_path: Path
) -> None:
    from stuntset.providers.codex import CodexProvider

    fake_codex(CLI_SCRIPT)
    async with check_no_leaks():
        provider = CodexProvider(
            str(fake_codex.path), cwd=str(tmp_path), env={"CODEX_HOME": str(tmp_path / "home")}
        )
        async with stopped_early(provider):
            pass


@pytest.mark.slow
def test_openai_codex_turn_stream_stopped_early_leaves_no_process(
    fake_codex: Any, tmp_path: Path
) -> None:
    """The raw openai-codex SDK: its ``close()`` stops the process but leaves the process's
    stdout and stderr pipes open (see test_openai_codex.py); the check names them."""
    from openai_codex import Codex, CodexConfig

    fake_codex(CLI_SCRIPT)
    config = CodexConfig(
        codex_bin=str(fake_codex.path),
        cwd=str(tmp_path),
        env={"CODEX_HOME": str(tmp_path / "home")},
    )
    snapshot = check_no_leaks()
    codex = Codex(config=config)
    proc = codex._client._proc
    try:
        for _ in codex.thread_start().turn("hi").stream():
            break
    finally:
        codex.close()
    with pytest.raises(ResourceLeak) as raised:
        snapshot.check(settle=0.05)
    message = str(raised.value)
    assert proc is not None
    for stream in (proc.stdout, proc.stderr):
        assert stream is not None
        stream.close()  # what the SDK should have done
    assert "[processes]" not in message
    assert message.count("[pipes] pipe read end") == 2


@asynccontextmanager
async def stopped_early(provider: Any) -> AsyncIterator[None]:
    """Start a run, take its first event, stop reading, close run and provider."""
    run = provider.start("hi")
    try:
        async for event in run:
            if event.type.startswith("message."):  # mid-turn: the script goes on, then stalls
                break
        yield
    finally:
        await run.aclose()
        await provider.aclose()
