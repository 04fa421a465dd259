"""The provider conformance suite: the in-process doubles pass it, and each invariant
catches a provider that breaks it."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator

import pytest
from _broken_providers import (
    BROKEN,
    AcceptsUndeclaredInterrupt,
    IgnoresInterrupt,
    LeaksProcess,
    LeaksTask,
    NeverEndsIteration,
    ReusesRunId,
    RunsDeniedTool,
)

from stuntset.checks import (
    CONFORMANCE_INVARIANTS as INVARIANTS,
)
from stuntset.checks import (
    ConformanceFailure,
    acheck_provider_conformance,
    check_provider_conformance,
    conformance_cases,
    conformance_test,
)
from stuntset.errors import HarnessFailure, UnknownScenario, UsageError
from stuntset.providers import AgentProvider, ScriptedProvider, StuckProvider
from stuntset.script import Script

#: In-process runs have no real waits: a short quiet period is a stall (the fallback, for
#: runs the script does not predict: a stuck run is interrupted once its events arrived).
FAST = {"stall_after": 0.05, "timeout": 5.0}


def scripted(script: Script) -> AgentProvider:
    return ScriptedProvider(script)


def test_the_scripted_provider_keeps_every_invariant_on_every_scenario() -> None:
    report = check_provider_conformance(scripted, **FAST)
    assert report.provider == "scripted"
    assert {r.invariant for r in report.results} == set(INVARIANTS)
    assert report.not_applicable() == []
    outcomes = report.outcomes()
    assert outcomes["happy_path"].terminal == "run.completed"
    assert outcomes["stuck"].terminal == "run.killed"
    assert outcomes["stuck"].stalled_by == "events"  # its "Thinking" arrived: no quiet wait
    assert outcomes["happy_path"].stalled_by is None
    assert (outcomes["spawn_missing"].kind, outcomes["spawn_missing"].retryable) == (
        "spawn_failed",
        False,
    )


def test_the_stuck_provider_keeps_every_invariant_it_admits() -> None:
    report = check_provider_conformance(
        lambda script: StuckProvider(preamble="Thinking"),
        scenarios=["happy_path", "needs_approval", "input_request", "multi_turn", "stuck"],
        quiet="always",
        **FAST,
    )
    assert {r.terminal for r in report.outcomes().values()} == {"run.killed"}
    # a hang its script does not predict is caught by the quiet window, the fallback
    assert report.outcomes()["happy_path"].stalled_by == "quiet"
    skipped = {(r.invariant, r.scenario): r.reason for r in report.not_applicable()}
    assert skipped == {
        ("approval-honoured", "needs_approval"): "the provider does not declare 'approvals'",
        ("input-honoured", "input_request"): "the provider does not declare 'input_requests'",
    }


#: The invariants whose broken provider is only caught by the check's timeout expiring.
HANGS = ("close-kills", "interrupt-terminates")


# Tests real time, on purpose: a run that never ends (HANGS) is caught by the checker's
# timeout expiring, which is the real clock (0.3 s here; the others never wait it out).
@pytest.mark.parametrize("invariant", sorted(BROKEN))
def test_each_invariant_catches_the_provider_that_breaks_it(invariant: str) -> None:
    broken, scenario = BROKEN[invariant]
    made: list[ScriptedProvider] = []

    def make(script: Script) -> AgentProvider:
        made.append(broken(script))
        return made[-1]

    try:
        with pytest.raises(ConformanceFailure) as caught:
            check_provider_conformance(
                make,
                invariants=[invariant],
                scenarios=[scenario],
                close_timeout=0.2,
                stall_after=0.05,
                timeout=0.3 if invariant in HANGS else 5.0,
            )
    finally:
        for provider in made:
            leaked = getattr(provider, "leaked", None)
            if leaked is not None:
                leaked.cancel()
    failure = caught.value
    assert (failure.invariant, failure.scenario) == (invariant, scenario)
    assert failure.provider == "scripted"
    assert invariant in str(failure)


def test_the_contract_check_alone_misses_what_the_other_invariants_catch() -> None:
    # The bug each broken provider plants is specific: the played run's contract holds.
    for invariant in ("approval-honoured", "resume-round-trips", "early-close-releases"):
        broken, scenario = BROKEN[invariant]
        leaky: list[ScriptedProvider] = []

        def make(
            script: Script,
            broken: type[ScriptedProvider] = broken,
            leaky: list[ScriptedProvider] = leaky,
        ) -> AgentProvider:
            leaky.append(broken(script))
            return leaky[-1]

        check_provider_conformance(make, invariants=["contract"], scenarios=[scenario], **FAST)
        for provider in leaky:
            if getattr(provider, "leaked", None) is not None:
                provider.leaked.cancel()  # type: ignore[attr-defined]


def test_a_resumed_run_that_reuses_the_first_run_id_is_caught() -> None:
    with pytest.raises(ConformanceFailure, match="the first run's own") as caught:
        check_provider_conformance(
            ReusesRunId, invariants=["resume-round-trips"], scenarios=["multi_turn"], **FAST
        )
    assert caught.value.invariant == "resume-round-trips"
    assert "'run-of-session-" in str(caught.value)
    # the runs themselves keep the event contract: only the resume check sees the bug
    check_provider_conformance(
        ReusesRunId, invariants=["contract", "started-first"], scenarios=["multi_turn"], **FAST
    )


def test_a_denied_tool_that_runs_anyway_is_caught() -> None:
    with pytest.raises(ConformanceFailure, match="denied tool call") as caught:
        check_provider_conformance(
            RunsDeniedTool, invariants=["approval-honoured"], scenarios=["needs_approval"], **FAST
        )
    assert caught.value.invariant == "approval-honoured"


def test_a_run_that_ignores_interrupt_never_terminates_on_a_stall() -> None:
    # tests real time: only the check's own timeout (0.3 s) ends the wait
    with pytest.raises(ConformanceFailure, match="even after interrupt") as caught:
        check_provider_conformance(
            IgnoresInterrupt,
            invariants=["terminates"],
            scenarios=["stuck"],
            stall_after=0.05,
            timeout=0.3,
        )
    assert caught.value.invariant == "terminates"


def test_a_stream_that_does_not_end_after_its_terminal_event_is_caught() -> None:
    # tests real time: only the check's own timeout (0.3 s) ends the wait
    with pytest.raises(ConformanceFailure, match="did not end") as caught:
        check_provider_conformance(
            NeverEndsIteration,
            invariants=["terminates"],
            scenarios=["happy_path"],
            stall_after=0.05,
            timeout=0.3,
        )
    assert caught.value.invariant == "terminates"


def test_an_undeclared_interrupt_that_is_accepted_is_caught() -> None:
    with pytest.raises(ConformanceFailure, match="'interrupt'") as caught:
        check_provider_conformance(
            AcceptsUndeclaredInterrupt, invariants=["capabilities-refused"], **FAST
        )
    assert caught.value.invariant == "capabilities-refused"


@pytest.fixture
def leaky_process() -> Iterator[list[LeaksProcess]]:
    made: list[LeaksProcess] = []
    yield made
    for provider in made:  # the processes this test started, by their pid
        if provider.process is not None:
            provider.process.kill()
            provider.process.wait()


@pytest.mark.skipif(
    not __import__("sys").platform.startswith("linux"), reason="process check reads /proc"
)
def test_a_leaked_child_process_is_caught(leaky_process: list[LeaksProcess]) -> None:
    def make(script: Script) -> AgentProvider:
        leaky_process.append(LeaksProcess(script))
        return leaky_process[-1]

    with pytest.raises(ConformanceFailure, match=r"process \d+") as caught:
        check_provider_conformance(
            make,
            invariants=["early-close-releases"],
            scenarios=["happy_path"],
            close_timeout=0.2,
            **FAST,
        )
    assert caught.value.invariant == "early-close-releases"


def test_a_leaked_task_is_named_in_the_failure() -> None:
    made: list[LeaksTask] = []

    def make(script: Script) -> AgentProvider:
        made.append(LeaksTask(script))
        return made[-1]

    try:
        with pytest.raises(ConformanceFailure, match="task 'leaked'"):
            check_provider_conformance(
                make,
                invariants=["early-close-releases"],
                scenarios=["happy_path"],
                close_timeout=0.2,
                leak_checks=["tasks"],
                **FAST,
            )
    finally:
        for provider in made:
            if provider.leaked is not None:
                provider.leaked.cancel()


def test_the_check_runs_on_trio_too() -> None:
    report = check_provider_conformance(
        scripted, scenarios=["needs_approval", "stuck"], backend="trio", **FAST
    )
    assert report.outcomes()["stuck"].terminal == "run.killed"


@pytest.mark.anyio
async def test_inside_a_running_loop_the_async_form_checks_the_same() -> None:
    report = await acheck_provider_conformance(
        scripted, scenarios=["needs_approval", "stuck"], **FAST
    )
    assert report.outcomes()["needs_approval"].terminal == "run.completed"


def test_a_factory_that_cannot_render_a_scenario_makes_it_not_applicable() -> None:
    from stuntset.errors import ScriptError

    def make(script: Script) -> AgentProvider:
        if script.name == "spawn_missing":
            raise ScriptError("nothing to spawn here", wire="test")
        return ScriptedProvider(script)

    report = check_provider_conformance(make, scenarios=["happy_path", "spawn_missing"], **FAST)
    reasons = {r.reason for r in report.not_applicable()}
    assert reasons == {"the runtime cannot render it: wire 'test': nothing to spawn here"}

    def cannot(script: Script) -> AgentProvider:
        raise ScriptError("no", wire="test")

    with pytest.raises(ConformanceFailure, match="happy_path"):
        check_provider_conformance(cannot, scenarios=["happy_path"], **FAST)


def test_options_are_checked_up_front() -> None:
    with pytest.raises(UsageError, match="unknown conformance invariant"):
        check_provider_conformance(scripted, invariants=["contracts"])
    with pytest.raises(UnknownScenario, match="Did you mean 'happy_path'"):
        check_provider_conformance(scripted, scenarios=["happy_pat"])
    with pytest.raises(UsageError, match="unknown leak check"):
        check_provider_conformance(scripted, leak_checks=["sockets"])
    with pytest.raises(UsageError, match="quiet must be"):
        check_provider_conformance(scripted, quiet="never")  # type: ignore[arg-type]


def test_a_quiet_run_of_a_scenario_that_does_not_stall_is_not_interrupted() -> None:
    # tests real time: only the check's own timeout (0.3 s) ends the wait
    with pytest.raises(ConformanceFailure, match="its scenario does not stall") as caught:
        check_provider_conformance(
            lambda script: StuckProvider(),
            invariants=["terminates"],
            scenarios=["happy_path"],
            stall_after=0.05,
            timeout=0.3,
        )
    assert caught.value.invariant == "terminates"


def test_conformance_failure_is_a_harness_failure_that_pickles() -> None:
    failure = ConformanceFailure("x", invariant="contract", scenario="stuck", provider="p")
    assert isinstance(failure, HarnessFailure)
    assert isinstance(failure, AssertionError)
    copy = pickle.loads(pickle.dumps(failure))
    assert (copy.invariant, copy.scenario, copy.provider) == ("contract", "stuck", "p")


def test_cases_cover_every_invariant_and_scenario() -> None:
    cases = conformance_cases()
    assert {c.invariant for c in cases} == set(INVARIANTS)
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids))
    assert "approval-honoured[needs_approval]" in ids
    assert "resume-round-trips[multi_turn]" in ids
    assert "approval-honoured[happy_path]" not in ids
    assert conformance_cases(invariants=["contract"], scenarios=["stuck"])[0].id == (
        "contract[stuck]"
    )


# --- the pytest helper: one test per invariant × scenario ------------------------------------


@pytest.fixture
def make_scripted() -> Callable[[Script], AgentProvider]:
    return scripted


@pytest.fixture
def make_stuck() -> Callable[[Script], AgentProvider]:
    return lambda script: StuckProvider()


test_scripted_conformance = conformance_test(
    "make_scripted", scenarios=["happy_path", "needs_approval", "multi_turn", "stuck"], **FAST
)
test_stuck_conformance = conformance_test(
    "make_stuck", scenarios=["needs_approval", "stuck"], quiet="always", **FAST
)
