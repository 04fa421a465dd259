"""``CodexProvider``'s ``usage`` event is the turn's own tokens when the turn makes several
model requests (a tool round trip), on a new thread and on one resumed in a new process: the
real binary over the Responses model double and the fake ``codex``, the same script."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai_codex")

import stuntset
from stuntset.doubles.cli import install_cli
from stuntset.drift.runners import codex_home, real_binary
from stuntset.driver import drive
from stuntset.events import RunCompleted, Usage
from stuntset.providers.codex import CodexProvider
from stuntset.script import Script, Text, ToolCall, ToolResult
from stuntset.script import Usage as UsageStep

pytestmark = pytest.mark.anyio

REAL_CODEX = real_binary("codex")

#: Two turns, each two model responses: a tool call, then the answer after its result.
TWO_ROUND_TRIPS = Script.of(
    [
        ToolCall("lookup", {"q": "a"}),
        UsageStep(10, 2),
        ToolResult("found a"),
        Text("First answer."),
        UsageStep(20, 5),
    ],
    [
        ToolCall("lookup", {"q": "b"}),
        UsageStep(30, 7),
        ToolResult("found b"),
        Text("Second answer."),
        UsageStep(40, 8),
    ],
)
#: Each turn's own tokens (the thread's running total after the second is 100/22).
OWN = [[(30, 7)], [(70, 15)]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # CodexProvider hands its events to an asyncio loop


async def turn(make: Any, resume: str | None) -> tuple[list[tuple[int, int]], str]:
    """One run on a provider of its own (a new app-server process): its usage events and
    the thread id."""
    provider: CodexProvider = make()
    try:
        events = await drive(provider.start("Hello", resume=resume), timeout=60)
    finally:
        await provider.aclose()
    assert isinstance(events[-1], RunCompleted), events[-1]
    usage = [(e.input_tokens, e.output_tokens) for e in events if isinstance(e, Usage)]
    return usage, provider.session_id


async def two_turns(make: Any) -> list[list[tuple[int, int]]]:
    first, thread_id = await turn(make, None)
    second, _ = await turn(make, thread_id)  # resumed in a new process
    return [first, second]


async def test_each_turn_reports_its_own_tokens_on_the_fake(tmp_path: Path) -> None:
    cli = install_cli("codex", TWO_ROUND_TRIPS, bin_dir=tmp_path / "bin", time_scale=0)
    env = {"CODEX_HOME": str(tmp_path / "home")}
    assert await two_turns(lambda: CodexProvider(str(cli.path), cwd=str(tmp_path), env=env)) == OWN
    cli.assert_all_used()


# real time: the real binary starts (twice) and talks to the double over loopback
@pytest.mark.real_cli
@pytest.mark.skipif(REAL_CODEX is None, reason="no real codex binary here")
@pytest.mark.real_time
@pytest.mark.timeout(180)
async def test_each_turn_reports_its_own_tokens_on_the_real_binary(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    with stuntset.serve(TWO_ROUND_TRIPS) as stand_in:
        env = codex_home(tmp_path / "home", stand_in.url("openai"))
        assert await two_turns(lambda: CodexProvider(str(REAL_CODEX), cwd=str(cwd), env=env)) == OWN
    stand_in.verify()
