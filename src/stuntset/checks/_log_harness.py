"""The operations the event-log invariant suite performs, each checked against a model.

``LogHarness`` drives one ``EventLog`` (appends, subscriptions pulled through an async portal,
disconnects, resumes, rollbacks, concurrent writers) and keeps a plain-list model of what
every session must contain. Every operation checks its own invariants; ``check()`` checks
the whole log. A broken rule raises ``InvariantViolation`` naming the invariant and showing
the last steps. Both the fixed scenario and the hypothesis state machine use this.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from typing import Any, NoReturn

import anyio
import msgspec
from anyio.from_thread import BlockingPortal, start_blocking_portal

from stuntset.errors import InvalidEvent, InvariantViolation, StaleCursor
from stuntset.events import Event, MessageDelta, RunCrashed, to_builtins
from stuntset.log.base import EventLog, Subscription
from stuntset.log.projections import Projector, diff_views, project

__all__ = ["INVARIANTS", "LogHarness", "Subscriber"]

#: Every invariant the suite checks, by the name an ``InvariantViolation`` carries.
INVARIANTS = {
    "seq-gapless": "per session, seq runs 1, 2, 3… without gap, as appended and as read",
    "replay-matches-appends": "reading a session gives back exactly what was appended",
    "atomic-batches": "a batch is stored whole and contiguous, also with concurrent writers",
    "subscription-gapless": (
        "a subscriber receives every stored event after its cursor once, in order: the cursor "
        "moves to cursor + 1 each time, also at the replay/live seam"
    ),
    "seamless-resume": (
        "disconnect + resume from the last seen seq = the uninterrupted sequence: nothing lost, "
        "nothing doubled at the reconnect"
    ),
    "live-wakeup": "a subscriber waiting at the head receives a new append (woken, no sleep)",
    "replay-equals-live": (
        "once caught up, what a subscriber received live equals a replay of the log: the "
        "projections field by field, then the events themselves"
    ),
    "rollback-detected": "a subscriber whose cursor a rollback passed gets StaleCursor",
    "stale-resume-detected": (
        "epoch() counts the rollbacks that dropped events, and a subscriber's (epoch, cursor) "
        "is a resume point: resuming with it (subscribe or read) after a rollback below the "
        "cursor while away raises StaleCursor with resume_at = the lowest such rollback's "
        "seq, from which it resumes seamlessly; without such a rollback it resumes as is"
    ),
    "rejected-batch-no-trace": (
        "a batch holding an event the log cannot read back as given is refused whole with "
        "InvalidEvent naming its index: head and reads are as before, the next append gapless"
    ),
    "shutdown-terminates-runs": (
        "a host stopping with a run going gives it its terminal event (run.killed) in the log"
    ),
    "one-terminal-per-run": (
        "after a host restarts on the log (a crash left runs marked running), every run has "
        "exactly one terminal event, its last: none missing, none doubled by the recovery"
    ),
}

#: Events no log may store as given: (what is wrong, the event).
INVALID: list[tuple[str, Event]] = [
    ("ts NaN", MessageDelta(run_id="bad", ts=math.nan, item_id="x", text="x")),
    ("ts as text", MessageDelta(run_id="bad", ts="now", item_id="x", text="x")),  # type: ignore[arg-type]
    ("kind outside its literal", RunCrashed(run_id="bad", ts=1.0, kind="network", message="m")),  # type: ignore[arg-type]
]


class Subscriber:
    """A client of the log: one subscription at a time, its deliveries across reconnects."""

    def __init__(self, name: str, session_id: str, start: int) -> None:
        self.name = name
        self.session_id = session_id
        self.start = start  # the ``after`` of the first subscription
        self.cursor = start
        self.delivered: list[Event] = []
        self.projector = Projector()
        self.resumed = start > 0  # the next event is the first after (re)subscribing mid-log
        self.epoch = 0  # the epoch its cursor belongs to (as its subscription reports)
        self.subscription: Subscription | None = None
        self.stale = False  # a rollback passed its cursor: it must get StaleCursor

    def __repr__(self) -> str:
        return f"{self.name}({self.session_id}, cursor={self.cursor}, epoch={self.epoch})"


async def _next(subscription: Subscription, timeout: float) -> Event:
    with anyio.fail_after(timeout):
        return await subscription.__anext__()


class LogHarness:
    """One log under test, its model, and the async portal its subscriptions run in."""

    def __init__(
        self, make_log: Callable[[], EventLog], *, timeout: float = 5.0, backend: str = "asyncio"
    ) -> None:
        self.timeout = timeout
        self.model: dict[str, list[Event]] = {}
        self.rollbacks: dict[str, list[tuple[int, int]]] = {}  # (epoch it began, to_seq)
        self.subscribers: list[Subscriber] = []
        self.steps: deque[str] = deque(maxlen=25)
        self._names = iter(range(1, 1_000_000))
        self._stack = ExitStack()
        self.portal: BlockingPortal = self._stack.enter_context(start_blocking_portal(backend))
        self.log = make_log()
        self._stack.callback(self.log.close)

    def on_close(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` when the harness closes (before the log is closed)."""
        self._stack.callback(callback)

    # --- reporting ---------------------------------------------------------------------

    def fail(self, invariant: str, detail: str) -> NoReturn:
        steps = "\n".join(f"  {i}. {step}" for i, step in enumerate(self.steps, 1))
        raise InvariantViolation(
            f"{type(self.log).__name__} broke {invariant!r} ({INVARIANTS[invariant]}): "
            f"{detail}\nlast steps:\n{steps}",
            invariant=invariant,
        )

    def step(self, text: str) -> None:
        self.steps.append(text)

    # --- writes --------------------------------------------------------------------------

    def expected(self, session_id: str, events: Sequence[Event], head: int) -> list[Event]:
        return [msgspec.structs.replace(e, seq=head + i) for i, e in enumerate(events, 1)]

    def append(self, session_id: str, events: Sequence[Event]) -> list[Event]:
        model = self.model.setdefault(session_id, [])
        self.step(f"append({session_id!r}, {len(events)} events) at head {len(model)}")
        stored = self.log.append(session_id, list(events))
        want = self.expected(session_id, events, len(model))
        if [e.seq for e in stored] != [e.seq for e in want]:
            self.fail(
                "seq-gapless",
                f"append returned seqs {[e.seq for e in stored]}, expected {[e.seq for e in want]}",
            )
        if stored != want:
            self.fail("replay-matches-appends", "append returned events other than those given")
        model.extend(want)
        return stored

    def append_rejected(self, session_id: str, events: Sequence[Event], bad: int) -> None:
        """Append ``events`` with an invalid event at ``bad``: refused whole, no trace left."""
        kind, invalid = INVALID[bad % len(INVALID)]
        index = bad % (len(events) + 1)
        batch = [*events[:index], invalid, *events[index:]]
        model = self.model.setdefault(session_id, [])
        self.step(
            f"append({session_id!r}, {len(batch)} events, {kind} at {index}) at head {len(model)}"
        )
        try:
            stored = self.log.append(session_id, batch)
        except InvalidEvent as refused:
            if refused.index != index:
                self.fail(
                    "rejected-batch-no-trace",
                    f"InvalidEvent names index {refused.index}, the bad event is at {index}",
                )
        else:
            self.fail(
                "rejected-batch-no-trace",
                f"append stored a batch with {kind} at index {index}: {_show(stored[index : index + 1])}",
            )
        read = self.log.read(session_id)
        if read != model or self.log.head(session_id) != len(model):
            self.fail(
                "rejected-batch-no-trace",
                f"after a refused batch of {len(batch)} at head {len(model)}, session "
                f"{session_id!r} reads back seqs {_seqs([e.seq for e in read])} (head "
                f"{self.log.head(session_id)})",
            )

    def append_concurrently(self, session_id: str, batches: Sequence[Sequence[Event]]) -> None:
        """Append each batch from its own thread, all released at once.

        Each batch gets a marker delta in front (``run_id="writer"``) so that the stored
        order tells which batch is which.
        """
        batches = [
            [
                MessageDelta(
                    run_id="writer", ts=1.0, item_id=f"batch-{next(self._names)}", text=""
                ),
                *batch,
            ]
            for batch in batches
        ]
        model = self.model.setdefault(session_id, [])
        head = len(model)
        self.step(f"append_concurrently({session_id!r}, {[len(b) for b in batches]})")
        barrier = threading.Barrier(len(batches))
        errors: list[BaseException] = []

        def write(batch: Sequence[Event]) -> None:
            try:
                barrier.wait()
                self.log.append(session_id, list(batch))
            except BaseException as error:  # reported below, in the calling thread
                errors.append(error)

        threads = [
            threading.Thread(target=write, args=(batch,), name=f"stuntset-writer-{i}")
            for i, batch in enumerate(batches)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        stored = self.log.read(session_id, after=head)
        total = sum(len(b) for b in batches)
        if [e.seq for e in stored] != list(range(head + 1, head + total + 1)):
            self.fail(
                "seq-gapless",
                f"after concurrent appends of {total} events at head {head}, read gave seqs "
                f"{[e.seq for e in stored]}",
            )
        remaining = dict(enumerate(batches))
        position = 0
        while position < len(stored):
            match = next(
                (
                    i
                    for i, batch in remaining.items()
                    if self.expected(session_id, batch, head + position)
                    == stored[position : position + len(batch)]
                ),
                None,
            )
            if match is None:
                self.fail(
                    "atomic-batches",
                    f"seq {head + position + 1} does not start one of the concurrent batches "
                    f"whole: {_show(stored[position : position + 3])}",
                )
            position += len(remaining.pop(match))
        model.extend(stored)

    def rollback(self, session_id: str, to_seq: int) -> None:
        model = self.model.setdefault(session_id, [])
        self.step(f"rollback({session_id!r}, to_seq={to_seq}) from head {len(model)}")
        self.log.rollback(session_id, to_seq)
        if to_seq < len(model):
            rollbacks = self.rollbacks.setdefault(session_id, [])
            rollbacks.append((len(rollbacks) + 1, to_seq))
        del model[to_seq:]
        for sub in self.subscribers:
            if sub.session_id == session_id and sub.cursor > to_seq:
                sub.stale = True

    # --- subscriptions -------------------------------------------------------------------

    def epoch(self, session_id: str) -> int:
        """The session's epoch in the model: how many rollbacks dropped events."""
        return len(self.rollbacks.get(session_id, []))

    def resume_at(self, session_id: str, epoch: int, cursor: int) -> int | None:
        """Where a client at ``(epoch, cursor)`` must resume, or ``None`` if it may as is."""
        since = [to for began, to in self.rollbacks.get(session_id, []) if began > epoch]
        return min(since) if since and min(since) < cursor else None

    def subscribe(self, session_id: str, after: int, *, with_epoch: bool = False) -> Subscriber:
        """A new subscriber from ``after`` (passing the session's epoch if ``with_epoch``)."""
        sub = Subscriber(f"sub{next(self._names)}", session_id, after)
        sub.epoch = self.epoch(session_id)
        epoch = sub.epoch if with_epoch else None
        self.step(f"{sub.name} = subscribe({session_id!r}, after={after}, epoch={epoch})")
        sub.subscription = self.log.subscribe(session_id, after=after, epoch=epoch)
        self.subscribers.append(sub)
        return sub

    def disconnect(self, sub: Subscriber) -> None:
        self.step(f"disconnect {sub}")
        if sub.subscription is not None:
            self.portal.call(sub.subscription.aclose)
            sub.subscription = None

    def resume(self, sub: Subscriber) -> None:
        """Subscribe again from the last ``(epoch, seq)`` ``sub`` saw (read first, the same).

        If a rollback while it was away went below its cursor, both must raise StaleCursor
        naming the model's resume point; the subscriber then drops what it received after
        that point and resumes from there.
        """
        self.step(f"resume {sub}")
        expected = self.resume_at(sub.session_id, sub.epoch, sub.cursor)
        for call in ("read", "subscribe"):
            try:
                if call == "read":
                    read = self.log.read(sub.session_id, after=sub.cursor, epoch=sub.epoch)
                    if read != self.model.get(sub.session_id, [])[sub.cursor :]:
                        self.fail(
                            "stale-resume-detected",
                            f"read(after={sub.cursor}, epoch={sub.epoch}) for {sub} gave seqs "
                            f"{_seqs([e.seq for e in read])}, not the events after its cursor",
                        )
                else:
                    sub.subscription = self.log.subscribe(
                        sub.session_id, after=sub.cursor, epoch=sub.epoch
                    )
            except StaleCursor as stale:
                if expected is None or stale.resume_at != expected:
                    self.fail(
                        "stale-resume-detected",
                        f"{call}(after={sub.cursor}, epoch={sub.epoch}) for {sub} raised "
                        f"StaleCursor(resume_at={stale.resume_at}); expected "
                        f"{'none' if expected is None else f'resume_at={expected}'}: {stale}",
                    )
                continue
            if expected is not None:
                self.fail(
                    "stale-resume-detected",
                    f"{sub} resumed with {call}(after={sub.cursor}, epoch={sub.epoch}) though a "
                    f"rollback to seq {expected} went below its cursor while it was away; "
                    "expected StaleCursor",
                )
        if expected is not None:
            self.step(f"rebuild {sub} from seq {expected}")
            sub.delivered = [e for e in sub.delivered if (e.seq or 0) <= expected]
            sub.start = min(sub.start, expected)
            sub.cursor = expected
            sub.projector = Projector()
            for event in sub.delivered:
                sub.projector.feed(event)
            sub.stale = False
            try:
                sub.subscription = self.log.subscribe(
                    sub.session_id, after=expected, epoch=sub.epoch
                )
            except StaleCursor as stale:
                self.fail(
                    "stale-resume-detected",
                    f"resuming {sub} at the resume_at={expected} it was given raised: {stale}",
                )
        sub.resumed = True

    def forget(self, sub: Subscriber) -> None:
        self.disconnect(sub)
        self.subscribers.remove(sub)

    def _delivery_rule(self, sub: Subscriber) -> str:
        return "seamless-resume" if sub.resumed else "subscription-gapless"

    def _receive(self, sub: Subscriber) -> Event:
        assert sub.subscription is not None
        head = len(self.model.get(sub.session_id, []))
        try:
            return self.portal.call(_next, sub.subscription, self.timeout)
        except TimeoutError:
            self.fail(
                self._delivery_rule(sub),
                f"{sub} received nothing within {self.timeout} s though the head is {head}",
            )
        except StopAsyncIteration:
            self.fail(self._delivery_rule(sub), f"{sub}: the subscription ended while open")

    def _accept(self, sub: Subscriber, event: Event) -> None:
        seq = event.seq
        if seq is None or seq != sub.cursor + 1:
            where = "right after resuming" if sub.resumed else "mid-stream"
            self.fail(
                self._delivery_rule(sub),
                f"{sub} received seq {seq} {where}, expected {sub.cursor + 1}",
            )
        sub.resumed = False
        sub.cursor = seq
        sub.delivered.append(event)
        sub.projector.feed(event)
        assert sub.subscription is not None
        sub.epoch = sub.subscription.epoch
        current = self.epoch(sub.session_id)
        if sub.epoch > current or self.resume_at(sub.session_id, sub.epoch, seq) is not None:
            self.fail(
                "stale-resume-detected",
                f"{sub} received seq {seq} at epoch {sub.epoch} by its subscription, but the "
                f"log's epoch is {current} with rollbacks {self.rollbacks.get(sub.session_id)} "
                "(epoch, to_seq): that pair is no resume point for what it received",
            )

    def pull(self, sub: Subscriber, count: int | None = None) -> None:
        """Receive ``count`` events (all that are stored after the cursor by default)."""
        if sub.subscription is None:
            self.resume(sub)  # told by its epoch if a rollback passed it while away
        assert sub.subscription is not None
        if sub.stale:
            self.step(f"pull {sub} (stale: a rollback passed its cursor)")
            try:
                event = self.portal.call(_next, sub.subscription, self.timeout)
            except StaleCursor:
                self.forget(sub)
                return
            except (TimeoutError, StopAsyncIteration):
                event = None
            self.fail(
                "rollback-detected",
                f"{sub} got {_show([event]) if event else 'no StaleCursor'} after a rollback "
                f"below its cursor {sub.cursor}",
            )
        available = len(self.model.get(sub.session_id, [])) - sub.cursor
        wanted = available if count is None else min(count, available)
        self.step(f"pull {sub} x{wanted}")
        for _ in range(wanted):
            self._accept(sub, self._receive(sub))
        self._check_caught_up(sub)

    def pull_live(self, sub: Subscriber, events: Sequence[Event]) -> None:
        """With ``sub`` waiting at the head, append ``events``: it must be woken."""
        self.pull(sub)
        if sub.stale or sub not in self.subscribers:
            return
        assert sub.subscription is not None
        self.step(f"pull_live {sub}")
        # The timeout counts from the append (not from when the waiter started): a busy
        # machine delaying this thread must not pass for a missed wake-up.
        future = self.portal.start_task_soon(_next, sub.subscription, self.timeout + 1)
        self.portal.call(anyio.wait_all_tasks_blocked)
        self.append(sub.session_id, events)
        try:
            event = future.result(timeout=self.timeout)
        except TimeoutError:
            future.cancel()
            self.fail(
                "live-wakeup",
                f"{sub} was waiting at the head; an append of {len(events)} events did not "
                f"reach it within {self.timeout} s",
            )
        except StopAsyncIteration:
            self.fail("live-wakeup", f"{sub}: the subscription ended while waiting")
        self._accept(sub, event)
        self.pull(sub)

    # --- whole-log checks ------------------------------------------------------------------

    def _check_caught_up(self, sub: Subscriber) -> None:
        """A caught-up subscriber's live view equals a replay: projections, then events."""
        if sub.cursor != len(self.model.get(sub.session_id, [])):
            return
        replay = self.log.read(sub.session_id, after=sub.start)
        diff = diff_views(project(replay), sub.projector.view())
        if diff:
            self.fail(
                "replay-equals-live",
                f"{sub} (from after={sub.start}): replayed vs live projection: {'; '.join(diff)}",
            )
        if replay != sub.delivered:
            first = next(
                (i for i, (a, b) in enumerate(zip(replay, sub.delivered, strict=False)) if a != b),
                min(len(replay), len(sub.delivered)),
            )
            self.fail(
                "replay-equals-live",
                f"{sub} (from after={sub.start}): event {first + 1} received live "
                f"{_show(sub.delivered[first : first + 1])}, replayed "
                f"{_show(replay[first : first + 1])}",
            )

    def check(self) -> None:
        """Every session reads back exactly as appended, with seq 1..head."""
        for session_id, model in self.model.items():
            stored = self.log.read(session_id)
            seqs = [e.seq for e in stored]
            if seqs != list(range(1, len(stored) + 1)) or len(stored) != len(model):
                self.fail(
                    "seq-gapless",
                    f"session {session_id!r} reads back seqs {_seqs(seqs)}, expected 1..{len(model)}",
                )
            if stored != model:
                first = next(
                    i for i, (a, b) in enumerate(zip(stored, model, strict=True)) if a != b
                )
                self.fail(
                    "replay-matches-appends",
                    f"session {session_id!r} at seq {first + 1}: read {_show([stored[first]])}, "
                    f"appended {_show([model[first]])}",
                )
            if self.log.head(session_id) != len(model):
                self.fail(
                    "seq-gapless",
                    f"head({session_id!r}) is {self.log.head(session_id)}, expected {len(model)}",
                )
            if self.log.epoch(session_id) != self.epoch(session_id):
                self.fail(
                    "stale-resume-detected",
                    f"epoch({session_id!r}) is {self.log.epoch(session_id)}, expected "
                    f"{self.epoch(session_id)} (the rollbacks that dropped events)",
                )

    def close(self) -> None:
        for sub in list(self.subscribers):
            if sub.subscription is not None:
                self.portal.call(sub.subscription.aclose)
        self._stack.close()


def _show(events: Sequence[Event | None]) -> str:
    shown: list[Any] = [to_builtins(e) if e is not None else None for e in events]
    return repr(shown)[:300]


def _seqs(seqs: Sequence[int | None]) -> str:
    return repr(list(seqs)) if len(seqs) <= 20 else f"{list(seqs[:20])!r}…"


def deltas(run_id: str, item_id: str, texts: Sequence[str]) -> list[Event]:
    """Message deltas, one per text (for scenario steps)."""
    return [MessageDelta(run_id=run_id, ts=1.0, item_id=item_id, text=t) for t in texts]
