"""The machinery under ``check_provider_conformance``: playing a run the way a careful
consumer does (answer requests, interrupt a stalled run, read on after the terminal event to
see the stream end), telling from a script when a run has stalled, and snapshotting what a
provider could leak (tasks, child processes, pipes and sockets)."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio

from stuntset._resources import ProcessInfo, child_processes, started_since
from stuntset.events import (
    ApprovalRequested,
    Event,
    InputRequested,
    MessageCompleted,
    MessageDelta,
    ReasoningCompleted,
    ReasoningDelta,
    RunStarted,
    ToolCompleted,
    ToolStarted,
)
from stuntset.providers.base import AgentRun, Capabilities
from stuntset.script import (
    ApprovalRequest,
    Delay,
    InputRequest,
    Reasoning,
    Script,
    Stall,
    Text,
    ToolCall,
    ToolResult,
)
from stuntset.script import Usage as UsageStep

__all__ = ["Decide", "Played", "Resources", "Stalled", "play", "stall_expectation"]


# --- resources ---------------------------------------------------------------------------------


def _open_channels() -> set[str]:
    """This process's open pipes and sockets, as "fd N -> target" — Linux only."""
    found: set[str] = set()
    fds = Path("/proc/self/fd")
    for entry in fds.iterdir() if fds.is_dir() else ():
        try:
            target = os.readlink(entry)
        except OSError:
            continue
        if target.startswith(("pipe:", "socket:")):
            found.add(f"fd {entry.name} -> {target}")
    return found


def _tasks(exclude: Collection[int]) -> set[str]:
    return {
        f"task {info.name!r}" + (f" ({info.coro!r})" if info.coro is not None else "")
        for info in anyio.get_running_tasks()
        if info.id not in exclude
    }


class Resources:
    """A snapshot of what a provider could leak, to compare after it is closed."""

    def __init__(self, checks: Collection[str], own_tasks: Collection[int]) -> None:
        self.checks = checks
        self.own_tasks = own_tasks
        #: This process's descendants at the first snapshot (zombies count: nobody reaped
        #: them); later snapshots list the ones started since, beside no others, so the
        #: difference of two snapshots holds what the provider started and left.
        self._processes: dict[int, ProcessInfo] | None = None

    def snapshot(self) -> set[str]:
        found: set[str] = set()
        if "tasks" in self.checks:
            found |= _tasks(self.own_tasks)
        if "processes" in self.checks and sys.platform.startswith("linux"):
            now = child_processes(zombies=True) or {}
            if self._processes is None:
                self._processes = now
            found |= {p.describe() for p in started_since(self._processes, now)}
        if "fds" in self.checks and sys.platform.startswith("linux"):
            found |= _open_channels()
        return found


# --- when a run has stalled ------------------------------------------------------------------

#: Whether the events seen so far are everything a run emits before it stalls.
Stalled = Callable[[Sequence[Event]], bool]


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _texts(events: Sequence[Event], delta: type[Event], completed: type[Event]) -> str:
    """The text of ``delta``/``completed`` events, whitespace removed: adapters chunk, join
    and trim differently, the words arrive all the same."""
    streamed = "".join(getattr(e, "text", "") for e in events if isinstance(e, delta))
    whole = "\x00".join(getattr(e, "text", "") for e in events if isinstance(e, completed))
    return _squeezed(streamed) + "\x00" + _squeezed(whole)


def stall_expectation(script: Script, capabilities: Capabilities) -> Stalled | None:
    """From ``script``, a test telling that a run has emitted everything it will before its
    first turn's ``Stall``; ``None`` when that cannot be predicted.

    Counted by kind, never by exact events (adapters chunk and name things differently):
    ``run.started``; every pre-stall ``Text`` (``Reasoning``, when the provider declares
    reasoning) arrived as message (reasoning) text, streamed or completed; one
    ``tool.started`` per ``ToolCall``, one ``tool.completed`` per ``ToolResult``, one
    request per ``ApprovalRequest``/``InputRequest`` the provider declares. ``Usage`` and
    ``Delay`` steps add nothing (usage is reported only when known). Unpredictable: a script
    played by a function, a first turn that is matched or repeated (which request it answers
    is the runtime's business), a stall in a later turn (how many requests a run makes
    before it is the adapter's business), any other step before the stall.
    """
    if script.function is not None or not script.turns:
        return None
    turn = script.turns[0]
    if turn.match is not None or turn.predicate is not None or turn.times != 1:
        return None
    stalls = [i for i, step in enumerate(turn.steps) if isinstance(step, Stall)]
    if not stalls:
        return None
    texts: list[str] = []
    reasonings: list[str] = []
    need = {ToolStarted: 0, ToolCompleted: 0, ApprovalRequested: 0, InputRequested: 0}
    for step in turn.steps[: stalls[0]]:
        if isinstance(step, Text):
            texts.append(_squeezed(step.text))
        elif isinstance(step, Reasoning):
            if capabilities.reasoning:
                reasonings.append(_squeezed(step.text))
        elif isinstance(step, ToolCall):
            need[ToolStarted] += 1
        elif isinstance(step, ToolResult):
            need[ToolCompleted] += 1
        elif isinstance(step, ApprovalRequest):
            need[ApprovalRequested] += int(capabilities.approvals)
        elif isinstance(step, InputRequest):
            need[InputRequested] += int(capabilities.input_requests)
        elif not isinstance(step, (UsageStep, Delay)):  # pragma: no cover - a new step kind
            return None

    def stalled(events: Sequence[Event]) -> bool:
        if not any(isinstance(e, RunStarted) for e in events):
            return False
        for kind, count in need.items():
            if sum(isinstance(e, kind) for e in events) < count:
                return False
        said = _texts(events, MessageDelta, MessageCompleted)
        thought = _texts(events, ReasoningDelta, ReasoningCompleted)
        return all(t in said for t in texts) and all(t in thought for t in reasonings)

    return stalled


