"""``ScriptedProvider``: a complete in-process agent provider driven by a ``Script``.

It renders each turn at agent level, as the normalized events a correct adapter would emit
for it: text and reasoning deltas, tool calls and results, approval and input requests that
block until answered, usage, and one terminal event. Faults become the terminal a correct
adapter reports for them (``run.crashed`` with its kind and whether a retry may help; a stall
waits until interrupted). It records every call made to it (``calls``) for assertions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, assert_never

import anyio
import anyio.lowlevel

from stuntset.clock import Clock
from stuntset.errors import UsageError
from stuntset.events import (
    ApprovalRequested,
    ApprovalResolved,
    CrashKind,
    Event,
    InputRequested,
    InputResolved,
    MessageCompleted,
    MessageDelta,
    ReasoningCompleted,
    ReasoningDelta,
    RunCompleted,
    RunCrashed,
    RunKilled,
    RunStarted,
    ToolCompleted,
    ToolStarted,
)
from stuntset.events import Usage as UsageEvent
from stuntset.ids import IdGenerator
from stuntset.providers._crash_kinds import status_crash
from stuntset.providers.base import Call, Capabilities, Interrupted, Responded, Started, told
from stuntset.script import (
    AGENT_WIRE,
    ApprovalRequest,
    AuthExpired,
    Delay,
    Exit,
    FaultStep,
    Garbage,
    HttpError,
    InputRequest,
    MalformedJson,
    OutOfOrder,
    Overloaded,
    RateLimit,
    Reasoning,
    Script,
    ScriptPlayer,
    SpawnFailure,
    Stall,
    Step,
    StreamCut,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    TurnRequest,
    Usage,
)
from stuntset.seams import current_clock, current_ids

__all__ = ["ScriptedProvider", "ScriptedRun", "crash_for"]

_CAPABILITIES = Capabilities(
    approvals=True, input_requests=True, interrupt=True, resume=True, reasoning=True, usage=True
)


def crash_for(step: Step) -> tuple[CrashKind, str, bool] | None:
    """The ``run.crashed`` (kind, message, retryable) a correct adapter reports for a fault
    step, or ``None`` for steps that do not crash a run."""
    if isinstance(step, HttpError):
        # a script knows the response's x-should-retry header, which the SDKs obey
        message = f"HTTP {step.status}: {step.message or 'error'}"
        return status_crash(step.status, message, should_retry=step.should_retry)
    if isinstance(step, AuthExpired):
        return "auth", step.message, False
    if isinstance(step, RateLimit):
        return "rate_limited", step.message, True
    if isinstance(step, Overloaded):
        return "overloaded", step.message, True
    if isinstance(step, StreamCut):
        return "protocol", "the stream ended before the run finished", True
    if isinstance(step, MalformedJson):
        return "protocol", f"malformed JSON on the wire: {step.text[:60]!r}", False
    if isinstance(step, Garbage):
        return "protocol", f"unparseable bytes on the wire: {step.data[:60]!r}", False
    if isinstance(step, OutOfOrder):
        return "protocol", "events arrived out of order", False
    if isinstance(step, Exit):
        detail = f": {step.stderr.strip()}" if step.stderr.strip() else ""
        return "exited", f"the runtime exited with code {step.code} mid-turn{detail}", False
    if isinstance(step, SpawnFailure):
        return "spawn_failed", f"the runtime could not be started: {step.message}", False
    if isinstance(step, Stall) or not isinstance(step, FaultStep):
        return None  # a stall hangs the run; other steps are content
    assert_never(step)


class ScriptedProvider:
    """An agent provider that plays a script: deterministic, in-process, complete.

    ``clock`` and ``ids`` default to the ones in force (``stuntset.seams``), which the pytest
    plugin makes deterministic. Every step kind renders; faults become ``run.crashed``.
    """

    __test__ = False

    def __init__(
        self,
        script: Script | None = None,
        *,
        name: str = "scripted",
        model: str | None = "scripted-model",
        session_id: str | None = None,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
    ) -> None:
        self.script = AGENT_WIRE.check(script if script is not None else Script())
        self.player = ScriptPlayer(self.script)
        self._name = name
        self.model = model
        self.clock = clock if clock is not None else current_clock()
        self.ids = ids if ids is not None else current_ids()
        self._session_id = session_id if session_id is not None else self.ids.new("session")
        self.calls: list[Call] = []
        self.runs: list[ScriptedRun] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> Capabilities:
        return _CAPABILITIES

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def prompts(self) -> list[str]:
        """Every prompt the provider was started with, in order."""
        return [call.prompt for call in self.calls if isinstance(call, Started)]

    def start(self, prompt: str, *, resume: str | None = None) -> ScriptedRun:
        if resume is not None:
            self._session_id = resume
        request = TurnRequest(input_text=prompt, model=self.model, wire=AGENT_WIRE.name)
        played = self.player.next_turn(request)
        if played.index >= len(self.script.turns):
            AGENT_WIRE.check_turn(played.turn, index=played.index, source=self.script.source)
        run = self._make_run(self.ids.new("run"), played.turn)
        self.calls.append(Started(run_id=run.run_id, prompt=prompt, resume=resume))
        self.runs.append(run)
        return run

    def _make_run(self, run_id: str, turn: Turn) -> ScriptedRun:
        """The run object of a started turn (a subclass may play its runs differently)."""
        return ScriptedRun(self, run_id, turn)

    def assert_all_turns_used(self) -> None:
        """``UnusedTurns`` if scripted turns were never started."""
        __tracebackhide__ = True
        self.player.assert_all_used()

    async def aclose(self) -> None:
        for run in self.runs:
            run.kill("provider closed")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(script={self.script.label()!r}, session_id={self._session_id!r})"


class _Wait(NamedTuple):
    """The plan waits until ``ready()`` (or a kill)."""

    ready: Callable[[], bool]


class _Pause(NamedTuple):
    """The plan pauses ``seconds`` on the clock seam (or until a kill)."""

    seconds: float


class ScriptedRun:
    """One scripted run: an async iterator of its events that the caller steers.

    The turn is rendered by a synchronous plan; waiting (for an answer, a delay, a stall)
    happens in ``__anext__``, so a consumer that times out or is cancelled loses nothing:
    iterating again resumes the same wait. ``events`` holds everything delivered so far.
    """

    __test__ = False

    def __init__(self, provider: ScriptedProvider, run_id: str, turn: Turn) -> None:
        self._provider = provider
        self._run_id = run_id
        self._session_id = provider.session_id
        self.turn = turn
        self.events: list[Event] = []
        self._open_requests: dict[str, str] = {}
        self._answers: dict[str, str] = {}
        self._killed: str | None = None
        self._signal: anyio.Event | None = None
        self._plan: Iterator[Event | _Wait | _Pause] | None = None
        self._blocked: _Wait | None = None
        self._pause_until: float | None = None
        self.finished = False

    @property
    def run_id(self) -> str:
        return self._run_id

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def open_requests(self) -> dict[str, str]:
        """Requests waiting for ``respond()``: request id → ``"approval"`` or ``"input"``."""
        return dict(self._open_requests)

    def __aiter__(self) -> ScriptedRun:
        return self

    async def __anext__(self) -> Event:
        if self.finished:
            raise StopAsyncIteration
        if self._plan is None:
            self._plan = self._render()
        while True:
            await self._wait_out()
            if self._killed is not None:
                return self._deliver(self._event(RunKilled, reason=self._killed))
            item = next(self._plan, None)
            if item is None:  # pragma: no cover - every plan ends with a terminal event
                raise StopAsyncIteration
            if isinstance(item, _Wait):
                self._blocked = item
            elif isinstance(item, _Pause):
                self._pause_until = self._provider.clock.monotonic() + item.seconds
            else:
                await anyio.lowlevel.checkpoint()
                return self._deliver(item)

    async def aclose(self) -> None:
        """Stop the run for good: an unfinished run ends as killed."""
        self.kill("closed")

    async def interrupt(self, reason: str = "interrupted") -> None:
        self._provider.calls.append(Interrupted(run_id=self._run_id, reason=reason))
        self.kill(reason)

    def kill(self, reason: str) -> None:
        """End the run at its next event (at once if it is waiting)."""
        if self._killed is None and not self.finished:
            self._killed = reason
            self._wake()

    async def respond(self, request_id: str, decision: str) -> None:
        kind = self._open_requests.get(request_id)
        if kind is None:
            open_ = ", ".join(f"{r} ({k})" for r, k in self._open_requests.items()) or "none"
            raise UsageError(
                f"run {self._run_id!r} has no open request {request_id!r} (open: {open_}); "
                f"respond to the request_id of an approval.requested or input.requested event"
            )
        if kind == "approval" and decision not in ("allow", "deny"):
            raise UsageError(f"approval {request_id!r} takes 'allow' or 'deny', got {decision!r}")
        self._provider.calls.append(
            Responded(run_id=self._run_id, request_id=request_id, decision=decision)
        )
        del self._open_requests[request_id]
        self._answers[request_id] = decision
        self._wake()

    # --- waiting ------------------------------------------------------------------------------

    def _wake(self) -> None:
        if self._signal is not None:
            self._signal.set()

    async def _wait_out(self) -> None:
        """Finish the current wait or pause; cancellation leaves it in place to resume."""
        while self._blocked is not None and self._killed is None:
            if self._blocked.ready():
                self._blocked = None
                return
            self._signal = anyio.Event()
            await self._signal.wait()
        clock = self._provider.clock
        while self._pause_until is not None and self._killed is None:
            left = self._pause_until - clock.monotonic()
            if left <= 0:
                self._pause_until = None
                return
            async with anyio.create_task_group() as group:

                async def sleeper(seconds: float = left) -> None:
                    await clock.sleep(seconds)
                    group.cancel_scope.cancel()

                async def watcher() -> None:
                    self._signal = anyio.Event()
                    await self._signal.wait()
                    group.cancel_scope.cancel()

                group.start_soon(sleeper)
                group.start_soon(watcher)

    # --- rendering ----------------------------------------------------------------------------

    def _event(self, cls: type[Any], **fields: Any) -> Event:
        event: Event = cls(run_id=self._run_id, ts=self._provider.clock.now(), **fields)
        return event

    def _deliver(self, event: Event) -> Event:
        self.events.append(event)
        if event.terminal:
            self.finished = True
        return told(event)

    def _render(self) -> Iterator[Event | _Wait | _Pause]:
        """The turn as a plan: events to deliver and waits between them."""
        provider = self._provider
        ids = provider.ids
        yield self._event(
            RunStarted, session_id=self._session_id, provider=provider.name, model=provider.model
        )
        waiting: list[str] = []  # tool calls whose scripted result is still to come
        calls: dict[str, ToolCall] = {}
        done: set[str] = set()
        last_call: str | None = None
        for step in self.turn.steps:
            if isinstance(step, Text | Reasoning):
                is_text = isinstance(step, Text)
                item_id = ids.new("msg" if is_text else "reasoning")
                delta = MessageDelta if is_text else ReasoningDelta
                for index, piece in enumerate(step.deltas()):
                    if index and step.interval > 0:
                        yield _Pause(step.interval)
                    yield self._event(delta, item_id=item_id, text=piece)
                completed = MessageCompleted if is_text else ReasoningCompleted
                yield self._event(completed, item_id=item_id, text=step.text)
            elif isinstance(step, ToolCall):
                call_id = step.id or ids.new("tool")
                calls[call_id] = step
                waiting.append(call_id)
                last_call = call_id
                yield self._event(
                    ToolStarted, tool_call_id=call_id, name=step.name, input=step.input
                )
            elif isinstance(step, ToolResult):
                call_id = step.tool_call_id or waiting[0]
                if call_id in waiting:
                    waiting.remove(call_id)
                if call_id not in done:
                    done.add(call_id)
                    yield self._event(
                        ToolCompleted,
                        tool_call_id=call_id,
                        output=step.output,
                        is_error=step.is_error,
                    )
            elif isinstance(step, ApprovalRequest):
                target = step.tool_call_id or last_call
                call = calls.get(target) if target else None
                request_id = ids.new("approval")
                self._open_requests[request_id] = "approval"
                yield self._event(
                    ApprovalRequested,
                    request_id=request_id,
                    tool_call_id=target,
                    tool=step.tool or (call.name if call else "unknown"),
                    input=step.input if step.input is not None else (call.input if call else {}),
                )
                yield _Wait(lambda r=request_id: r in self._answers)  # type: ignore[misc]
                decision = self._answers[request_id]
                yield self._event(ApprovalResolved, request_id=request_id, decision=decision)
                if decision == "deny" and target in calls and target not in done:
                    done.add(target)
                    yield self._event(
                        ToolCompleted,
                        tool_call_id=target,
                        output="permission denied by the user",
                        is_error=True,
                    )
            elif isinstance(step, InputRequest):
                request_id = ids.new("input")
                self._open_requests[request_id] = "input"
                yield self._event(InputRequested, request_id=request_id, prompt=step.prompt)
                yield _Wait(lambda r=request_id: r in self._answers)  # type: ignore[misc]
                yield self._event(
                    InputResolved, request_id=request_id, text=self._answers[request_id]
                )
            elif isinstance(step, Usage):
                yield self._event(
                    UsageEvent,
                    input_tokens=step.input_tokens,
                    output_tokens=step.output_tokens,
                    cost=step.cost,
                )
            elif isinstance(step, Delay):
                yield _Pause(step.seconds)
            elif isinstance(step, Stall):
                yield _Wait(lambda: False)
            elif isinstance(step, FaultStep):
                crash = crash_for(step)
                assert crash is not None, step
                kind, message, retryable = crash
                yield self._event(RunCrashed, kind=kind, message=message, retryable=retryable)
                return
            else:
                assert_never(step)
        yield self._event(RunCompleted, stop_reason="end_turn")
