"""Conformance invariants on interrupting and resuming: interrupt-terminates (``interrupt()``
at any point ends the run) and resume-round-trips (a session continues in a new provider).
"""

from __future__ import annotations

import anyio

from stuntset.checks._conformance_harness import Harness, script_has
from stuntset.events import (
    ApprovalRequested,
    InputRequested,
    RunCompleted,
    RunCrashed,
    RunKilled,
    RunStarted,
    type_of,
)
from stuntset.script import Script, Stall

__all__ = ["InterruptAndResumeChecks"]


class InterruptAndResumeChecks(Harness):
    """Interrupts at every point, and resuming a session."""

    # --- interrupt ---

    async def check_interrupt(self, script: Script, scenario: str) -> None:
        __tracebackhide__ = True
        invariant = "interrupt-terminates"
        provider = await self.provider_declaring(script, scenario, [invariant], "interrupt")
        if provider is None:
            return
        try:
            run = await self.start(provider, invariant, scenario)
            played = await self.play(
                run, script, provider, interrupt_after=1, approve=None, answer=None
            )
            if played.error is not None:
                self.fail(invariant, scenario, f"the run raised {played.error!r}", played, provider)
            terminals = played.terminals
            if len(terminals) != 1 or not played.ended:
                self.fail(
                    invariant,
                    scenario,
                    f"after interrupt() the run gave {len(terminals)} terminal event(s) within "
                    f"{self.timeout} s and {'ended' if played.ended else 'did not end'}",
                    played,
                    provider,
                )
            blocked = script_has(script, Stall) or any(
                isinstance(e, ApprovalRequested | InputRequested) for e in played.events
            )
            if blocked and not isinstance(terminals[0], RunKilled):
                self.fail(
                    invariant,
                    scenario,
                    f"the run was waiting (stalled or on a request) when interrupted, so only "
                    f"run.killed is honest; it ended with {type_of(terminals[0])}",
                    played,
                    provider,
                )
            try:
                with anyio.fail_after(self.timeout):
                    await run.interrupt("stuntset conformance: interrupt after the end")
            except Exception as error:
                self.fail(
                    invariant,
                    scenario,
                    f"interrupt() after the terminal event raised {error!r}; it must be harmless",
                    played,
                    provider,
                )
        finally:
            await self.close(provider)
        self.result(invariant, scenario, played)
        return

    # --- resume ---

    async def check_resume(self, script: Script, scenario: str) -> None:
        __tracebackhide__ = True
        invariant = "resume-round-trips"
        first = await self.provider_declaring(script, scenario, [invariant], "resume")
        if first is None:
            return
        try:
            run = await self.start(first, invariant, scenario)
            played = await self.play(
                run, script, first, approve=lambda e: "allow", answer=lambda e: "yes"
            )
        finally:
            await self.close(first)
        handle = run.session_id
        started = played.events[0] if played.events else None
        if not isinstance(started, RunStarted) or started.session_id != handle:
            self.fail(
                invariant,
                scenario,
                f"the first run's run.started does not carry its session_id {handle!r}",
                played,
                first,
            )
        if first.session_id != handle:
            self.fail(
                invariant,
                scenario,
                f"after the run the provider's session_id is {first.session_id!r}, the run's "
                f"is {handle!r}",
                played,
                first,
            )
        second = self.make_provider(script)
        try:
            try:
                again = second.start(self.prompt + " (continued)", resume=handle)
            except Exception as error:
                self.fail(
                    invariant,
                    scenario,
                    f"start(resume={handle!r}) on a new provider raised {error!r}",
                    provider=second,
                )
                raise  # pragma: no cover
            resumed = await self.play(  # a later turn: its stall is not predicted
                again, script, stalled=None, approve=lambda e: "allow", answer=lambda e: "yes"
            )
        finally:
            await self.close(second)
        started = resumed.events[0] if resumed.events else None
        if not isinstance(started, RunStarted) or started.session_id != handle:
            got = started.session_id if isinstance(started, RunStarted) else None
            self.fail(
                invariant,
                scenario,
                f"the resumed run's run.started has session_id {got!r}, not the handle {handle!r}",
                resumed,
                second,
            )
        if again.session_id != handle or second.session_id != handle:
            self.fail(
                invariant,
                scenario,
                f"the resumed run reports session_id {again.session_id!r} (provider "
                f"{second.session_id!r}), not the handle {handle!r}",
                resumed,
                second,
            )
        if again.run_id == run.run_id:
            self.fail(
                invariant,
                scenario,
                f"the resumed run got run_id {again.run_id!r}, the first run's own: a resumed "
                f"run is a new run in the same session and needs a new run_id",
                resumed,
                second,
            )
        if isinstance(played.terminal, RunCompleted) and isinstance(resumed.terminal, RunCrashed):
            self.fail(
                invariant,
                scenario,
                "the first run completed but continuing its session crashed",
                resumed,
                second,
            )
        self.result(invariant, scenario, resumed)
        return
