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

import hypothesis
from hypothesis import HealthCheck
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from stuntset.checks._host_check import play_host
from stuntset.checks._log_harness import INVARIANTS, LogHarness
from stuntset.events import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    MessageCompleted,
    MessageDelta,
    RunCompleted,
    RunStarted,
    ToolCompleted,
    ToolStarted,
    Usage,
)
from stuntset.log.base import EventLog

__all__ = ["DEFAULT_SETTINGS", "INVARIANTS", "check_event_log"]

#: What the stateful part runs with unless ``settings=`` says otherwise: few examples,
#: derandomized (the same interleavings every run), no example database on disk.
DEFAULT_SETTINGS = hypothesis.settings(
    max_examples=12,
    stateful_step_count=15,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


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
        machine = _machine(
            make_log,
            concurrent_writers=concurrent_writers,
            rollback=rollback,
            timeout=timeout,
            backend=backend,
        )
        run_state_machine_as_test(machine, settings=settings or DEFAULT_SETTINGS)


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


def _event_pool() -> list[Event]:
    """A small vocabulary of events that exercises every projection (cheap to draw)."""
    pool: list[Event] = []
    for run in ("run-1", "run-2"):
        pool += [
            RunStarted(run_id=run, ts=1.0, session_id="s", provider="p"),
            RunCompleted(run_id=run, ts=2.0),
            Usage(run_id=run, ts=1.0, input_tokens=3, output_tokens=5, cost=0.25),
        ]
        for x in ("x1", "x2"):
            pool += [
                MessageDelta(run_id=run, ts=1.0, item_id=x, text=" a"),
                MessageDelta(run_id=run, ts=1.5, item_id=x, text="b "),
                MessageCompleted(run_id=run, ts=1.0, item_id=x, text=" a b "),
                ToolStarted(run_id=run, ts=1.0, tool_call_id=x, name="read", input={"p": x}),
                ToolCompleted(run_id=run, ts=1.0, tool_call_id=x, output=" ok "),
                ApprovalRequested(run_id=run, ts=1.0, request_id=x, tool="sh"),
                ApprovalResolved(run_id=run, ts=1.0, request_id=x, decision="allow"),
            ]
    return pool


_event = st.sampled_from(_event_pool())
_batch = st.lists(_event, min_size=1, max_size=4)
_sessions = st.sampled_from(["s1", "s2"])


def _machine(
    make_log: Callable[[], EventLog],
    *,
    concurrent_writers: bool,
    rollback: bool,
    timeout: float,
    backend: str,
) -> type[RuleBasedStateMachine]:
    class EventLogMachine(RuleBasedStateMachine):
        """Random interleavings of the harness operations against one fresh log."""

        def __init__(self) -> None:
            super().__init__()
            self.h = LogHarness(make_log, timeout=timeout, backend=backend)
            self.subscribed = 0

        def head(self, session_id: str) -> int:
            return len(self.h.model.get(session_id, []))

        @rule(session=_sessions, events=_batch)
        def append(self, session: str, events: list[Event]) -> None:
            self.h.append(session, events)

        @rule(data=st.data(), session=_sessions)
        def subscribe(self, data: st.DataObject, session: str) -> None:
            after = data.draw(st.integers(0, self.head(session)), label="after")
            self.subscribed += 1  # every other one passes the epoch (no draw: same search)
            self.h.subscribe(session, after, with_epoch=self.subscribed % 2 == 0)

        @precondition(lambda self: self.h.subscribers)
        @rule(data=st.data(), count=st.none() | st.integers(1, 3))
        def pull(self, data: st.DataObject, count: int | None) -> None:
            self.h.pull(data.draw(st.sampled_from(self.h.subscribers), label="subscriber"), count)

        @precondition(lambda self: self.h.subscribers)
        @rule(data=st.data(), events=_batch)
        def pull_live(self, data: st.DataObject, events: list[Event]) -> None:
            sub = data.draw(st.sampled_from(self.h.subscribers), label="subscriber")
            self.h.pull_live(sub, events)

        @precondition(lambda self: any(s.subscription for s in self.h.subscribers))
        @rule(data=st.data())
        def disconnect(self, data: st.DataObject) -> None:
            connected = [s for s in self.h.subscribers if s.subscription is not None]
            self.h.disconnect(data.draw(st.sampled_from(connected), label="subscriber"))

        @precondition(lambda self: rollback and any(self.h.model.values()))
        @rule(data=st.data())
        def rollback(self, data: st.DataObject) -> None:
            session = data.draw(st.sampled_from([s for s, m in self.h.model.items() if m]))
            to_seq = data.draw(st.integers(0, self.head(session)), label="to_seq")
            self.h.rollback(session, to_seq)

        @precondition(lambda self: rollback and any(s.cursor for s in self.h.subscribers))
        @rule(data=st.data(), away=st.booleans(), events=st.none() | _batch)
        def rollback_below_a_subscriber(
            self, data: st.DataObject, away: bool, events: list[Event] | None
        ) -> None:
            """The risky interleaving, drawn on purpose: a rollback passes a subscriber's
            cursor (while it is connected or away), then perhaps new events take its seqs."""
            sub = data.draw(st.sampled_from([s for s in self.h.subscribers if s.cursor]))
            if away:
                self.h.disconnect(sub)
            head = self.head(sub.session_id)
            to_seq = data.draw(st.integers(0, min(sub.cursor - 1, head)), label="to_seq")
            self.h.rollback(sub.session_id, to_seq)
            if events is not None:
                self.h.append(sub.session_id, events)

        @precondition(lambda self: concurrent_writers)
        @rule(session=_sessions, batches=st.lists(_batch, min_size=2, max_size=3))
        def append_concurrently(self, session: str, batches: list[list[Event]]) -> None:
            self.h.append_concurrently(session, batches)

        @invariant()
        def log_matches_model(self) -> None:
            self.h.check()

        def teardown(self) -> None:
            self.h.close()

    return EventLogMachine
