"""Conformance invariants on a provider's lifecycle: close-kills (``aclose()`` ends a running
run), early-close-releases (nothing left behind by a consumer that stops early) and
capabilities-refused (an undeclared capability is refused before anything starts).
"""

from __future__ import annotations

import time

import anyio

from stuntset.checks._conformance_harness import Harness
from stuntset.checks._conformance_play import Played, Resources
from stuntset.errors import CapabilityError
from stuntset.events import RunKilled, type_of
from stuntset.script import Script

__all__ = ["LifecycleChecks"]


class LifecycleChecks(Harness):
    """Closing, releasing and refusing."""

    # --- closing the provider ---

    async def check_close(self, script: Script, scenario: str) -> None:
        __tracebackhide__ = True
        invariant = "close-kills"
        provider = await self.provider_declaring(script, scenario, [invariant])
        if provider is None:
            return
        try:
            run = await self.start(provider, invariant, scenario)
            played = await self.play(
                run, script, interrupt_after=1, closer=provider.aclose, interrupt_when_quiet=False
            )
        finally:
            await self.close(provider)
        if played.error is not None:
            self.fail(invariant, scenario, f"the run raised {played.error!r}", played, provider)
        terminals = played.terminals
        if len(terminals) != 1 or not isinstance(terminals[0], RunKilled) or not played.ended:
            ended = "ended" if played.ended else "did not end"
            self.fail(
                invariant,
                scenario,
                f"after provider.aclose() the still-going run gave "
                f"{[type_of(t) for t in terminals]} within {self.timeout} s and {ended}; "
                f"expected exactly one run.killed",
                played,
                provider,
            )
        self.result(invariant, scenario, played)
        return

    # --- early close ---

    async def check_early_close(self, script: Script, scenario: str) -> None:
        __tracebackhide__ = True
        invariant = "early-close-releases"
        probe = Resources(self.leak_checks, self.own_tasks)
        before = probe.snapshot()
        provider = await self.provider_declaring(script, scenario, [invariant])
        if provider is None:
            return
        try:
            run = await self.start(provider, invariant, scenario)
            played = await self.play(run, script, stop_after=2)
            if played.error is not None:
                self.fail(invariant, scenario, f"the run raised {played.error!r}", played, provider)
            closer = getattr(run, "aclose", None)
            if closer is not None:
                with anyio.move_on_after(self.close_timeout):
                    await closer()
                what = "the run's aclose()"
            else:
                await self.close(provider)
                what = "provider.aclose() (the run has no aclose())"
            left = await self.settle(probe, before)
            if left:
                self.fail(
                    invariant,
                    scenario,
                    f"after the consumer stopped early and called {what}, these were still "
                    f"there {self.close_timeout} s later:\n    " + "\n    ".join(sorted(left)),
                    played,
                    provider,
                )
        finally:
            await self.close(provider)
        left = await self.settle(probe, before)
        if left:
            self.fail(
                invariant,
                scenario,
                "after provider.aclose() these were still there:\n    "
                + "\n    ".join(sorted(left)),
                played,
                provider,
            )
        self.result(invariant, scenario, played)
        return

    async def settle(self, probe: Resources, before: set[str]) -> set[str]:
        """What is left beyond ``before``, once it stops shrinking or ``close_timeout``."""
        deadline = time.monotonic() + self.close_timeout
        poll = 0.001
        while True:
            left = probe.snapshot() - before
            if not left or time.monotonic() >= deadline:
                return left
            await anyio.sleep(poll)
            poll = min(poll * 2, 0.05)

    # --- capabilities refused ---

    async def check_refused(self, script: Script, scenario: str) -> None:
        __tracebackhide__ = True
        invariant = "capabilities-refused"
        provider = self.provider_for(script, scenario)
        if isinstance(provider, str):  # pragma: no cover - happy_path always renders
            return self.skip([invariant], scenario, provider)
        caps = provider.capabilities
        probe = Resources(self.leak_checks, self.own_tasks)
        played: Played | None = None
        try:
            if not caps.resume:
                before = probe.snapshot()
                try:
                    provider.start(self.prompt, resume="stuntset-conformance-session")
                except CapabilityError as error:
                    if "resume" not in str(error):
                        self.fail(
                            invariant,
                            scenario,
                            f"the CapabilityError does not name the capability: {error}",
                            provider=provider,
                        )
                else:
                    self.fail(
                        invariant,
                        scenario,
                        "start(resume=...) was accepted though the provider does not declare "
                        "'resume'",
                        provider=provider,
                    )
                left = probe.snapshot() - before
                if left:
                    self.fail(
                        invariant,
                        scenario,
                        "the refused start(resume=...) still started something:\n    "
                        + "\n    ".join(sorted(left)),
                        provider=provider,
                    )
            if not caps.interrupt:
                run = await self.start(provider, invariant, scenario)
                played = await self.play(run, script, stop_after=1)
                try:
                    await run.interrupt("stuntset conformance: not declared")
                except CapabilityError as error:
                    if "interrupt" not in str(error):
                        self.fail(
                            invariant,
                            scenario,
                            f"the CapabilityError does not name the capability: {error}",
                            played,
                            provider,
                        )
                else:
                    self.fail(
                        invariant,
                        scenario,
                        "interrupt() was accepted though the provider does not declare 'interrupt'",
                        played,
                        provider,
                    )
                closer = getattr(run, "aclose", None)
                if closer is not None:
                    with anyio.move_on_after(self.close_timeout):
                        await closer()
        finally:
            await self.close(provider)
        reason = "" if not (caps.resume and caps.interrupt) else "nothing to refuse"
        self.result(invariant, scenario, played, reason=reason)
        return None
