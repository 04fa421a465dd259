"""The stateful half of ``check_event_log``: a hypothesis state machine that interleaves the
harness operations at random. Its own module so that hypothesis is imported only when the
state machine runs (``stateful=True``), not with ``stuntset.checks``."""

from __future__ import annotations

from collections.abc import Callable

from stuntset.errors import MissingExtra

try:
    import hypothesis
except ImportError as missing:  # hypothesis is the `hypothesis` extra, not a base dependency
    raise MissingExtra(
        "check_event_log's state machine needs hypothesis, which is not installed: "
        "pip install 'stuntset[hypothesis]' (or pass stateful=False to check only the fixed "
        "scenario)"
    ) from missing
from hypothesis import HealthCheck
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from stuntset.checks._log_harness import LogHarness
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

__all__ = ["DEFAULT_SETTINGS", "run_machine"]

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


def run_machine(
    make_log: Callable[[], EventLog],
    *,
    settings: hypothesis.settings | None,
    concurrent_writers: bool,
    rollback: bool,
    timeout: float,
    backend: str,
) -> None:
    """Run the state machine over fresh logs from ``make_log``."""
    __tracebackhide__ = True
    machine = _machine(
        make_log,
        concurrent_writers=concurrent_writers,
        rollback=rollback,
        timeout=timeout,
        backend=backend,
    )
    run_state_machine_as_test(machine, settings=settings or DEFAULT_SETTINGS)


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
