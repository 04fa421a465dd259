"""``check_event_log(make_log)``: the invariant suite for any ``EventLog`` implementation.

Call it from one test with a factory of fresh, empty logs::

    def test_my_log_keeps_the_invariants(tmp_path):
        counter = itertools.count()
        check_event_log(lambda: MyLog(tmp_path / f"{next(counter)}.db"))

It first plays a fixed scenario (realistic turns from the scripted provider: replay, live
wake-up, disconnect and resume while appends continue, a second session, concurrent
writers, a rollback under live subscribers and under one that is away and resumes with its
``(epoch, seq)``, a batch refused for an invalid event), then the reference session host
over the log (stopped with a run going, restarted after a crash: see ``_host_check``), then
a hypothesis state machine that interleaves the log operations at random. Any broken rule raises ``InvariantViolation``
whose ``invariant`` is one of ``INVARIANTS`` and whose message shows the last steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from stuntset.checks._host_check import play_host
from stuntset.checks._log_harness import INVARIANTS, LogHarness
from stuntset.events import Event
from stuntset.log.base import EventLog

if TYPE_CHECKING:
    import hypothesis

    from stuntset.checks._log_machine import DEFAULT_SETTINGS

__all__ = ["DEFAULT_SETTINGS", "INVARIANTS", "check_event_log"]


def __getattr__(name: str) -> object:
    # ``DEFAULT_SETTINGS`` is a hypothesis object: built when asked for, so that importing
    # ``stuntset.checks`` (the conformance fixture, the matrix) does not import hypothesis
    if name == "DEFAULT_SETTINGS":
        from stuntset.checks._log_machine import DEFAULT_SETTINGS

        return DEFAULT_SETTINGS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_event_log(
    make_log: Callable[[], EventLog],
    *,
    concurrent_writers: bool = True,
    rollback: bool = True,
    stateful: bool = True,
    scenario: bool = True,
    settings: hypothesis.settings | None = None,
    timeout: float = 5.0,
    backend: str = "asyncio",
    host: bool = True,
) -> None:
    """Check the ``EventLog`` that ``make_log()`` returns (a fresh, empty one per call).

    ``concurrent_writers=False`` / ``rollback=False`` skip what an implementation does not
    support. ``timeout`` (seconds) is how long a subscriber may take to receive an event
    that is stored before that counts as lost. ``backend`` is the async library the
    subscriptions run on (``"asyncio"`` or ``"trio"``). ``host=False`` skips playing the
    reference session host over the log (a stop with a run going, a restart after a crash).
    Raises ``InvariantViolation``.
    """
    __tracebackhide__ = True
    if scenario:
        _scenario(
            make_log,
            concurrent_writers=concurrent_writers,
            rollback=rollback,
            timeout=timeout,
            backend=backend,
        )
    if host:
        _host(make_log, timeout=timeout, backend=backend)
    if stateful:
        from stuntset.checks._log_machine import run_machine

        run_machine(
            make_log,
            settings=settings,
            concurrent_writers=concurrent_writers,
            rollback=rollback,
            timeout=timeout,
            backend=backend,
        )


def _turn(name: str, harness: LogHarness) -> list[Event]:
    from stuntset import scenarios
    from stuntset.driver import drive
    from stuntset.providers import ScriptedProvider
    from stuntset.seams import deterministic

    async def play() -> list[Event]:
        with deterministic():
            return await drive(ScriptedProvider(scenarios.build(name)).start("hi"))

    return harness.portal.call(play)


def _scenario(
    make_log: Callable[[], EventLog],
    *,
    concurrent_writers: bool,
    rollback: bool,
    timeout: float,
    backend: str,
) -> None:
    h = LogHarness(make_log, timeout=timeout, backend=backend)
    try:
        tool_turn = _turn("tool_use", h)
        approval_turn = _turn("needs_approval", h)
        live = h.subscribe("s1", after=0)  # subscribed to an empty session
        h.append("s1", tool_turn[:5])
        h.pull(live)  # replay
        h.pull_live(live, tool_turn[5:9])  # woken by a commit
        resumer = h.subscribe("s1", after=3)
        h.pull(resumer, 2)
        h.disconnect(resumer)
        h.append("s1", tool_turn[9:])  # lands while the resumer is away
        h.pull(resumer)  # resumes from its last seq
        h.append("s2", approval_turn)
        if concurrent_writers:
            h.append_concurrently("s1", [approval_turn[:3], approval_turn[3:6], approval_turn[6:]])
        h.pull(live)
        h.pull(resumer)
        h.check()
        h.append_rejected("s2", tool_turn[:3], 1)  # a bad event mid-batch: refused whole
        h.append_rejected("s1", [], 0)
        h.pull_live(live, tool_turn[:1])  # and the live subscriber got nothing of it
        if rollback:
            head = len(h.model["s1"])
            late = h.subscribe("s1", after=head - 2)
            h.pull(late)
            away = h.subscribe("s1", after=head - 3, with_epoch=True)
            h.pull(away)
            h.disconnect(away)
            h.rollback("s1", head - 4)  # passes every subscriber's cursor
            h.append("s1", approval_turn[:4])  # the same seqs again, other events
            h.pull(late)  # must be told: StaleCursor
            h.pull(away)  # resumes with (epoch, seq): StaleCursor(resume_at=head - 4), rebuilds
            fresh = h.subscribe("s1", after=0)
            h.pull(fresh)
            h.pull(live)  # StaleCursor too
            h.pull_live(fresh, tool_turn[:2])
        h.check()
    finally:
        h.close()


def _host(make_log: Callable[[], EventLog], *, timeout: float, backend: str) -> None:
    h = LogHarness(make_log, timeout=timeout, backend=backend)
    try:
        play_host(h)
    finally:
        h.close()
