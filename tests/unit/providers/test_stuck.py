from __future__ import annotations

import anyio
import pytest

from stuntset import events as ev
from stuntset.contract import check_events
from stuntset.driver import drive
from stuntset.errors import CapabilityError, UsageError, WaitTimeout
from stuntset.providers import Capabilities, Interrupted, StuckProvider
from stuntset.waiting import collect_events, wait_for_async

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


async def test_ignored_cancel_keeps_the_run_going_until_closed() -> None:
    provider = StuckProvider(cancel="ignored")
    run = provider.start("x")
    await run.interrupt("watchdog")  # returns at once, and changes nothing
    with pytest.raises(WaitTimeout, match="saw 1 events"):
        await collect_events(run, timeout=0.01)
    await provider.aclose()
    events = [*run.events, *await collect_events(run)]
    check_events(events)
    assert events[-1] == ev.RunKilled(run_id="run-1", ts=events[-1].ts, reason="provider closed")
    assert [c.reason for c in provider.calls if isinstance(c, Interrupted)] == ["watchdog"]


async def test_blocking_cancel_hangs_the_caller_until_the_run_is_closed() -> None:
    provider = StuckProvider(cancel="blocks")
    run = provider.start("x")
    returned = anyio.Event()

    async def cancel() -> None:
        await run.interrupt("watchdog")
        returned.set()

    async with anyio.create_task_group() as group:
        group.start_soon(cancel)
        await wait_for_async(lambda: provider.blocked_interrupts == 1)
        with pytest.raises(WaitTimeout):
            await collect_events(run, timeout=0.01)  # the run goes on, the caller waits
        assert not returned.is_set()
        await run.aclose()  # the test's teardown releases it
    assert returned.is_set()
    assert provider.blocked_interrupts == 0
    events = [*run.events, *await collect_events(run)]
    check_events(events)
    assert events[-1] == ev.RunKilled(run_id="run-1", ts=events[-1].ts, reason="closed")


async def test_a_cancel_after_the_end_returns_in_every_mode() -> None:
    for mode in ("ignored", "blocks"):
        provider = StuckProvider(cancel=mode)
        run = provider.start("x")
        await provider.aclose()
        await collect_events(run)
        await run.interrupt("late")  # nothing to block on any more


def test_an_unknown_cancel_mode_is_refused_naming_the_modes() -> None:
    with pytest.raises(UsageError, match=r"cancel='sometimes'.*ends, ignored, blocks"):
        StuckProvider(cancel="sometimes")  # type: ignore[arg-type]
