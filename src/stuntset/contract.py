"""The event contract: the grammar every normalized event stream obeys.

Rules (each has a name, used in ``ContractViolation.rule``):

``run-started-first``
    The first event is ``run.started``; there is only one.
``same-run``
    Every event carries the ``run_id`` of the ``run.started``.
``one-terminal``
    Exactly one terminal event (``run.completed`` | ``run.crashed`` | ``run.killed``) ends the
    stream, and nothing follows it.
``tool-answers-start``
    Every ``tool.completed`` answers an open ``tool.started`` (same ``tool_call_id``); a
    ``tool_call_id`` is not started twice while open.
``resolution-answers-request``
    Every ``approval.resolved`` / ``input.resolved`` answers an open request of its kind;
    a ``request_id`` is not opened twice.
``completed-closes-everything``
    ``run.completed`` leaves no tool call and no request open (a crash or a kill may).
``seq-gapless``
    When events carry ``seq``, it is present on all of them and increases by exactly one.

``check_events(events)`` checks a whole stream; ``ContractChecker`` is fed one event at a time
(for live streams) and ``finish()`` checks that the stream ended properly.
"""

from __future__ import annotations

from collections.abc import Iterable

from stuntset.errors import ContractViolation
from stuntset.events import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    InputRequested,
    InputResolved,
    RunCompleted,
    RunStarted,
    ToolCompleted,
    ToolStarted,
    encode,
    type_of,
)

__all__ = ["RULES", "ContractChecker", "check_events"]

RULES = (
    "run-started-first",
    "same-run",
    "one-terminal",
    "tool-answers-start",
    "resolution-answers-request",
    "completed-closes-everything",
    "seq-gapless",
)


class ContractChecker:
    """Checks an event stream incrementally: ``feed()`` each event, then ``finish()``.

    Raises ``ContractViolation`` at the first event that breaks a rule, naming the index, the
    event and the rule.
    """

    __slots__ = (
        "_count",
        "_last_seq",
        "_open_approvals",
        "_open_inputs",
        "_open_tools",
        "_run_id",
        "_terminal",
        "events",
    )

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._count = 0
        self._run_id: str | None = None
        self._terminal: Event | None = None
        self._open_tools: set[str] = set()
        self._open_approvals: set[str] = set()
        self._open_inputs: set[str] = set()
        self._last_seq: int | None = None

    def _fail(self, rule: str, index: int | None, event: Event | None, detail: str) -> None:
        __tracebackhide__ = True
        where = "at end of stream" if event is None else f"event #{index} {type_of(event)}"
        shown = "" if event is None else f"\n  event: {encode(event).decode()}"
        raise ContractViolation(
            f"{where} breaks rule {rule!r}: {detail}{shown}\n"
            f"  (rules are listed in stuntset.contract; the stream so far has {self._count} events)",
            rule=rule,
            index=index,
        )

    def feed(self, event: Event) -> None:
        """Check one more event."""
        __tracebackhide__ = True
        index = self._count
        self._count += 1
        self.events.append(event)

        if self._terminal is not None:
            self._fail(
                "one-terminal",
                index,
                event,
                f"nothing may follow the terminal {type_of(self._terminal)}",
            )
        if index == 0:
            if not isinstance(event, RunStarted):
                self._fail("run-started-first", index, event, "the first event must be run.started")
            self._run_id = event.run_id
        elif isinstance(event, RunStarted):
            self._fail("run-started-first", index, event, "run.started appears a second time")
        if event.run_id != self._run_id:
            self._fail(
                "same-run",
                index,
                event,
                f"run_id {event.run_id!r} differs from the run's {self._run_id!r}",
            )
        self._check_seq(index, event)

        if isinstance(event, ToolStarted):
            if event.tool_call_id in self._open_tools:
                self._fail(
                    "tool-answers-start",
                    index,
                    event,
                    f"tool_call_id {event.tool_call_id!r} is already open",
                )
            self._open_tools.add(event.tool_call_id)
        elif isinstance(event, ToolCompleted):
            if event.tool_call_id not in self._open_tools:
                self._fail(
                    "tool-answers-start",
                    index,
                    event,
                    f"no open tool.started with tool_call_id {event.tool_call_id!r} "
                    f"(open: {sorted(self._open_tools)})",
                )
            self._open_tools.discard(event.tool_call_id)
        elif isinstance(event, ApprovalRequested | InputRequested):
            opened = (
                self._open_approvals if isinstance(event, ApprovalRequested) else self._open_inputs
            )
            if event.request_id in self._open_approvals | self._open_inputs:
                self._fail(
                    "resolution-answers-request",
                    index,
                    event,
                    f"request_id {event.request_id!r} is already open",
                )
            opened.add(event.request_id)
        elif isinstance(event, ApprovalResolved | InputResolved):
            opened = (
                self._open_approvals if isinstance(event, ApprovalResolved) else self._open_inputs
            )
            if event.request_id not in opened:
                wanted = (
                    "approval.requested"
                    if isinstance(event, ApprovalResolved)
                    else "input.requested"
                )
                self._fail(
                    "resolution-answers-request",
                    index,
                    event,
                    f"no open {wanted} with request_id {event.request_id!r} (open: {sorted(opened)})",
                )
            opened.discard(event.request_id)
        elif event.terminal:
            self._terminal = event
            if isinstance(event, RunCompleted):
                left = [f"tool call {t!r}" for t in sorted(self._open_tools)]
                left += [f"request {r!r}" for r in sorted(self._open_approvals | self._open_inputs)]
                if left:
                    self._fail(
                        "completed-closes-everything",
                        index,
                        event,
                        f"run.completed while {', '.join(left)} still open",
                    )

    def _check_seq(self, index: int, event: Event) -> None:
        __tracebackhide__ = True
        if index == 0:
            self._last_seq = event.seq
            return
        if (self._last_seq is None) != (event.seq is None):
            self._fail(
                "seq-gapless",
                index,
                event,
                "seq must be on every event or on none "
                f"(previous seq {self._last_seq!r}, this one {event.seq!r})",
            )
        if event.seq is not None and self._last_seq is not None and event.seq != self._last_seq + 1:
            self._fail(
                "seq-gapless",
                index,
                event,
                f"seq {event.seq} follows {self._last_seq}; expected {self._last_seq + 1}",
            )
        self._last_seq = event.seq

    def finish(self) -> None:
        """Check that the stream ended properly (with exactly one terminal event)."""
        __tracebackhide__ = True
        if self._count == 0:
            self._fail("run-started-first", None, None, "the stream is empty")
        if self._terminal is None:
            self._fail(
                "one-terminal",
                None,
                None,
                "the stream ended without run.completed, run.crashed or run.killed",
            )

    @property
    def terminal(self) -> Event | None:
        """The terminal event, once seen."""
        return self._terminal


def check_events(events: Iterable[Event]) -> list[Event]:
    """Check a complete event stream against the contract; returns the events as a list."""
    __tracebackhide__ = True
    checker = ContractChecker()
    for event in events:
        checker.feed(event)
    checker.finish()
    return checker.events