# --- playing a run -----------------------------------------------------------------------------


@dataclass
class Played:
    events: list[Event] = field(default_factory=list)
    interrupted_after: int | None = None  # number of events seen when interrupt() was called
    ended: bool = False  # iteration ended (StopAsyncIteration)
    timed_out: bool = False
    error: BaseException | None = None
    #: Why interrupt() was called on a stalled run: its script's events had all arrived
    #: ("events"), or none came for ``stall_after`` s ("quiet").
    stalled_by: Literal["events", "quiet"] | None = None

    @property
    def terminals(self) -> list[Event]:
        return [e for e in self.events if e.terminal]

    @property
    def terminal(self) -> Event | None:
        found = self.terminals
        return found[0] if found else None


Decide = Callable[[Event], str]


async def play(
    run: AgentRun,
    *,
    timeout: float,
    stall_after: float,
    approve: Decide | None = None,
    answer: Decide | None = None,
    interrupt_after: int | None = None,
    stop_after: int | None = None,
    interrupt_when_quiet: bool = True,
    stalled: Stalled | None = None,
    closer: Callable[[], Awaitable[None]] | None = None,
) -> Played:
    """Iterate ``run`` in a task: answer requests, interrupt it once it has stalled (or
    after ``interrupt_after`` events), keep reading after the terminal event to see the
    stream end, and give up ``timeout`` s after the start.

    With ``interrupt_when_quiet``, a run has stalled as soon as ``stalled(events)`` holds
    (everything its script emits before the stall has arrived: no waiting) or, failing that,
    once no event came for ``stall_after`` s of real time after the first — the upper bound,
    for runs whose events cannot be predicted (``stalled`` is ``None``) or that fall short of
    them. A run that sends no event at all ends at ``timeout``."""
    played = Played()
    progress = anyio.Event()
    interrupting = False

    async def interrupt(why: Literal["events", "quiet"] | None = None) -> None:
        nonlocal interrupting
        if interrupting:
            return
        interrupting = True
        played.stalled_by = why
        played.interrupted_after = len(played.events)
        if closer is not None:
            await closer()
        else:
            await run.interrupt("stuntset conformance: interrupt")

    async def consume() -> None:
        nonlocal progress
        iterator = aiter(run)
        try:
            while True:
                try:
                    event = await anext(iterator)
                except StopAsyncIteration:
                    played.ended = True
                    return
                played.events.append(event)
                progress.set()
                if isinstance(event, ApprovalRequested) and approve is not None:
                    await run.respond(event.request_id, approve(event))
                elif isinstance(event, InputRequested) and answer is not None:
                    await run.respond(event.request_id, answer(event))
                if stop_after is not None and len(played.events) >= stop_after:
                    return
                if interrupt_after is not None and len(played.events) == interrupt_after:
                    await interrupt()
                elif (
                    interrupt_when_quiet
                    and stalled is not None
                    and not interrupting
                    and not event.terminal
                    and stalled(played.events)
                ):
                    await interrupt("events")
        except Exception as error:  # reported as the invariant that was being checked
            played.error = error
        finally:
            progress.set()

    with anyio.move_on_after(timeout) as deadline:
        async with anyio.create_task_group() as group:
            group.start_soon(consume)
            done = False
            while not done:
                seen = len(played.events)
                with anyio.move_on_after(stall_after):
                    await progress.wait()
                progress = anyio.Event()
                done = played.ended or played.error is not None
                if stop_after is not None and len(played.events) >= stop_after:
                    done = True
                # quiet: a run that has begun (an event came) and then stopped; before its
                # first event it is starting up, however long that takes on a loaded machine
                # (a fake CLI measuring its coverage: seconds), which ``timeout`` bounds
                quiet = 0 < seen == len(played.events) and not played.terminals
                if not done and quiet and interrupt_when_quiet:
                    await interrupt("quiet")
            group.cancel_scope.cancel()
    played.timed_out = deadline.cancelled_caught
    return played
