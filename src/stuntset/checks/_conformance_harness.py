"""The harness of the provider conformance suite: what each invariant demands, the report,
and ``Harness``, the base every group of checks builds on (failing with the invariant's
text, recording results, building providers, starting and playing runs).

The groups of invariants, one module each: ``_conformance_streams`` (the played run:
started-first, contract, terminates, honest capabilities, usage), ``_conformance_lifecycle``
(close-kills, early-close-releases, capabilities-refused), ``_conformance_approvals``
(approval-honoured, input-honoured) and ``_conformance_interrupt`` (interrupt-terminates,
resume-round-trips); ``provider_conformance`` runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from stuntset.checks._conformance_play import Played, play, stall_expectation
from stuntset.errors import ConformanceFailure, ScriptError
from stuntset.events import RunCrashed, encode, type_of
from stuntset.providers.base import AgentProvider, AgentRun, Capabilities
from stuntset.script import Script, Stall

__all__ = [
    "INVARIANTS",
    "INVARIANT_DOCS",
    "LEAK_CHECKS",
    "PLAY",
    "SESSION_SCENARIO",
    "CaseResult",
    "ConformanceReport",
    "Harness",
    "script_has",
]

#: What each invariant demands, in the order they are checked.
INVARIANT_DOCS: dict[str, str] = {
    "started-first": "run.started is the first event, for the run's own run_id and session",
    "contract": "every run's event stream passes the event contract (stuntset.contract)",
    "terminates": (
        "every run reaches exactly one terminal event within the bound and then ends; "
        "a stalled run (the stuck scenario) is interrupted once the events its script emits "
        "before the stall have arrived (or, failing that, once quiet), and interrupt() must "
        "end it"
    ),
    "interrupt-terminates": (
        "interrupt() at any point leads to a terminal event (run.killed for a run that was "
        "stalled), and is harmless after the end"
    ),
    "close-kills": (
        "provider.aclose() ends a run that is still going with run.killed, and its stream ends"
    ),
    "approval-honoured": (
        "respond() unblocks a pending approval; approval.resolved carries the decision, and "
        "a denied tool call completes as an error, an allowed one does not"
    ),
    "input-honoured": "respond() unblocks an input request; input.resolved carries the text",
    "resume-round-trips": (
        "the run's session_id, given to a new provider's start(resume=), continues that "
        "session (same session_id, a new run_id, and it does not crash)"
    ),
    "early-close-releases": (
        "a consumer that stops iterating early and closes the run leaves no task, child "
        "process or open pipe/socket behind"
    ),
    "capabilities-refused": (
        "a capability the provider does not declare (resume, interrupt) is refused with "
        "CapabilityError before anything starts"
    ),
    "capabilities-honest": (
        "no event needs a capability the provider does not declare (approvals, input "
        "requests, reasoning, usage)"
    ),
    "usage-not-zero": (
        "usage is reported only when known: never all-zero tokens, never negative (unknown "
        "usage means no usage event)"
    ),
}
INVARIANTS: tuple[str, ...] = tuple(INVARIANT_DOCS)

#: Invariants checked on the one played run of each scenario.
PLAY = ("started-first", "contract", "terminates", "capabilities-honest", "usage-not-zero")
#: Invariants checked once per provider, on this scenario.
SESSION_SCENARIO = {
    "close-kills": "stuck",
    "resume-round-trips": "multi_turn",
    "capabilities-refused": "happy_path",
}
LEAK_CHECKS = ("tasks", "processes", "fds")


@dataclass(frozen=True)
class CaseResult:
    """What happened for one case: ``"passed"`` or ``"not applicable"`` (with the reason).

    ``terminal`` / ``kind`` / ``retryable`` describe how the case's run ended;
    ``stalled_by`` why it was interrupted as stalled: ``"events"`` (everything its script
    emits before the stall had arrived), ``"quiet"`` (``stall_after`` s without an event,
    the fallback), ``None`` (it was not).
    """

    invariant: str
    scenario: str
    status: Literal["passed", "not applicable"]
    reason: str = ""
    terminal: str | None = None
    kind: str | None = None
    retryable: bool | None = None
    stalled_by: str | None = None


@dataclass
class ConformanceReport:
    """Every case checked, for a provider; ``outcomes`` is scenario → how its run ended."""

    provider: str
    results: list[CaseResult] = field(default_factory=list)

    def outcomes(self) -> dict[str, CaseResult]:
        """The played run of each scenario (its ``terminates`` case), for matrix tables."""
        return {r.scenario: r for r in self.results if r.invariant == "terminates"}

    def not_applicable(self) -> list[CaseResult]:
        return [r for r in self.results if r.status == "not applicable"]


def script_has(script: Script, kind: type[Any]) -> bool:
    return any(isinstance(step, kind) for turn in script.turns for step in turn.steps)


class Harness:
    """What every group of conformance checks uses: the options, the report, failing and
    recording, providers and runs."""

    def __init__(
        self,
        make_provider: Callable[[Script], AgentProvider],
        *,
        timeout: float,
        stall_after: float,
        close_timeout: float,
        prompt: str,
        leak_checks: Collection[str],
        quiet: str = "stall",
    ) -> None:
        self.make_provider = make_provider
        self.quiet = quiet
        self.timeout = timeout
        self.stall_after = stall_after
        self.close_timeout = close_timeout
        self.prompt = prompt
        self.leak_checks = leak_checks
        self.report = ConformanceReport(provider="?")
        self.own_tasks: set[int] = set()

    # --- failing ---

    def fail(
        self,
        invariant: str,
        scenario: str,
        detail: str,
        played: Played | None = None,
        provider: AgentProvider | None = None,
    ) -> None:
        __tracebackhide__ = True
        name = provider.name if provider is not None else self.report.provider
        shown = ""
        if played is not None:
            lines = [f"  #{i} {encode(e).decode()}" for i, e in enumerate(played.events)]
            shown = "\n  events:\n" + ("\n".join(lines) if lines else "  (none)")
            if played.interrupted_after is not None:
                shown += f"\n  (interrupt() was called after event #{played.interrupted_after - 1})"
        raise ConformanceFailure(
            f"provider {name!r} breaks conformance invariant {invariant!r} on scenario "
            f"{scenario!r}: {detail}{shown}\n  ({invariant}: {INVARIANT_DOCS[invariant]})",
            invariant=invariant,
            scenario=scenario,
            provider=name,
        )

    def result(
        self, invariant: str, scenario: str, played: Played | None = None, **extra: Any
    ) -> None:
        terminal = played.terminal if played is not None else None
        self.report.results.append(
            CaseResult(
                invariant,
                scenario,
                extra.pop("status", "passed"),
                reason=extra.pop("reason", ""),
                terminal=type_of(terminal) if terminal is not None else None,
                kind=terminal.kind if isinstance(terminal, RunCrashed) else None,
                retryable=terminal.retryable if isinstance(terminal, RunCrashed) else None,
                stalled_by=played.stalled_by if played is not None else None,
            )
        )

    def skip(self, invariants: Iterable[str], scenario: str, reason: str) -> None:
        for invariant in invariants:
            self.result(invariant, scenario, status="not applicable", reason=reason)

    # --- providers ---

    def provider_for(self, script: Script, scenario: str) -> AgentProvider | str:
        """A provider for ``script``, or why the scenario is not applicable."""
        try:
            provider = self.make_provider(script)
        except ScriptError as error:
            if scenario == "happy_path":
                raise ConformanceFailure(
                    f"make_provider cannot render the happy_path scenario: {error}",
                    invariant="terminates",
                    scenario=scenario,
                    provider=self.report.provider,
                ) from error
            return f"the runtime cannot render it: {error}"
        if self.report.provider == "?":
            self.report.provider = provider.name
        return provider

    async def provider_declaring(
        self, script: Script, scenario: str, record: list[str], capability: str | None = None
    ) -> AgentProvider | None:
        """A provider for ``script`` that declares ``capability``; else ``None``, with the
        ``record`` invariants marked not applicable (and the reason)."""
        provider = self.provider_for(script, scenario)
        if isinstance(provider, str):
            self.skip(record, scenario, provider)
            return None
        if capability is not None and not getattr(provider.capabilities, capability):
            await self.close(provider)
            self.skip(record, scenario, f"the provider does not declare {capability!r}")
            return None
        return provider

    async def close(self, provider: AgentProvider) -> None:
        with anyio.move_on_after(self.close_timeout):
            await provider.aclose()

    async def start(
        self, provider: AgentProvider, invariant: str, scenario: str, prompt: str | None = None
    ) -> AgentRun:
        try:
            return provider.start(prompt or self.prompt)
        except Exception as error:
            self.fail(
                invariant,
                scenario,
                f"start() raised {error!r}; a runtime's failure must arrive as run.crashed",
                provider=provider,
            )
            raise  # pragma: no cover - fail() raised

    async def play(
        self, run: AgentRun, script: Script, provider: AgentProvider | None = None, **options: Any
    ) -> Played:
        """Play ``run``; it is interrupted once stalled if its script stalls (or, with
        ``quiet="always"``, once quiet whatever the script). Stalled means: every event the
        script's pre-stall steps imply has arrived (``stall_expectation``, for the first
        turn of ``script`` and ``provider``'s capabilities), else ``stall_after`` s quiet."""
        options.setdefault(
            "interrupt_when_quiet", self.quiet == "always" or script_has(script, Stall)
        )
        caps = provider.capabilities if provider is not None else Capabilities()
        options.setdefault("stalled", stall_expectation(script, caps))
        return await play(run, timeout=self.timeout, stall_after=self.stall_after, **options)
