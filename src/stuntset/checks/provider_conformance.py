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

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio

from stuntset import scenarios as catalog
from stuntset.checks._conformance_approvals import ApprovalAndInputChecks
from stuntset.checks._conformance_harness import (
    INVARIANT_DOCS,
    INVARIANTS,
    LEAK_CHECKS,
    PLAY,
    SESSION_SCENARIO,
    CaseResult,
    ConformanceReport,
    script_has,
)
from stuntset.checks._conformance_interrupt import InterruptAndResumeChecks
from stuntset.checks._conformance_lifecycle import LifecycleChecks
from stuntset.checks._conformance_streams import StreamChecks
from stuntset.providers.base import AgentProvider
from stuntset.script import ApprovalRequest, InputRequest, Script

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


def _invariants_for(script: Script) -> list[str]:
    name = script.name or ""
    wanted = [*PLAY, "interrupt-terminates", "early-close-releases"]
    if script_has(script, ApprovalRequest):
        wanted.append("approval-honoured")
    if script_has(script, InputRequest):
        wanted.append("input-honoured")
    wanted += [inv for inv, scenario in SESSION_SCENARIO.items() if scenario == name]
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


# --- the checks: the harness and one group of invariants per module ---------------------------


class _Checker(StreamChecks, LifecycleChecks, ApprovalAndInputChecks, InterruptAndResumeChecks):
    """Every group of checks on one harness."""

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
            if any(inv in PLAY for inv in applicable):
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
    leak_checks: Collection[str] = LEAK_CHECKS,
    quiet: Literal["stall", "always"] = "stall",
) -> ConformanceReport:
    """``check_provider_conformance`` inside a running event loop (asyncio or trio)."""
    __tracebackhide__ = True
    if quiet not in ("stall", "always"):
        from stuntset.errors import UsageError

        raise UsageError(f"quiet must be 'stall' or 'always', got {quiet!r}")
    unknown = set(leak_checks) - set(LEAK_CHECKS)
    if unknown:
        from stuntset.errors import UsageError

        raise UsageError(f"unknown leak check(s) {sorted(unknown)}; known: {LEAK_CHECKS}")
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
    leak_checks: Collection[str] = LEAK_CHECKS,
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
