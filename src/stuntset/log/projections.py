"""Projections: what a session looks like, as pure functions of its event list.

``project(events)`` folds a session's events into a ``SessionView`` (status, runs, messages
assembled from deltas, reasoning, tool calls with their results, pending approvals and
input requests, usage). ``Projector`` is the same fold fed one event at a time, for live
subscribers — so a projection built live and one built from a replay can be compared field
by field with ``diff_views``. Every function here is total: any event list projects, even
one that breaks the event contract (a result without a call is kept, marked ``name=None``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, TypeAlias

import msgspec

from stuntset.events import (
    ApprovalRequested,
    ApprovalResolved,
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
    Usage,
)

__all__ = [
    "ApprovalView",
    "InputView",
    "MessageView",
    "Projector",
    "RunStatus",
    "RunView",
    "SessionStatus",
    "SessionView",
    "ToolCallView",
    "UsageView",
    "diff_views",
    "project",
]

RunStatus: TypeAlias = Literal["running", "completed", "crashed", "killed"]
#: The latest run's state; ``"new"`` before any run.
SessionStatus: TypeAlias = Literal[
    "new", "running", "awaiting_approval", "awaiting_input", "completed", "crashed", "killed"
]


class RunView(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    status: RunStatus = "running"
    provider: str | None = None
    model: str | None = None
    stop_reason: str | None = None  # run.completed
    error_kind: str | None = None  # run.crashed
    error_message: str | None = None  # run.crashed / run.killed reason


class MessageView(msgspec.Struct, frozen=True, kw_only=True):
    """A message (or reasoning) item: the deltas joined, replaced by the completed text."""

    run_id: str
    item_id: str
    text: str
    completed: bool = False


class ToolCallView(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    tool_call_id: str
    name: str | None  # None: a result arrived without its call
    input: dict[str, Any] = msgspec.field(default_factory=dict)
    completed: bool = False
    output: Any = None
    is_error: bool = False


class ApprovalView(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    request_id: str
    tool: str
    tool_call_id: str | None = None
    input: dict[str, Any] = msgspec.field(default_factory=dict)


class InputView(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    request_id: str
    prompt: str


class UsageView(msgspec.Struct, frozen=True, kw_only=True):
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None


class SessionView(msgspec.Struct, frozen=True, kw_only=True):
    """A session as its events describe it. ``last_seq`` is the cursor it reflects."""

    session_id: str | None = None
    status: SessionStatus = "new"
    runs: tuple[RunView, ...] = ()
    messages: tuple[MessageView, ...] = ()
    reasoning: tuple[MessageView, ...] = ()
    tool_calls: tuple[ToolCallView, ...] = ()
    pending_approvals: tuple[ApprovalView, ...] = ()
    pending_inputs: tuple[InputView, ...] = ()
    usage: UsageView = UsageView()
    event_count: int = 0
    last_seq: int = 0


class Projector:
    """The ``project`` fold, fed one event at a time: ``feed(event)``, then ``view()``."""

    def __init__(self) -> None:
        self._session_id: str | None = None
        self._runs: dict[str, RunView] = {}
        self._messages: dict[tuple[str, str], MessageView] = {}
        self._reasoning: dict[tuple[str, str], MessageView] = {}
        # An open item's deltas, joined only when a view is asked for (appending to the
        # view's text on every delta copied it: quadratic in one message's deltas).
        self._parts: dict[tuple[bool, str, str], list[str]] = {}
        self._tools: dict[tuple[str, str], ToolCallView] = {}
        self._approvals: dict[str, ApprovalView] = {}
        self._inputs: dict[str, InputView] = {}
        self._usage = UsageView()
        self._count = 0
        self._last_seq = 0
        self._latest_run: str | None = None

    def feed(self, event: Event) -> None:
        self._count += 1
        if event.seq is not None:
            self._last_seq = max(self._last_seq, event.seq)
        run_id = event.run_id
        if run_id not in self._runs:
            self._runs[run_id] = RunView(run_id=run_id)
        self._latest_run = run_id
        replace = msgspec.structs.replace
        match event:
            case RunStarted():
                self._session_id = event.session_id
                self._runs[run_id] = replace(
                    self._runs[run_id], provider=event.provider, model=event.model
                )
            case MessageDelta() | ReasoningDelta():
                message = isinstance(event, MessageDelta)
                items = self._messages if message else self._reasoning
                key = (run_id, event.item_id)
                old = items.get(key)
                if old is None:
                    items[key] = MessageView(run_id=run_id, item_id=event.item_id, text=event.text)
                    self._parts[(message, run_id, event.item_id)] = [event.text]
                elif not old.completed:
                    self._parts[(message, run_id, event.item_id)].append(event.text)
            case MessageCompleted() | ReasoningCompleted():
                message = isinstance(event, MessageCompleted)
                items = self._messages if message else self._reasoning
                items[(run_id, event.item_id)] = MessageView(
                    run_id=run_id, item_id=event.item_id, text=event.text, completed=True
                )
                self._parts.pop((message, run_id, event.item_id), None)
            case ToolStarted():
                self._tools[(run_id, event.tool_call_id)] = ToolCallView(
                    run_id=run_id,
                    tool_call_id=event.tool_call_id,
                    name=event.name,
                    input=event.input,
                )
            case ToolCompleted():
                key = (run_id, event.tool_call_id)
                call = self._tools.get(key) or ToolCallView(
                    run_id=run_id, tool_call_id=event.tool_call_id, name=None
                )
                self._tools[key] = replace(
                    call, completed=True, output=event.output, is_error=event.is_error
                )
            case ApprovalRequested():
                self._approvals[event.request_id] = ApprovalView(
                    run_id=run_id,
                    request_id=event.request_id,
                    tool=event.tool,
                    tool_call_id=event.tool_call_id,
                    input=event.input,
                )
            case ApprovalResolved():
                self._approvals.pop(event.request_id, None)
            case InputRequested():
                self._inputs[event.request_id] = InputView(
                    run_id=run_id, request_id=event.request_id, prompt=event.prompt
                )
            case InputResolved():
                self._inputs.pop(event.request_id, None)
            case Usage():
                usage = self._usage
                cost = usage.cost
                if event.cost is not None:
                    cost = (cost or 0.0) + event.cost
                self._usage = UsageView(
                    input_tokens=usage.input_tokens + event.input_tokens,
                    output_tokens=usage.output_tokens + event.output_tokens,
                    cost=cost,
                )
            case RunCompleted() | RunCrashed() | RunKilled():
                self._finish(event)

    def _finish(self, event: RunCompleted | RunCrashed | RunKilled) -> None:
        run_id = event.run_id
        replace = msgspec.structs.replace
        run = self._runs[run_id]
        if isinstance(event, RunCompleted):
            run = replace(run, status="completed", stop_reason=event.stop_reason)
        elif isinstance(event, RunCrashed):
            run = replace(run, status="crashed", error_kind=event.kind, error_message=event.message)
        else:
            run = replace(run, status="killed", error_message=event.reason)
        self._runs[run_id] = run
        # A finished run's open requests can no longer be answered.
        for key in [k for k, a in self._approvals.items() if a.run_id == run_id]:
            del self._approvals[key]
        for key in [k for k, i in self._inputs.items() if i.run_id == run_id]:
            del self._inputs[key]

    def view(self) -> SessionView:
        """The projection of every event fed so far."""
        for (message, run_id, item_id), parts in self._parts.items():
            if len(parts) > 1:
                text = "".join(parts)
                parts[:] = [text]
                items = self._messages if message else self._reasoning
                key = (run_id, item_id)
                items[key] = msgspec.structs.replace(items[key], text=text)
        status: SessionStatus = "new"
        if self._latest_run is not None:
            run_status = self._runs[self._latest_run].status
            status = run_status
            if run_status == "running":
                if any(a.run_id == self._latest_run for a in self._approvals.values()):
                    status = "awaiting_approval"
                elif any(i.run_id == self._latest_run for i in self._inputs.values()):
                    status = "awaiting_input"
        return SessionView(
            session_id=self._session_id,
            status=status,
            runs=tuple(self._runs.values()),
            messages=tuple(self._messages.values()),
            reasoning=tuple(self._reasoning.values()),
            tool_calls=tuple(self._tools.values()),
            pending_approvals=tuple(self._approvals.values()),
            pending_inputs=tuple(self._inputs.values()),
            usage=self._usage,
            event_count=self._count,
            last_seq=self._last_seq,
        )


def project(events: Iterable[Event]) -> SessionView:
    """The ``SessionView`` of a session's events (in ``seq`` order)."""
    projector = Projector()
    for event in events:
        projector.feed(event)
    return projector.view()


def diff_views(expected: SessionView, actual: SessionView, *, limit: int = 10) -> list[str]:
    """The fields where two views differ, as ``"path: expected != actual"`` lines."""
    out: list[str] = []
    _diff(msgspec.to_builtins(expected), msgspec.to_builtins(actual), "", out, limit)
    return out


def _diff(a: Any, b: Any, path: str, out: list[str], limit: int) -> None:
    if len(out) >= limit or a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            _diff(a.get(key), b.get(key), f"{path}.{key}" if path else str(key), out, limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{index}]", out, limit)
    elif isinstance(a, list) and isinstance(b, list):
        out.append(f"{path}: {len(a)} items != {len(b)} items ({a!r:.200} != {b!r:.200})")
    else:
        out.append(f"{path or '<view>'}: {a!r:.200} != {b!r:.200}")
