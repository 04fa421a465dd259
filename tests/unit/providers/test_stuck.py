from __future__ import annotations

import pytest

from stuntset import events as ev
from stuntset.contract import check_events
from stuntset.driver import drive
from stuntset.errors import CapabilityError, WaitTimeout
from stuntset.providers import Capabilities, StuckProvider
from stuntset.waiting import collect_events

pytestmark = pytest.mark.anyio


async def test_a_stuck_run_never_ends_by_itself() -> None:
    run = StuckProvider().start("x")
    with pytest.raises(WaitTimeout, match="saw 1 events"):
        await collect_events(run, timeout=0.01)
    await run.interrupt("watchdog")
    events = [*run.events, *await collect_events(run)]
    check_events(events)
    assert events[-1] == ev.RunKilled(run_id="run-1", ts=events[-1].ts, reason="watchdog")


async def test_preamble_then_close() -> None:
    provider = StuckProvider(preamble="Working on it")
    run = provider.start("x")
    seen = await collect_events(run, until=lambda e: isinstance(e, ev.MessageCompleted))
    assert seen[-1].text == "Working on it"  # type: ignore[union-attr]
    await provider.aclose()
    assert isinstance((await collect_events(run))[-1], ev.RunKilled)


async def test_every_start_is_stuck_and_keeps_the_contract() -> None:
    provider = StuckProvider()
    for prompt in ("a", "b", "c"):
        events = await drive(
            provider.start(prompt), interrupt_when=lambda e: isinstance(e, ev.RunStarted)
        )
        assert isinstance(events[-1], ev.RunKilled)
    provider.assert_all_turns_used()


def test_declares_only_interrupt_and_resume() -> None:
    caps = StuckProvider().capabilities
    assert caps == Capabilities(interrupt=True, resume=True)
    with pytest.raises(CapabilityError):
        caps.require("approvals", provider="stuck")
