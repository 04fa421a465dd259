"""Test helpers for the host: row builders, an out-of-band log seam, a fake provider registry.

- ``build_task`` / ``build_session`` / ``build_run`` / ``build_event``: rows and events with
  sensible defaults; override only what the test cares about. Given a ``store``, the row is
  written; ``build_session`` (and ``build_run``) lay down the rows they cannot exist without.
- ``LogSeam``: set up state without driving a UI or a provider — seed a task + session +
  run, publish events into the log, finish a run, roll the log back.
- ``scenario_registry()``: a provider registry with one scripted provider per catalog
  scenario (its turns repeated, so a session can take many turns) plus ``"stuck"``.

Everything non-deterministic comes from the clock and id seams in force.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import msgspec

from stuntset import events as ev
from stuntset.errors import UsageError
from stuntset.events import Event
from stuntset.log.base import EventLog
from stuntset.runtime.models import Checkpoint, RunRecord, RunStatus, SessionRecord, TaskRecord
from stuntset.runtime.service import ProviderFactory
from stuntset.runtime.store import SessionStore
from stuntset.seams import current_clock, current_ids

__all__ = [
    "LogSeam",
    "Seeded",
    "build_event",
    "build_run",
    "build_session",
    "build_task",
    "scenario_registry",
]


def build_task(store: SessionStore | None = None, **overrides: Any) -> TaskRecord:
    """A task row; ``workdir`` defaults to an absolute path named after the task id."""
    task_id = overrides.pop("task_id", None) or current_ids().new("task")
    fields: dict[str, Any] = {
        "task_id": task_id,
        "workdir": str(Path(tempfile.gettempdir()) / "stuntset-tasks" / task_id),
        "created_at": current_clock().now(),
        **overrides,
    }
    if not Path(fields["workdir"]).is_absolute():
        raise UsageError(f"build_task: workdir must be absolute, got {fields['workdir']!r}")
    task = TaskRecord(**fields)
    if store is not None:
        store.put(task)
    return task


def build_session(store: SessionStore | None = None, **overrides: Any) -> SessionRecord:
    """A session row; without ``task_id`` it lays down its own task first."""
    if "task_id" not in overrides:
        overrides["task_id"] = build_task(store).task_id
    fields: dict[str, Any] = {
        "session_id": overrides.pop("session_id", None) or current_ids().new("session"),
        "provider": "happy_path",
        "created_at": current_clock().now(),
        **overrides,
    }
    session = SessionRecord(**fields)
    if store is not None:
        store.put(session)
    return session


def build_run(store: SessionStore | None = None, **overrides: Any) -> RunRecord:
    """A run row (``running``); without ``session_id`` it lays down its session (and task)."""
    if "session_id" not in overrides:
        overrides["session_id"] = build_session(store).session_id
    fields: dict[str, Any] = {
        "run_id": overrides.pop("run_id", None) or current_ids().new("run"),
        "prompt": "hello",
        "status": "running",
        "started_at": current_clock().now(),
        **overrides,
    }
    run = RunRecord(**fields)
    if store is not None:
        store.put(run)
    return run


_EVENT_DEFAULTS: dict[str, dict[str, Any]] = {
    "run.started": {"session_id": "session-1", "provider": "scripted"},
    "message.delta": {"item_id": "msg-1", "text": "Hello"},
    "message.completed": {"item_id": "msg-1", "text": "Hello"},
    "reasoning.delta": {"item_id": "rsn-1", "text": "Thinking"},
    "reasoning.completed": {"item_id": "rsn-1", "text": "Thinking"},
    "tool.started": {"tool_call_id": "tool-1", "name": "read_file", "input": {"path": "a.txt"}},
    "tool.completed": {"tool_call_id": "tool-1", "output": "ok"},
    "approval.requested": {"request_id": "approval-1", "tool": "bash"},
    "approval.resolved": {"request_id": "approval-1", "decision": "allow"},
    "input.requested": {"request_id": "input-1", "prompt": "Which one?"},
    "input.resolved": {"request_id": "input-1", "text": "this one"},
    "usage": {"input_tokens": 10, "output_tokens": 5},
    "run.completed": {},
    "run.crashed": {"kind": "internal", "message": "boom"},
    "run.killed": {},
}


def build_event(type_: str, **overrides: Any) -> Event:
    """An event of ``type_`` (``"message.delta"``…) with defaults for every field."""
    if type_ not in _EVENT_DEFAULTS:
        raise UsageError(
            f"build_event: unknown event type {type_!r}; known: {', '.join(_EVENT_DEFAULTS)}"
        )
    fields = {"run_id": "run-1", "ts": current_clock().now(), **_EVENT_DEFAULTS[type_]}
    fields.update(overrides)
    try:
        return ev.decode(msgspec.json.encode({"type": type_, **fields}))
    except msgspec.ValidationError as error:
        raise UsageError(f"build_event({type_!r}): {error}") from None


class Seeded(msgspec.Struct, frozen=True, kw_only=True):
    """What ``LogSeam.seed`` laid down."""

    task: TaskRecord
    session: SessionRecord
    run: RunRecord

    @property
    def session_id(self) -> str:
        return self.session.session_id

    @property
    def run_id(self) -> str:
        return self.run.run_id


class LogSeam:
    """Out-of-band access to a host's log and rows, for setting up state in tests."""

    def __init__(self, log: EventLog, store: SessionStore) -> None:
        self.log = log
        self.store = store

    def seed(self, *, provider: str = "happy_path", **session_overrides: Any) -> Seeded:
        """A task, a session on it and a running run whose ``run.started`` is in the log."""
        session = build_session(self.store, provider=provider, **session_overrides)
        task = self.store.get(TaskRecord, session.task_id)
        assert task is not None
        run = build_run(self.store, session_id=session.session_id)
        self.log.append(
            session.session_id,
            [build_event("run.started", run_id=run.run_id, session_id=session.session_id)],
        )
        return Seeded(task=task, session=session, run=run)

    def publish(self, seeded: Seeded, *events: Event | str) -> list[Event]:
        """Append events to the seeded session (a type name builds one for the seeded run)."""
        built = [build_event(e, run_id=seeded.run_id) if isinstance(e, str) else e for e in events]
        return self.log.append(seeded.session_id, built)

    def finish(self, seeded: Seeded, status: RunStatus = "completed") -> Event:
        """End the seeded run (terminal event + run row; a completed run writes the checkpoint)."""
        kind = {"completed": "run.completed", "crashed": "run.crashed"}.get(status, "run.killed")
        [terminal] = self.publish(seeded, kind)
        self.store.put(
            msgspec.structs.replace(seeded.run, status=status, ended_at=current_clock().now())
        )
        if status == "completed":
            assert terminal.seq is not None
            self.store.set_checkpoint(
                seeded.session_id,
                Checkpoint(resume=seeded.session_id, run_id=seeded.run_id, seq=terminal.seq),
            )
        return terminal

    def rollback(self, seeded: Seeded, to_seq: int) -> int:
        """Roll the seeded session's log back to ``to_seq``."""
        return self.log.rollback(seeded.session_id, to_seq)


def scenario_registry(*, repeat: int = 20) -> dict[str, ProviderFactory]:
    """One scripted provider per catalog scenario (turns repeated ``repeat`` times) + stuck."""
    from stuntset import scenarios
    from stuntset.providers import ScriptedProvider, StuckProvider
    from stuntset.script import Script

    def scripted(name: str) -> ProviderFactory:
        def make() -> ScriptedProvider:
            turns = scenarios.build(name).turns
            return ScriptedProvider(Script(turns=tuple(turns) * repeat), name=name)

        return make

    registry: dict[str, ProviderFactory] = {name: scripted(name) for name in scenarios.names()}
    registry["stuck"] = StuckProvider
    return registry
