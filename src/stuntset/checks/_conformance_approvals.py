"""Conformance invariants on approvals and input: approval-honoured (``respond()`` unblocks an
approval and the decision shows) and input-honoured (it unblocks an input request).
"""

from __future__ import annotations

from stuntset.checks._conformance_harness import Harness
from stuntset.checks._conformance_play import Played
from stuntset.events import (
    ApprovalRequested,
    ApprovalResolved,
    InputRequested,
    InputResolved,
    RunCompleted,
    ToolCompleted,
)
from stuntset.providers.base import AgentProvider
from stuntset.script import Script

__all__ = ["ApprovalAndInputChecks"]


def _no_terminal(played: Played, timeout: float) -> str:
    if played.ended:
        return "after the answer its stream ended without a terminal event"
    return f"no terminal event within {timeout} s of the answer"


class ApprovalAndInputChecks(Harness):
    """Approvals (denied and allowed) and input requests."""

    # --- approvals and input ---

    async def check_approval(self, script: Script, scenario: str, decision: str) -> None:
        __tracebackhide__ = True
        invariant = "approval-honoured"
        record = [invariant] if decision == "allow" else []  # one result for both decisions
        provider = await self.provider_declaring(script, scenario, record, "approvals")
        if provider is None:
            return
        try:
            run = await self.start(provider, invariant, scenario)
            played = await self.play(
                run,
                script,
                approve=lambda e: decision,
                answer=lambda e: "yes",
                interrupt_when_quiet=False,
            )
        finally:
            await self.close(provider)
        self._judge_approval(played, provider, scenario, decision)

    def _judge_approval(
        self, played: Played, provider: AgentProvider, scenario: str, decision: str
    ) -> None:
        # Judged in a call of its own, after the awaits: on CPython 3.11 a frame that a caught
        # cancellation resumed is invisible to coverage until it returns (cpython#106749)
        __tracebackhide__ = True
        invariant = "approval-honoured"
        where = f"(decision {decision!r})"
        requests = [e for e in played.events if isinstance(e, ApprovalRequested)]
        if played.error is not None:
            self.fail(invariant, scenario, f"{where} the run raised {played.error!r}", played)
        if not requests:
            self.fail(invariant, scenario, f"{where} no approval.requested arrived", played)
        if not played.terminals:
            self.fail(
                invariant,
                scenario,
                f"{where} respond() did not unblock the run: {_no_terminal(played, self.timeout)}",
                played,
                provider,
            )
        for request in requests:
            resolved = [
                e
                for e in played.events
                if isinstance(e, ApprovalResolved) and e.request_id == request.request_id
            ]
            if [e.decision for e in resolved] != [decision]:
                self.fail(
                    invariant,
                    scenario,
                    f"{where} approval {request.request_id!r} was resolved as "
                    f"{[e.decision for e in resolved]}",
                    played,
                    provider,
                )
            if request.tool_call_id is None:
                continue
            completed = [
                e
                for e in played.events
                if isinstance(e, ToolCompleted) and e.tool_call_id == request.tool_call_id
            ]
            if decision == "deny" and any(not e.is_error for e in completed):
                self.fail(
                    invariant,
                    scenario,
                    f"the denied tool call {request.tool_call_id!r} completed without an error: "
                    f"it ran anyway",
                    played,
                    provider,
                )
            if (
                decision == "allow"
                and isinstance(played.terminal, RunCompleted)
                and any(e.is_error for e in completed)
            ):
                self.fail(
                    invariant,
                    scenario,
                    f"the allowed tool call {request.tool_call_id!r} completed as an error",
                    played,
                    provider,
                )
        if decision == "allow":
            self.result(invariant, scenario, played)

    async def check_input(self, script: Script, scenario: str) -> None:
        __tracebackhide__ = True
        invariant = "input-honoured"
        provider = await self.provider_declaring(script, scenario, [invariant], "input_requests")
        if provider is None:
            return
        text = "stuntset conformance answer"
        try:
            run = await self.start(provider, invariant, scenario)
            played = await self.play(
                run,
                script,
                approve=lambda e: "allow",
                answer=lambda e: text,
                interrupt_when_quiet=False,
            )
        finally:
            await self.close(provider)
        self._judge_input(played, provider, scenario, text)

    def _judge_input(
        self, played: Played, provider: AgentProvider, scenario: str, text: str
    ) -> None:
        __tracebackhide__ = True
        invariant = "input-honoured"
        requests = [e for e in played.events if isinstance(e, InputRequested)]
        if played.error is not None:
            self.fail(invariant, scenario, f"the run raised {played.error!r}", played, provider)
        if not requests:
            self.fail(invariant, scenario, "no input.requested arrived", played, provider)
        if not played.terminals:
            self.fail(
                invariant,
                scenario,
                f"respond() did not unblock the run: {_no_terminal(played, self.timeout)}",
                played,
                provider,
            )
        for request in requests:
            texts = [
                e.text
                for e in played.events
                if isinstance(e, InputResolved) and e.request_id == request.request_id
            ]
            if texts != [text]:
                self.fail(
                    invariant,
                    scenario,
                    f"input {request.request_id!r} was resolved with {texts}, answered {text!r}",
                    played,
                    provider,
                )
        self.result(invariant, scenario, played)
