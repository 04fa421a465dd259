"""The conformance checks' other failure paths (split into one module per group, each now
measured on its own): every way a provider can break an invariant besides the one bug
``BROKEN`` plants for it, each met by a provider with that bug, the message asserted. And
the two passing paths no catalog provider takes: a run without ``aclose()``, and a provider
that declares no ``interrupt`` and refuses it properly."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from _broken_providers import BrokenProvider, _Tampered

from stuntset.checks import ConformanceReport, check_provider_conformance
from stuntset.errors import CapabilityError, ConformanceFailure
from stuntset.events import (
    ApprovalRequested,
    Event,
    InputRequested,
    RunCompleted,
    RunCrashed,
    RunKilled,
    RunStarted,
    ToolCompleted,
)
from stuntset.providers import Capabilities, ScriptedProvider
from stuntset.script import Script

FAST = {"close_timeout": 0.2, "stall_after": 0.05, "timeout": 1.0}


class _Raises(_Tampered):
    def bend(self, event: Event) -> Event:
        if not isinstance(event, RunStarted):
            raise RuntimeError("boom")
        return event


class RaisesMidRun(BrokenProvider):
    """Its run raises after ``run.started``."""

    run_class = _Raises


class _KilledAsCompleted(_Tampered):
    def bend(self, event: Event) -> Event:
        if isinstance(event, RunKilled):
            return RunCompleted(run_id=event.run_id, ts=event.ts)
        return event


class CompletesWhenInterrupted(BrokenProvider):
    """An interrupted, stalled run ends as completed."""

    run_class = _KilledAsCompleted


class _LateInterruptRaises(_Tampered):
    ended = False

    def bend(self, event: Event) -> Event:
        self.ended = self.ended or event.terminal
        return event

    async def interrupt(self, reason: str = "interrupted") -> None:
        if self.ended:
            raise RuntimeError("already over")
        await self.inner.interrupt(reason)


class InterruptAfterEndRaises(BrokenProvider):
    """``interrupt()`` after the terminal event raises."""

    run_class = _LateInterruptRaises


class _Drops(_Tampered):
    dropped: type[Event] = ApprovalRequested

    async def __anext__(self) -> Event:
        event = await super().__anext__()
        if isinstance(event, self.dropped):
            # and ends its stream: the run would wait for an answer nobody can give, which
            # the check would only see at its timeout (real time)
            raise StopAsyncIteration
        return event


class _DropsInput(_Drops):
    dropped = InputRequested


class SwallowsApprovals(BrokenProvider):
    """Never shows its approval requests: its stream ends where one would come."""

    run_class = _Drops


class SwallowsInputRequests(BrokenProvider):
    """Never shows its input requests."""

    run_class = _DropsInput


class _EndsOnAnswer(_Tampered):
    answered = False

    async def __anext__(self) -> Event:
        if self.answered:
            raise StopAsyncIteration
        return await super().__anext__()

    async def respond(self, request_id: str, decision: str) -> None:
        self.answered = True


class EndsOnTheAnswer(BrokenProvider):
    """Takes the answer, then ends its stream without a terminal event."""

    run_class = _EndsOnAnswer


class _IgnoresAnswer(_Tampered):
    async def respond(self, request_id: str, decision: str) -> None:
        return None


class IgnoresTheAnswer(BrokenProvider):
    """Takes the answer and does nothing with it: the run waits on."""

    run_class = _IgnoresAnswer


class _FailsAllowedTool(_Tampered):
    def bend(self, event: Event) -> Event:
        if isinstance(event, ToolCompleted):
            return msgspec.structs.replace(event, is_error=True, output="permission denied")
        return event


class FailsTheAllowedTool(BrokenProvider):
    """Reports every tool call as failed, the allowed one too."""

    run_class = _FailsAllowedTool


class _ForeignSession(_Tampered):
    def bend(self, event: Event) -> Event:
        if isinstance(event, RunStarted):
            return msgspec.structs.replace(event, session_id="someone-else")
        return event


class StartsInAnotherSession(BrokenProvider):
    """``run.started`` names a session that is not the run's."""

    run_class = _ForeignSession


class _SessionAtStart(_Tampered):
    def __init__(self, inner: Any, provider: BrokenProvider) -> None:
        super().__init__(inner, provider)
        self.at_start = inner.session_id

    @property
    def session_id(self) -> str:
        return self.at_start

    def bend(self, event: Event) -> Event:
        if isinstance(event, RunStarted):
            return msgspec.structs.replace(event, session_id=self.at_start)
        return event


