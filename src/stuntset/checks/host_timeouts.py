"""``check_host_timeouts(make_host, timeout=)``: a session host's timeouts hold against stuck providers.

A host (``SessionService``, or yours with its API: ``async with``, ``create_task``,
``create_session``, ``start_turn``, ``wait_idle``, ``log``) is given, one at a time, a
provider whose runs never end by themselves (``StuckProvider``) in each ``cancel`` mode:
its ``interrupt()`` ends the run, is ignored, or blocks. ``make_host(providers)`` builds the
host over the registry ``{"stuck": factory}`` with its turn timeout set; ``timeout`` is the
longest a turn may then take on it (its turn timeout plus the grace it gives a cancel). Two
rules, each a ``ConformanceFailure``:

- ``timeout-ends-run``: the stuck run has exactly one terminal event in the host's log,
  ``run.killed`` or ``run.crashed``, within ``timeout`` of the turn's start;
- ``host-stops``: the host's ``async with`` then finishes within ``timeout``.

A host that hangs is not waited for forever: after the bound, the check closes the stuck
providers (which releases every blocked ``interrupt()`` and ends their runs) and cancels it.
``modes`` picks some of the three cancel modes (all by default), in that order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import anyio

from stuntset.errors import ConformanceFailure, UsageError
from stuntset.events import Event, is_terminal
from stuntset.providers.base import AgentProvider
from stuntset.providers.stuck import CancelMode, StuckProvider

__all__ = ["HOST_TIMEOUT_INVARIANTS", "acheck_host_timeouts", "check_host_timeouts"]

#: The rules ``check_host_timeouts`` checks, each explained.
HOST_TIMEOUT_INVARIANTS: dict[str, str] = {
    "timeout-ends-run": (
        "a run whose provider never ends it (interrupt() works, is ignored, or blocks) has "
        "exactly one terminal event, run.killed or run.crashed, within the host's timeout"
    ),
    "host-stops": "the host then stops (leaves its async with) within the timeout",
}

_MODES: tuple[CancelMode, ...] = ("ends", "ignored", "blocks")
_ENDINGS = ("run.killed", "run.crashed")

#: Builds a host over a provider registry (name → factory), its turn timeout set.
HostFactory = Callable[[Mapping[str, Callable[[], AgentProvider]]], Any]


def _cause(error: BaseException) -> BaseException:
    """The one error inside a task group's wrapping, for the message."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def _describe(mode: CancelMode) -> str:
    return {
        "ends": "whose interrupt() ends the run",
        "ignored": "that ignores interrupt()",
        "blocks": "whose interrupt() blocks",
    }[mode]


async def _check_mode(make_host: HostFactory, mode: CancelMode, timeout: float) -> None:
    made: list[StuckProvider] = []

    def factory() -> AgentProvider:
        provider = StuckProvider(cancel=mode)
        made.append(provider)
        return provider

    host = make_host({"stuck": factory})
    where = f"StuckProvider(cancel={mode!r}), a provider {_describe(mode)}"
    started = anyio.Event()
    stopped = anyio.Event()
    ids: dict[str, str] = {}
    failures: list[BaseException] = []

    async def drive() -> None:
        try:
            async with host:
                task = host.create_task("/stuntset-check")
                session = host.create_session(task.task_id, "stuck")
                run = await host.start_turn(session.session_id, "hang")
                ids.update(session=session.session_id, run=run.run_id)
                started.set()
                await host.wait_idle(session.session_id)
        except Exception as error:  # reported below, with what the log holds
            failures.append(error)
        finally:
            started.set()
            stopped.set()

    def fail(invariant: str, message: str) -> ConformanceFailure:
        return ConformanceFailure(
            f"check_host_timeouts [{invariant}] with {where}: {message}",
            invariant=invariant,
            scenario=f"stuck(cancel={mode!r})",
            provider="stuck",
        )

    def seen() -> list[Event]:
        if "session" not in ids:
            return []
        return [e for e in host.log.read(ids["session"]) if e.run_id == ids["run"]]

    def blocked() -> str:
        waiting = sum(p.blocked_interrupts for p in made)
        return f"; {waiting} interrupt() call(s) still blocked in the provider" if waiting else ""

    problem: ConformanceFailure | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(drive)
        await started.wait()
        ended: Event | None = None
        if "run" in ids:
            subscription = host.log.subscribe(ids["session"])
            try:
                with anyio.move_on_after(timeout):
                    async for event in subscription:
                        if event.run_id == ids["run"] and is_terminal(event):
                            ended = event
                            break
            finally:
                await subscription.aclose()
        if "run" not in ids:
            problem = fail(
                "timeout-ends-run",
                "the host could not start the turn: "
                + (repr(_cause(failures[0])) if failures else "it returned no run"),
            )
        elif ended is None:
            types = [e.type for e in seen()]
            problem = fail(
                "timeout-ends-run",
                f"run {ids['run']!r} had no terminal event within {timeout} s of its start "
                f"(its events: {types}){blocked()}",
            )
        elif ended.type not in _ENDINGS:
            problem = fail(
                "timeout-ends-run",
                f"run {ids['run']!r} ended with {ended.type} (expected one of "
                f"{', '.join(_ENDINGS)}): {ended!r}",
            )
        if problem is None:
            with anyio.move_on_after(timeout):
                await stopped.wait()
            if not stopped.is_set():
                problem = fail(
                    "host-stops",
                    f"the run ended, but the host did not stop within {timeout} s{blocked()}",
                )
        if not stopped.is_set():  # release what the host waits on, then stop it
            for provider in made:
                await provider.aclose()
            with anyio.move_on_after(timeout):
                await stopped.wait()
            group.cancel_scope.cancel()
    if problem is not None:
        raise problem
    if failures and "run" in ids:
        raise fail("host-stops", f"the host stopped with {_cause(failures[0])!r}")
    terminals = [e.type for e in seen() if is_terminal(e)]
    if len(terminals) != 1:
        raise fail(
            "timeout-ends-run",
            f"run {ids['run']!r} has terminal events {terminals} (expected exactly one)",
        )


def _modes(modes: Collection[CancelMode] | None) -> list[CancelMode]:
    if modes is None:
        return list(_MODES)
    unknown = sorted(set(modes) - set(_MODES))
    if unknown or not modes:
        raise UsageError(
            f"check_host_timeouts(modes=...): {unknown or 'none given'}; "
            f"the cancel modes are {', '.join(_MODES)}"
        )
    return [mode for mode in _MODES if mode in modes]


async def acheck_host_timeouts(
    make_host: HostFactory, *, timeout: float, modes: Collection[CancelMode] | None = None
) -> None:
    """``check_host_timeouts`` inside a running event loop."""
    for mode in _modes(modes):
        await _check_mode(make_host, mode, timeout)


def check_host_timeouts(
    make_host: HostFactory, *, timeout: float, modes: Collection[CancelMode] | None = None
) -> None:
    """Check the host ``make_host`` builds against a stuck provider in each cancel mode;
    ``ConformanceFailure`` names the rule broken, the mode and what the log holds."""

    async def main() -> None:
        await acheck_host_timeouts(make_host, timeout=timeout, modes=modes)

    anyio.run(main)
