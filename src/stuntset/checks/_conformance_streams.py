"""Conformance invariants on the stream of a played run: started-first, contract, terminates,
capabilities-honest and usage-not-zero (each scenario's run is played once and all five are
checked on its events).
"""

from __future__ import annotations

from collections.abc import Collection

from stuntset.checks._conformance_harness import PLAY, Harness
from stuntset.checks._conformance_play import Played
from stuntset.contract import check_events
from stuntset.errors import ContractViolation
from stuntset.events import (
    ApprovalRequested,
    InputRequested,
    ReasoningCompleted,
    ReasoningDelta,
    RunStarted,
    Usage,
    type_of,
)
from stuntset.providers.base import AgentProvider, AgentRun
from stuntset.script import Script

__all__ = ["StreamChecks"]


class StreamChecks(Harness):
    """The played run of a scenario and the invariants on its event stream."""

    # --- the played run: started-first, contract, terminates, honest capabilities, usage ---

    async def check_play(self, script: Script, scenario: str, chosen: Collection[str]) -> None:
        __tracebackhide__ = True
        wanted = [inv for inv in PLAY if inv in chosen]
        provider = self.provider_for(script, scenario)
        if isinstance(provider, str):
            return self.skip(wanted, scenario, provider)
        caps = provider.capabilities
        try:
            run = await self.start(provider, wanted[0], scenario)
            played = await self.play(
                run, script, provider, approve=lambda e: "allow", answer=lambda e: "yes"
            )
        finally:
            await self.close(provider)
        if played.error is not None and "terminates" in wanted:
            self.fail(
                "terminates",
                scenario,
                f"iterating the run raised {played.error!r}; failures must arrive as run.crashed",
                played,
                provider,
            )
        if "started-first" in wanted:
            self.started_first(run, played, scenario, provider)
        if "terminates" in wanted:
            self.terminates(played, scenario, provider)
        if "contract" in wanted:
            try:
                check_events(played.events)
            except ContractViolation as violation:
                self.fail("contract", scenario, str(violation), played, provider)
        if "capabilities-honest" in wanted:
            needs = {
                ApprovalRequested: "approvals",
                InputRequested: "input_requests",
                ReasoningDelta: "reasoning",
                ReasoningCompleted: "reasoning",
                Usage: "usage",
            }
            for event in played.events:
                capability = needs.get(type(event))
                if capability is not None and not getattr(caps, capability):
                    self.fail(
                        "capabilities-honest",
                        scenario,
                        f"it emitted {type_of(event)} but does not declare {capability!r}",
                        played,
                        provider,
                    )
        if "usage-not-zero" in wanted:
            for event in played.events:
                if isinstance(event, Usage) and (
                    min(event.input_tokens, event.output_tokens) < 0
                    or (event.input_tokens == 0 and event.output_tokens == 0)
                ):
                    self.fail(
                        "usage-not-zero",
                        scenario,
                        f"usage {event.input_tokens} in / {event.output_tokens} out: when the "
                        f"runtime reports no usage, emit no usage event",
                        played,
                        provider,
                    )
        for invariant in wanted:
            self.result(invariant, scenario, played)
        return None

    def started_first(
        self, run: AgentRun, played: Played, scenario: str, provider: AgentProvider
    ) -> None:
        __tracebackhide__ = True
        first = played.events[0] if played.events else None
        if not isinstance(first, RunStarted):
            what = "no event at all" if first is None else type_of(first)
            self.fail("started-first", scenario, f"the first event is {what}", played, provider)
            return
        if first.run_id != run.run_id:
            self.fail(
                "started-first",
                scenario,
                f"run.started has run_id {first.run_id!r}, the run says {run.run_id!r}",
                played,
                provider,
            )
        if first.session_id != run.session_id:
            self.fail(
                "started-first",
                scenario,
                f"run.started has session_id {first.session_id!r}, the run says {run.session_id!r}",
                played,
                provider,
            )

    def terminates(self, played: Played, scenario: str, provider: AgentProvider) -> None:
        __tracebackhide__ = True
        terminals = played.terminals
        if not terminals:
            how = (
                "even after interrupt()"
                if played.interrupted_after is not None
                else "(it was not interrupted: its scenario does not stall)"
            )
            self.fail(
                "terminates",
                scenario,
                f"no terminal event within {self.timeout} s {how}",
                played,
                provider,
            )
        if len(terminals) > 1:
            self.fail(
                "terminates",
                scenario,
                f"{len(terminals)} terminal events; a run has exactly one",
                played,
                provider,
            )
        if not played.ended:
            self.fail(
                "terminates",
                scenario,
                f"the stream did not end (StopAsyncIteration) within {self.timeout} s after its "
                f"terminal event",
                played,
                provider,
            )