class LosesItsSessionId(BrokenProvider):
    """After a run its ``session_id`` is no longer the run's."""

    run_class = _SessionAtStart
    ran = False

    def start(self, prompt: str, *, resume: str | None = None) -> Any:
        run = super().start(prompt, resume=resume)
        self.ran = True
        return run

    @property
    def session_id(self) -> str:
        return "forgotten" if self.ran else super().session_id


class RefusesToResume(ScriptedProvider):
    """Declares ``resume`` but a new provider's ``start(resume=...)`` raises."""

    def start(self, prompt: str, *, resume: str | None = None) -> Any:
        if resume is not None:
            raise RuntimeError("no such session")
        return super().start(prompt)


class _ResumedReportsOther(_Tampered):
    @property
    def session_id(self) -> str:
        return "elsewhere"


class MisreportsTheResumedSession(BrokenProvider):
    """A resumed run's ``session_id`` is not the handle it was resumed with."""

    def start(self, prompt: str, *, resume: str | None = None) -> Any:
        run = super().start(prompt, resume=resume)
        return _ResumedReportsOther(run.inner, self) if resume is not None else run


class _CrashInstead(_Tampered):
    def bend(self, event: Event) -> Event:
        if isinstance(event, RunCompleted):
            return RunCrashed(run_id=event.run_id, ts=event.ts, kind="internal", message="x")
        return event


class CrashesWhenContinued(BrokenProvider):
    """The first run completes; continuing its session crashes."""

    def start(self, prompt: str, *, resume: str | None = None) -> Any:
        run = super().start(prompt, resume=resume)
        return _CrashInstead(run.inner, self) if resume is not None else run


class _NoResume(ScriptedProvider):
    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(interrupt=True, approvals=True, input_requests=True, usage=True)


class RefusesResumeVaguely(_NoResume):
    """Refuses ``resume`` with a CapabilityError that does not name it."""

    def start(self, prompt: str, *, resume: str | None = None) -> Any:
        if resume is not None:
            raise CapabilityError("not today")
        return super().start(prompt)


class RefusesResumeAfterStarting(_NoResume):
    """Refuses ``resume`` properly, but only after starting a task."""

    def start(self, prompt: str, *, resume: str | None = None) -> Any:
        if resume is not None:
            self.leaked = asyncio.get_running_loop().create_task(asyncio.Event().wait())
            raise CapabilityError("resume is not supported")
        return super().start(prompt)


class _RefusesInterrupt(_Tampered):
    message = "interrupt is not supported"

    async def interrupt(self, reason: str = "interrupted") -> None:
        raise CapabilityError(self.message)


class _RefusesInterruptVaguely(_RefusesInterrupt):
    message = "not today"


class _NoInterrupt(BrokenProvider):
    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(resume=True, approvals=True, input_requests=True, usage=True)


class RefusesInterruptVaguely(_NoInterrupt):
    """Refuses ``interrupt`` with a CapabilityError that does not name it."""

    run_class = _RefusesInterruptVaguely


class RefusesInterruptProperly(_NoInterrupt):
    """Declares no ``interrupt`` and refuses it, naming it: conformant."""

    run_class = _RefusesInterrupt


class _WithoutAclose:
    """A run with no ``aclose()`` (the provider's close ends it)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.run_id, self.session_id = inner.run_id, inner.session_id

    def __aiter__(self) -> _WithoutAclose:
        return self

    async def __anext__(self) -> Event:
        return await self.inner.__anext__()

    async def interrupt(self, reason: str = "interrupted") -> None:
        await self.inner.interrupt(reason)

    async def respond(self, request_id: str, decision: str) -> None:
        await self.inner.respond(request_id, decision)


class RunsWithoutAclose(ScriptedProvider):
    """Its runs have no ``aclose()``: conformant, the provider's ``aclose()`` releases them."""

    def start(self, prompt: str, *, resume: str | None = None) -> Any:
        return _WithoutAclose(super().start(prompt, resume=resume))


class LeaksPastItsClose(RunsWithoutAclose):
    """Runs without ``aclose()``; closed a second time, it leaves a task running."""

    closes = 0

    async def aclose(self) -> None:
        self.closes += 1
        if self.closes == 2:
            self.leaked = asyncio.get_running_loop().create_task(asyncio.Event().wait())
        await super().aclose()


