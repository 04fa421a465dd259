"""``check_host_timeouts``: the reference host passes; hosts broken each way fail, naming why."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import anyio
import pytest

from stuntset.checks import acheck_host_timeouts
from stuntset.errors import ConformanceFailure, UsageError
from stuntset.log.memory import MemoryEventLog
from stuntset.providers import AgentProvider, AgentRun
from stuntset.runtime import SessionService
from stuntset.runtime.store import SessionStore

pytestmark = pytest.mark.anyio

Providers = Mapping[str, Callable[[], AgentProvider]]
#: The bound given to the check: far above the hosts' 0.05 s timeouts (a bound, not a timing).
BOUND = 5.0
#: For the broken hosts: the check waits this long (real time) before calling a host hung.
#: Each test checks only the cancel mode its host breaks, so the bound only ever runs out
#: where the test expects it to (a passing mode under a busy machine could overrun it).
SHORT = 0.3
#: For a host that must first end the run (its 0.05 s timeouts), then hang: a bound with room.
ROOMY = 1.0


@pytest.fixture
def stores() -> Iterator[list[SessionStore]]:
    made: list[SessionStore] = []
    yield made
    for store in made:
        store.close()


def host_maker(cls: type[SessionService], stores: list[SessionStore], **options: Any) -> Any:
    def make_host(providers: Providers) -> SessionService:
        store = SessionStore(":memory:")
        stores.append(store)
        options.setdefault("turn_timeout", 0.05)
        options.setdefault("cancel_grace", 0.05)
        return cls(log=MemoryEventLog(), store=store, providers=providers, **options)

    return make_host


async def test_the_reference_host_passes(stores: list[SessionStore]) -> None:
    await acheck_host_timeouts(host_maker(SessionService, stores), timeout=BOUND)


async def test_a_host_without_a_turn_timeout_fails(stores: list[SessionStore]) -> None:
    make_host = host_maker(SessionService, stores, turn_timeout=None)
    with pytest.raises(ConformanceFailure) as failed:
        await acheck_host_timeouts(make_host, timeout=SHORT, modes=["ends"])
    assert failed.value.invariant == "timeout-ends-run"
    assert failed.value.scenario == "stuck(cancel='ends')"
    assert "no terminal event within 0.3 s of its start (its events: ['run.started'])" in str(
        failed.value
    )


class TrustsInterrupt(SessionService):
    """Interrupts a timed-out turn, then waits for the provider to end it: forever."""

    async def _time_out(
        self, session_id: str, provider_name: str, active: Any, events: Any
    ) -> None:
        await active.run.interrupt("timed out")
        await self._relay(session_id, active, events)


async def test_a_host_that_trusts_interrupt_fails_on_one_that_ignores_it(
    stores: list[SessionStore],
) -> None:
    with pytest.raises(ConformanceFailure) as failed:
        await acheck_host_timeouts(
            host_maker(TrustsInterrupt, stores), timeout=SHORT, modes=["ignored"]
        )
    assert failed.value.scenario == "stuck(cancel='ignored')"
    assert str(failed.value).startswith(
        "check_host_timeouts [timeout-ends-run] with StuckProvider(cancel='ignored'), "
        "a provider that ignores interrupt(): run "
    )


class WaitsOnCancel(SessionService):
    """Waits for every interrupt() to return, however long it takes."""

    async def _interrupt(self, run: AgentRun, reason: str) -> bool:
        with anyio.CancelScope(shield=True):
            await run.interrupt(reason)
        return True


async def test_a_host_that_waits_forever_on_cancel_fails_and_is_released(
    stores: list[SessionStore],
) -> None:
    with pytest.raises(ConformanceFailure) as failed:
        await acheck_host_timeouts(
            host_maker(WaitsOnCancel, stores), timeout=SHORT, modes=["blocks"]
        )
    assert failed.value.scenario == "stuck(cancel='blocks')"
    message = str(failed.value)
    assert "a provider whose interrupt() blocks" in message
    assert message.endswith("1 interrupt() call(s) still blocked in the provider")


class HangsOnExit(SessionService):
    """Ends the run in time, then never leaves its ``async with``."""

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await anyio.Event().wait()
        finally:
            await super().__aexit__(*exc)


@pytest.mark.slow
async def test_a_host_that_does_not_stop_fails(stores: list[SessionStore]) -> None:
    with pytest.raises(ConformanceFailure, match=r"\[host-stops\].*did not stop within 1.0 s"):
        await acheck_host_timeouts(host_maker(HangsOnExit, stores), timeout=ROOMY, modes=["ends"])


class CannotStart(SessionService):
    async def start_turn(self, session_id: str, prompt: str) -> Any:
        raise RuntimeError("no capacity")


async def test_a_host_that_cannot_start_the_turn_fails_saying_so(
    stores: list[SessionStore],
) -> None:
    with pytest.raises(
        ConformanceFailure, match=r"could not start the turn: RuntimeError..no capacity"
    ):
        await acheck_host_timeouts(host_maker(CannotStart, stores), timeout=BOUND)


class BreaksOnExit(SessionService):
    async def __aexit__(self, *exc: Any) -> None:
        await super().__aexit__(*exc)
        raise RuntimeError("lost the store")


async def test_a_host_that_raises_as_it_stops_fails_naming_the_error(
    stores: list[SessionStore],
) -> None:
    with pytest.raises(ConformanceFailure, match=r"\[host-stops\].*stopped with RuntimeError"):
        await acheck_host_timeouts(host_maker(BreaksOnExit, stores), timeout=BOUND)


async def test_modes_pick_cancel_modes_and_unknown_ones_are_refused(
    stores: list[SessionStore],
) -> None:
    await acheck_host_timeouts(host_maker(SessionService, stores), timeout=BOUND, modes=["ends"])
    for modes in (["sometimes"], []):
        with pytest.raises(UsageError, match="the cancel modes are ends, ignored, blocks"):
            await acheck_host_timeouts(
                host_maker(SessionService, stores), timeout=BOUND, modes=modes
            )
