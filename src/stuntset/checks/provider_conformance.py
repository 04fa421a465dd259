"""``check_provider_conformance(make_provider)``: the conformance suite for any ``AgentProvider``.

Call it from one test with a factory that builds a provider playing a catalog script::

    def test_my_adapter_conforms(tmp_path):
        check_provider_conformance(lambda script: MyProvider(double_for(script, tmp_path)))

``make_provider(script)`` returns a fresh provider whose runtime plays ``script`` (a catalog
scenario's script: install a fake CLI with it, point a model double at it, or hand it to an
in-process double). It may be called again with the *same* ``Script`` object: that second
provider must talk to the same runtime (the same installed double), since the resume check
continues a session of the first in it. A factory that raises ``ScriptError`` says "this
runtime cannot render that scenario"; the scenario is then not applicable (``happy_path``
must always be).

The invariants are derived from the event contract and the ``AgentProvider`` protocol,
never from one provider's behaviour (``INVARIANTS`` lists them, each explained in
``INVARIANT_DOCS``). Scenarios a provider's declared ``Capabilities`` do not admit are
skipped, never faked. Any broken rule raises ``ConformanceFailure`` naming the invariant,
the scenario and the events seen. The check is pytest-independent; ``conformance_test``
expands it into one pytest test per invariant × scenario.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from stuntset import scenarios as catalog
from stuntset.checks._conformance_play import Played, Resources, play, stall_expectation
from stuntset.contract import check_events
from stuntset.errors import CapabilityError, ConformanceFailure, ContractViolation, ScriptError
from stuntset.events import (
    ApprovalRequested,
    ApprovalResolved,
    InputRequested,
    InputResolved,
    ReasoningCompleted,
    ReasoningDelta,
    RunCompleted,
    RunCrashed,
    RunKilled,
    RunStarted,
    ToolCompleted,
    Usage,
    encode,
    type_of,
)
from stuntset.providers.base import AgentProvider, AgentRun, Capabilities
from stuntset.script import ApprovalRequest, InputRequest, Script, Stall

__all__ = [
    "INVARIANTS",
    "INVARIANT_DOCS",
    "CaseResult",
    "ConformanceCase",
    "ConformanceReport",
    "acheck_provider_conformance",
    "check_provider_conformance",
    "conformance_cases",
    "conformance_test",
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
_PLAY = ("started-first", "contract", "terminates", "capabilities-honest", "usage-not-zero")
#: Invariants checked once per provider, on this scenario.
_SESSION_SCENARIO = {
    "close-kills": "stuck",
    "resume-round-trips": "multi_turn",
    "capabilities-refused": "happy_path",
}
_LEAK_CHECKS = ("tasks", "processes", "fds")


@dataclass(frozen=True)
class ConformanceCase:
    """One invariant on one scenario (``scenario`` is the one it is checked on)."""

    invariant: str
    scenario: str

    @property
    def id(self) -> str:
        return f"{self.invariant}[{self.scenario}]"

    def __str__(self) -> str:
        return self.id


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


def _script_has(script: Script, kind: type[Any]) -> bool:
    return any(isinstance(step, kind) for turn in script.turns for step in turn.steps)


def _invariants_for(script: Script) -> list[str]:
    name = script.name or ""
    wanted = [*_PLAY, "interrupt-terminates", "early-close-releases"]
    if _script_has(script, ApprovalRequest):
        wanted.append("approval-honoured")
    if _script_has(script, InputRequest):
        wanted.append("input-honoured")
    wanted += [inv for inv, scenario in _SESSION_SCENARIO.items() if scenario == name]
    return [inv for inv in INVARIANTS if inv in wanted]


def conformance_cases(
    *, invariants: Iterable[str] | None = None, scenarios: Iterable[str] | None = None
) -> list[ConformanceCase]:
    """Every (invariant, scenario) case, in catalog order; filter with the two options.

    Whether a case applies to a given provider (its capabilities, what its runtime can
    render) is only known once the provider exists; the check then reports it as not
    applicable.
    """
    chosen = _chosen_invariants(invariants)
    names = _chosen_scenarios(scenarios)
    cases = []
    for name in names:
        script = catalog.build(name)
        cases += [ConformanceCase(inv, name) for inv in _invariants_for(script) if inv in chosen]
    return cases


def _chosen_invariants(invariants: Iterable[str] | None) -> list[str]:
    if invariants is None:
        return list(INVARIANTS)
    chosen = list(invariants)
    unknown = [name for name in chosen if name not in INVARIANT_DOCS]
    if unknown:
        from stuntset.errors import UsageError

        raise UsageError(
            f"unknown conformance invariant(s) {unknown}; known: {', '.join(INVARIANTS)}"
        )
    return chosen


def _chosen_scenarios(scenarios: Iterable[str] | None) -> list[str]:
    if scenarios is None:
        return catalog.names()
    names = list(scenarios)
    for name in names:
        catalog.get(name)  # UnknownScenario with a did-you-mean
    return names


# --- the checks --------------------------------------------------------------------------------


class _Checker:
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
            "interrupt_when_quiet", self.quiet == "always" or _script_has(script, Stall)
        )
        caps = provider.capabilities if provider is not None else Capabilities()
        options.setdefault("stalled", stall_expectation(script, caps))
        return await play(run, timeout=self.timeout, stall_after=self.stall_after, **options)

    # --- the played run: started-first, contract, terminates, honest capabilities, usage ---

    async def check_play(self, script: Script, scenario: str, chosen: Collection[str]) -> None:
        __tracebackhide__ = True
        wanted = [inv for inv in _PLAY if inv in chosen]
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
            blocked = _script_has(script, Stall) or any(
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
                f"{where} respond() did not unblock the run: no terminal event within "
                f"{self.timeout} s of the answer",
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
        return

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
        requests = [e for e in played.events if isinstance(e, InputRequested)]
        if played.error is not None:
            self.fail(invariant, scenario, f"the run raised {played.error!r}", played, provider)
        if not requests:
            self.fail(invariant, scenario, "no input.requested arrived", played, provider)
        if not played.terminals:
            self.fail(
                invariant,
                scenario,
                f"respond() did not unblock the run: no terminal event within {self.timeout} s "
                f"of the answer",
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

    # --- driver ---

    async def run(
        self, chosen_invariants: Sequence[str], chosen_scenarios: Sequence[str]
    ) -> ConformanceReport:
        __tracebackhide__ = True
        self.own_tasks = {info.id for info in anyio.get_running_tasks()}
        for scenario in chosen_scenarios:
            applicable = [
                inv for inv in _invariants_for(catalog.build(scenario)) if inv in chosen_invariants
            ]
            if any(inv in _PLAY for inv in applicable):
                await self.check_play(catalog.build(scenario), scenario, applicable)
            if "interrupt-terminates" in applicable:
                await self.check_interrupt(catalog.build(scenario), scenario)
            if "close-kills" in applicable:
                await self.check_close(catalog.build(scenario), scenario)
            if "approval-honoured" in applicable:
                await self.check_approval(catalog.build(scenario), scenario, "deny")
                await self.check_approval(catalog.build(scenario), scenario, "allow")
            if "input-honoured" in applicable:
                await self.check_input(catalog.build(scenario), scenario)
            if "resume-round-trips" in applicable:
                await self.check_resume(catalog.build(scenario), scenario)
            if "early-close-releases" in applicable:
                await self.check_early_close(catalog.build(scenario), scenario)
            if "capabilities-refused" in applicable:
                await self.check_refused(catalog.build(scenario), scenario)
        return self.report


async def acheck_provider_conformance(
    make_provider: Callable[[Script], AgentProvider],
    *,
    invariants: Iterable[str] | None = None,
    scenarios: Iterable[str] | None = None,
    timeout: float = 10.0,
    stall_after: float = 0.5,
    close_timeout: float = 5.0,
    prompt: str = "Hello from the stuntset conformance suite",
    leak_checks: Collection[str] = _LEAK_CHECKS,
    quiet: Literal["stall", "always"] = "stall",
) -> ConformanceReport:
    """``check_provider_conformance`` inside a running event loop (asyncio or trio)."""
    __tracebackhide__ = True
    if quiet not in ("stall", "always"):
        from stuntset.errors import UsageError

        raise UsageError(f"quiet must be 'stall' or 'always', got {quiet!r}")
    unknown = set(leak_checks) - set(_LEAK_CHECKS)
    if unknown:
        from stuntset.errors import UsageError

        raise UsageError(f"unknown leak check(s) {sorted(unknown)}; known: {_LEAK_CHECKS}")
    checker = _Checker(
        make_provider,
        timeout=timeout,
        stall_after=stall_after,
        close_timeout=close_timeout,
        prompt=prompt,
        leak_checks=leak_checks,
        quiet=quiet,
    )
    return await checker.run(_chosen_invariants(invariants), _chosen_scenarios(scenarios))


def check_provider_conformance(
    make_provider: Callable[[Script], AgentProvider],
    *,
    invariants: Iterable[str] | None = None,
    scenarios: Iterable[str] | None = None,
    timeout: float = 10.0,
    stall_after: float = 0.5,
    close_timeout: float = 5.0,
    prompt: str = "Hello from the stuntset conformance suite",
    leak_checks: Collection[str] = _LEAK_CHECKS,
    quiet: Literal["stall", "always"] = "stall",
    backend: str = "asyncio",
) -> ConformanceReport:
    """Check the providers ``make_provider(script)`` builds against every invariant.

    Runs its own event loop (``backend``: ``"asyncio"`` or ``"trio"``); inside a running
    loop use ``acheck_provider_conformance``. Options:

    ``invariants`` / ``scenarios``
        Check only these (names from ``INVARIANTS`` and the scenario catalog).
    ``timeout``
        Seconds of real time each run has to reach its terminal event and end.
    ``stall_after``
        A run whose scenario stalls (``stuck``: its runtime never finishes by itself) is
        interrupted as soon as every event its script implies before the stall has arrived
        (counted by kind: ``run.started``, the text, tool calls and results, the requests
        the provider declares). ``stall_after`` seconds without an event is only the upper
        bound, for runs whose events cannot be predicted (a script played by a function, a
        matched or repeated first turn, a stall in a later turn, ``quiet="always"``) or that
        fall short of them. ``CaseResult.stalled_by`` says which ended a run.
    ``quiet``
        ``"stall"`` (default): only runs of scenarios with a stall are interrupted when
        quiet; every other run must end by itself within ``timeout``. ``"always"``: any
        quiet run is interrupted — for providers that hang on purpose (``StuckProvider``).
    ``close_timeout``
        Seconds a closed run or provider has to release its tasks, processes and pipes.
    ``leak_checks``
        What "released" covers: ``"tasks"``, ``"processes"`` (Linux), ``"fds"`` (Linux:
        pipes and sockets). Leave one out for a runtime that keeps it alive on purpose.

    Returns a ``ConformanceReport`` (what passed, what did not apply and why, and how each
    scenario's run ended); raises ``ConformanceFailure`` at the first broken invariant.
    """
    __tracebackhide__ = True

    async def main() -> ConformanceReport:
        return await acheck_provider_conformance(
            make_provider,
            invariants=invariants,
            scenarios=scenarios,
            timeout=timeout,
            stall_after=stall_after,
            close_timeout=close_timeout,
            prompt=prompt,
            leak_checks=leak_checks,
            quiet=quiet,
        )

    return anyio.run(main, backend=backend)


def conformance_test(
    factory: str = "make_provider",
    *,
    invariants: Iterable[str] | None = None,
    scenarios: Iterable[str] | None = None,
    **options: Any,
) -> Callable[..., None]:
    """A pytest test function: one test per invariant × scenario, using the fixture named
    ``factory`` as ``make_provider``. Not-applicable cases are skipped with the reason::

        test_conformance = conformance_test("make_claude", timeout=20)

    ``options`` are passed to ``check_provider_conformance``.
    """
    import pytest  # only the pytest helper needs pytest

    cases = conformance_cases(invariants=invariants, scenarios=scenarios)

    @pytest.mark.parametrize("conformance_case", cases, ids=str)
    def test_provider_conformance(
        conformance_case: ConformanceCase, request: pytest.FixtureRequest
    ) -> None:
        __tracebackhide__ = True
        make_provider = request.getfixturevalue(factory)
        report = check_provider_conformance(
            make_provider,
            invariants=[conformance_case.invariant],
            scenarios=[conformance_case.scenario],
            **options,
        )
        skipped = report.not_applicable()
        if skipped and len(skipped) == len(report.results):
            pytest.skip(f"not applicable: {skipped[0].reason}")

    return test_provider_conformance