#: (invariant, provider, scenario, what the failure says)
FAILURES = [
    ("close-kills", RaisesMidRun, "stuck", "the run raised RuntimeError('boom')"),
    ("early-close-releases", RaisesMidRun, "long_stream", "the run raised RuntimeError('boom')"),
    ("early-close-releases", LeaksPastItsClose, "long_stream", "after provider.aclose() these"),
    ("interrupt-terminates", RaisesMidRun, "stuck", "the run raised RuntimeError('boom')"),
    ("interrupt-terminates", CompletesWhenInterrupted, "stuck", "only run.killed is honest"),
    ("interrupt-terminates", InterruptAfterEndRaises, "happy_path", "it must be harmless"),
    ("approval-honoured", RaisesMidRun, "needs_approval", "the run raised RuntimeError('boom')"),
    ("approval-honoured", SwallowsApprovals, "needs_approval", "no approval.requested arrived"),
    ("approval-honoured", EndsOnTheAnswer, "needs_approval", "its stream ended without a"),
    ("approval-honoured", FailsTheAllowedTool, "needs_approval", "completed as an error"),
    ("input-honoured", RaisesMidRun, "input_request", "the run raised RuntimeError('boom')"),
    ("input-honoured", SwallowsInputRequests, "input_request", "no input.requested arrived"),
    ("input-honoured", EndsOnTheAnswer, "input_request", "its stream ended without a"),
    ("resume-round-trips", StartsInAnotherSession, "multi_turn", "does not carry its session_id"),
    ("resume-round-trips", LosesItsSessionId, "multi_turn", "the provider's session_id is"),
    ("resume-round-trips", RefusesToResume, "multi_turn", "on a new provider raised"),
    ("resume-round-trips", MisreportsTheResumedSession, "multi_turn", "'elsewhere'"),
    ("resume-round-trips", CrashesWhenContinued, "multi_turn", "continuing its session crashed"),
    ("capabilities-refused", RefusesResumeVaguely, "happy_path", "does not name the capability"),
    ("capabilities-refused", RefusesResumeAfterStarting, "happy_path", "still started something"),
    ("capabilities-refused", RefusesInterruptVaguely, "happy_path", "does not name the capability"),
]


def play(provider: type[ScriptedProvider], invariant: str, scenario: str) -> ConformanceReport:
    made: list[ScriptedProvider] = []

    def make(script: Script) -> ScriptedProvider:
        made.append(provider(script))
        return made[-1]

    try:
        return check_provider_conformance(
            make, invariants=[invariant], scenarios=[scenario], **FAST
        )
    finally:
        for each in made:
            leaked = getattr(each, "leaked", None)
            if leaked is not None:
                leaked.cancel()


@pytest.mark.parametrize(
    ("invariant", "provider", "scenario", "message"),
    FAILURES,
    ids=[f"{i}-{p.__name__}" for i, p, _, _ in FAILURES],
)
def test_each_failure_path_names_what_the_provider_did(
    invariant: str, provider: type[ScriptedProvider], scenario: str, message: str
) -> None:
    with pytest.raises(ConformanceFailure) as caught:
        play(provider, invariant, scenario)
    assert (caught.value.invariant, caught.value.scenario) == (invariant, scenario)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("invariant", "provider", "scenario"),
    [
        ("early-close-releases", RunsWithoutAclose, "long_stream"),
        ("capabilities-refused", RefusesInterruptProperly, "happy_path"),
    ],
)
def test_the_paths_no_catalog_provider_takes_pass(
    invariant: str, provider: type[ScriptedProvider], scenario: str
) -> None:
    report = play(provider, invariant, scenario)
    # played and passed, not passed over as not applicable
    assert [(r.invariant, r.status, r.reason) for r in report.results] == [
        (invariant, "passed", "")
    ]


def test_a_run_the_answer_leaves_waiting_fails_at_the_checks_timeout() -> None:
    # tests real time: the check's own timeout (0.3 s of real time) is what ends the wait
    with pytest.raises(ConformanceFailure, match=r"no terminal event within 0\.3 s of the answer"):
        check_provider_conformance(
            IgnoresTheAnswer,
            invariants=["input-honoured"],
            scenarios=["input_request"],
            **{**FAST, "timeout": 0.3},
        )
