"""The machinery under ``check_provider_conformance``: playing a run the way a careful
consumer does (answer requests, interrupt a stalled run, read on after the terminal event to
see the stream end) and snapshotting what a provider could leak (tasks, child processes,
pipes and sockets)."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from stuntset.events import ApprovalRequested, Event, InputRequested
from stuntset.providers.base import AgentRun

__all__ = ["Decide", "Played", "Resources", "play"]


# --- resources ---------------------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found: list[int] = []
    tasks = Path(f"/proc/{pid}/task")
    try:
        threads = list(tasks.iterdir())
    except OSError:
        return found
    for thread in threads:
        try:
            found += [int(child) for child in (thread / "children").read_text().split()]
        except OSError:
            continue
    return found


def _descendants(root: int) -> set[str]:
    """Child processes (transitively) of ``root``, as "process PID (name, state)" — Linux
    only (``/proc/PID/task/TID/children``; zombies count: nobody reaped them)."""
    found: set[str] = set()
    todo = [root]
    while todo:
        for pid in _children(todo.pop()):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                label = f"{stat[stat.find('(') + 1 : stat.rfind(')')]}, {stat[stat.rfind(')') + 2]}"
            except OSError:
                label = "gone"
            found.add(f"process {pid} ({label})")
            todo.append(pid)
    return found


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

    def snapshot(self) -> set[str]:
        found: set[str] = set()
        if "tasks" in self.checks:
            found |= _tasks(self.own_tasks)
        if "processes" in self.checks and sys.platform.startswith("linux"):
            found |= _descendants(os.getpid())
        if "fds" in self.checks and sys.platform.startswith("linux"):
            found |= _open_channels()
        return found


# --- playing a run -----------------------------------------------------------------------------


@dataclass
class Played:
    events: list[Event] = field(default_factory=list)
    interrupted_after: int | None = None  # number of events seen when interrupt() was called
    ended: bool = False  # iteration ended (StopAsyncIteration)
    timed_out: bool = False
    error: BaseException | None = None

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
    closer: Callable[[], Awaitable[None]] | None = None,
) -> Played:
    """Iterate ``run`` in a task: answer requests, interrupt it once it goes quiet for
    ``stall_after`` s (or after ``interrupt_after`` events), keep reading after the terminal
    event to see the stream end, and give up ``timeout`` s after the start."""
    played = Played()
    progress = anyio.Event()
    interrupting = False

    async def interrupt() -> None:
        nonlocal interrupting
        if interrupting:
            return
        interrupting = True
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
                quiet = len(played.events) == seen and not played.terminals
                if not done and quiet and interrupt_when_quiet:
                    await interrupt()
            group.cancel_scope.cancel()
    played.timed_out = deadline.cancelled_caught
    return played
