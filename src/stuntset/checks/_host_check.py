"""The part of ``check_event_log`` that plays a session host over the log under test.

A log is only as good as what the host on it can rely on across a stop and a restart:
``SessionService`` (the reference host) runs turns on the log, shuts down with a turn still
running, and a second host starts on the same log and store after a crash left two runs
marked running (one without its terminal event, one whose terminal event was stored just
before the crash). Two rules:

- ``shutdown-terminates-runs``: once the host has stopped, every run it was running has its
  terminal event (``run.killed``, giving the host's stop reason);
- ``one-terminal-per-run``: after the restart, every run in the log has exactly one terminal
  event, the last of the run — none missing, none doubled by the recovery.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio

from stuntset.events import Event, MessageDelta, RunCompleted, RunStarted, is_terminal
from stuntset.log.base import EventLog

if TYPE_CHECKING:
    from stuntset.checks._log_harness import LogHarness

__all__ = ["play_host"]

STOP_REASON = "shutdown: check_event_log stopped the host"


def _terminals(events: Sequence[Event], run_id: str) -> list[Event]:
    return [e for e in events if e.run_id == run_id and is_terminal(e)]


async def _wait_for(log: EventLog, session_id: str, kind: str, timeout: float) -> None:
    subscription = log.subscribe(session_id)
    try:
        with anyio.fail_after(timeout):
            async for event in subscription:
                if event.type == kind:
                    return
    finally:
        await subscription.aclose()


def play_host(h: LogHarness) -> None:
    """Stop a host with a run going, restart one after a crash; check the two rules."""
    # imported here: the session host (and its providers) only when this part runs
    from stuntset.runtime.models import RunRecord
    from stuntset.runtime.service import SessionService
    from stuntset.runtime.store import SessionStore
    from stuntset.runtime.testing import scenario_registry
    from stuntset.seams import deterministic

    providers = {k: v for k, v in scenario_registry(repeat=2).items() if k in ("stuck", "tool_use")}
    store = SessionStore(":memory:")
    h.on_close(store.close)
    log = h.log

    async def first_host() -> tuple[str, str, str]:
        service = SessionService(log=log, store=store, providers=providers)
        service.stop_reason = STOP_REASON
        stuck = done = ""
        running = None
        try:
            async with service:
                task = service.create_task("/stuntset-check")
                stuck = service.create_session(task.task_id, "stuck").session_id
                done = service.create_session(task.task_id, "tool_use").session_id
                h.step(f"host 1: turns in {stuck!r} (stuck) and {done!r} (tool_use)")
                running = await service.start_turn(stuck, "hang")
                await _wait_for(log, stuck, "run.started", h.timeout)
                await service.start_turn(done, "read a.txt")
                await service.wait_idle(done)
                h.step("host 1 stops with a turn running")
        except Exception as error:  # the log refused what the host wrote on its way out
            h.step(f"host 1 stopped with {type(error).__name__}: {error}")
        if running is None:
            h.fail("shutdown-terminates-runs", "the host could not start a run on this log")
        return stuck, done, running.run_id

    with deterministic():
        stuck, done, running = h.portal.call(first_host)
    events = log.read(stuck)
    ended = _terminals(events, running)
    if len(ended) != 1 or ended[-1] is not events[-1] or ended[0].type != "run.killed":
        h.fail(
            "shutdown-terminates-runs",
            f"run {running!r} was running when the host stopped; its terminal events are "
            f"{[e.type for e in ended]} (expected one run.killed, last)",
        )

    # a host died: one run left without a terminal event, one whose terminal event was stored
    # just before the crash (the store still says running)
    h.step("a host dies with runs 'lost-1' and 'ended-1' marked running")
    for run_id, history in (
        ("lost-1", [MessageDelta(run_id="lost-1", ts=1.0, item_id="m", text="x")]),
        (
            "ended-1",
            [MessageDelta(run_id="ended-1", ts=1.0, item_id="m", text=f"{i} ") for i in range(150)]
            + [RunCompleted(run_id="ended-1", ts=2.0)],
        ),
    ):
        started = RunStarted(run_id=run_id, ts=1.0, session_id=done, provider="tool_use")
        log.append(done, [started, *history])
        store.put(
            RunRecord(run_id=run_id, session_id=done, prompt="p", status="running", started_at=1.0)
        )

    async def second_host() -> None:
        try:
            async with SessionService(log=log, store=store, providers=providers) as service:
                h.step("host 2 starts on the same log and store, runs a turn")
                await service.start_turn(done, "again")
                await service.wait_idle(done)
        except Exception as error:
            h.step(f"host 2 stopped with {type(error).__name__}: {error}")

    with deterministic():
        h.portal.call(second_host)
    for session_id in (stuck, done):
        events = log.read(session_id)
        for run_id in dict.fromkeys(e.run_id for e in events):
            ended = _terminals(events, run_id)
            mine = [e for e in events if e.run_id == run_id]
            if len(ended) != 1 or ended[0] is not mine[-1]:
                h.fail(
                    "one-terminal-per-run",
                    f"session {session_id!r} run {run_id!r} has terminal events "
                    f"{[(e.type, e.seq) for e in ended]} after a restart (expected exactly one, "
                    "the run's last event)",
                )
