"""The session service: turns flow into the log, continuation, crashes, checkpoints, restarts."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from _runtime_helpers import BreakingProvider, CorruptingProvider

from stuntset import check_events, scenarios
from stuntset.errors import StaleCursor, UsageError
from stuntset.events import ApprovalRequested, Event, RunCrashed, RunStarted
from stuntset.log import SqliteEventLog, project
from stuntset.log.memory import MemoryEventLog
from stuntset.providers import ScriptedProvider, StuckProvider
from stuntset.providers.base import AgentProvider, Started
from stuntset.runtime import (
    Checkpoint,
    RunRecord,
    SessionRecord,
    SessionService,
    SessionStore,
    TaskRecord,
)
from stuntset.runtime.testing import LogSeam
from stuntset.script import Script


class Host:
    """One host process over one database file, with providers built from scripts."""

    def __init__(self, path: Path, providers: dict[str, Callable[[], AgentProvider]]) -> None:
        self.path = path
        self.made: list[AgentProvider] = []

        def registered(make: Callable[[], AgentProvider]) -> Callable[[], AgentProvider]:
            def factory() -> AgentProvider:
                provider = make()
                self.made.append(provider)
                return provider

            return factory

        self.providers = {name: registered(make) for name, make in providers.items()}

    @asynccontextmanager
    async def running(self) -> AsyncIterator[SessionService]:
        log = SqliteEventLog(self.path)
        store = SessionStore(self.path)
        try:
            async with SessionService(log=log, store=store, providers=self.providers) as service:
                yield service
        finally:
            store.close()
            log.close()


def scripted(*names: str) -> Callable[[], AgentProvider]:
    turns = tuple(turn for name in names for turn in scenarios.build(name).turns)
    return lambda: ScriptedProvider(Script(turns=turns))


def starts_session(events: list[Event]) -> str:
    """The provider's session id, from the first ``run.started``."""
    first = events[0]
    assert isinstance(first, RunStarted)
    return first.session_id


def runs_of(events: list[Event]) -> dict[str, list[Event]]:
    by_run: dict[str, list[Event]] = {}
    for event in events:
        by_run.setdefault(event.run_id, []).append(event)
    return by_run


async def wait_for_event(service: SessionService, session_id: str, kind: str) -> Event:
    subscription = service.subscribe(session_id)
    try:
        with anyio.fail_after(5):
            async for event in subscription:
                if event.type == kind:
                    return event
    finally:
        await subscription.aclose()
    raise AssertionError(f"the subscription ended before {kind}")


@pytest.mark.anyio
async def test_a_turn_flows_into_the_log_and_completes_with_a_checkpoint(tmp_path: Path) -> None:
    host = Host(tmp_path / "host.db", {"scripted": scripted("tool_use")})
    async with host.running() as service:
        task = service.create_task(tmp_path)
        session = service.create_session(task.task_id, "scripted")
        run = await service.start_turn(session.session_id, "read a.txt")
        await service.wait_idle(session.session_id)

        events = service.log.read(session.session_id)
        check_events(events)
        view = project(events)
        assert view.status == "completed"
        assert view.tool_calls[0].output == "hello from a.txt"
        [record] = service.runs(session.session_id)
        assert (record.run_id, record.status, record.prompt) == (
            run.run_id,
            "completed",
            "read a.txt",
        )
        checkpoint = service.session(session.session_id).checkpoint
        assert checkpoint == Checkpoint(
            resume=starts_session(events),
            run_id=run.run_id,
            seq=len(events),
        )


@pytest.mark.anyio
async def test_a_new_turn_keeps_the_session_and_gets_a_fresh_run_id(tmp_path: Path) -> None:
    host = Host(tmp_path / "host.db", {"scripted": scripted("happy_path", "happy_path")})
    async with host.running() as service:
        session = service.create_session(service.create_task(tmp_path).task_id, "scripted")
        first = await service.start_turn(session.session_id, "one")
        await service.wait_idle(session.session_id)
        second = await service.start_turn(session.session_id, "two")
        await service.wait_idle(session.session_id)

        events = service.log.read(session.session_id)
        starts = [e for e in events if isinstance(e, RunStarted)]
        assert first.run_id != second.run_id
        assert [s.run_id for s in starts] == [first.run_id, second.run_id]
        assert starts[0].session_id == starts[1].session_id
        [provider] = host.made
        assert isinstance(provider, ScriptedProvider)
        assert [c.resume for c in provider.calls if isinstance(c, Started)] == [
            None,
            starts[0].session_id,
        ]


@pytest.mark.anyio
async def test_an_approval_is_answered_through_the_service(tmp_path: Path) -> None:
    host = Host(tmp_path / "host.db", {"scripted": scripted("needs_approval")})
    async with host.running() as service:
        session = service.create_session(service.create_task(tmp_path).task_id, "scripted")
        await service.start_turn(session.session_id, "clean up")
        request = await wait_for_event(service, session.session_id, "approval.requested")
        assert isinstance(request, ApprovalRequested)
        assert project(service.log.read(session.session_id)).status == "awaiting_approval"

        await service.respond(session.session_id, request.request_id, "allow")
        await service.wait_idle(session.session_id)

        view = project(service.log.read(session.session_id))
        assert view.status == "completed"
        assert view.pending_approvals == ()


@pytest.mark.anyio
async def test_a_provider_that_raises_mid_turn_becomes_run_crashed_and_the_session_lives_on(
    tmp_path: Path,
) -> None:
    def breaking() -> AgentProvider:
        turns = scenarios.build("happy_path").turns * 2
        return BreakingProvider(Script(turns=turns), break_after=3)

    host = Host(tmp_path / "host.db", {"breaking": breaking})
    async with host.running() as service:
        session = service.create_session(service.create_task(tmp_path).task_id, "breaking")
        crashed = await service.start_turn(session.session_id, "one")
        await service.wait_idle(session.session_id)
        assert service.session(session.session_id).checkpoint is None
        completed = await service.start_turn(session.session_id, "two")
        await service.wait_idle(session.session_id)

        by_run = runs_of(service.log.read(session.session_id))
        check_events(by_run[crashed.run_id])
        check_events(by_run[completed.run_id])
        last = by_run[crashed.run_id][-1]
        assert isinstance(last, RunCrashed)
        assert "the provider raised ProviderBroke" in last.message
        assert [r.status for r in service.runs(session.session_id)] == ["crashed", "completed"]


@pytest.mark.anyio
async def test_an_adapter_emitting_a_bad_event_crashes_its_run_and_the_log_stays_readable(
    tmp_path: Path,
) -> None:
    def corrupting() -> AgentProvider:
        turns = scenarios.build("happy_path").turns * 2
        return CorruptingProvider(Script(turns=turns), corrupt_after=2)

    host = Host(tmp_path / "host.db", {"corrupting": corrupting})
    async with host.running() as service:
        session = service.create_session(service.create_task(tmp_path).task_id, "corrupting")
        bad = await service.start_turn(session.session_id, "one")
        await service.wait_idle(session.session_id)
        good = await service.start_turn(session.session_id, "two")
        await service.wait_idle(session.session_id)
    async with host.running() as service:  # a restarted host reads the session back
        events = service.log.read(session.session_id)
        by_run = runs_of(events)
        check_events(by_run[bad.run_id])
        check_events(by_run[good.run_id])
        last = by_run[bad.run_id][-1]
        assert isinstance(last, RunCrashed)
        assert last.kind == "protocol"
        assert "events[0] (message.delta) field 'ts'" in last.message
        assert len(by_run[bad.run_id]) == 3  # run.started, one delta, then the crash
        assert project(events).runs[-1].status == "completed"
        assert [r.status for r in service.runs(session.session_id)] == ["crashed", "completed"]


@pytest.mark.parametrize(("second", "status"), [("crash_mid_turn", "crashed"), ("stuck", "killed")])
@pytest.mark.anyio
async def test_only_a_completed_run_writes_the_checkpoint(
    tmp_path: Path, second: str, status: str
) -> None:
    host = Host(tmp_path / "host.db", {"scripted": scripted("happy_path", second)})
    async with host.running() as service:
        session = service.create_session(service.create_task(tmp_path).task_id, "scripted")
        await service.start_turn(session.session_id, "one")
        await service.wait_idle(session.session_id)
        committed = service.session(session.session_id).checkpoint
        assert committed is not None

        await service.start_turn(session.session_id, "two")
        if second == "stuck":
            await wait_for_event(service, session.session_id, "run.started")
            await service.interrupt(session.session_id)
        await service.wait_idle(session.session_id)

        assert [r.status for r in service.runs(session.session_id)] == ["completed", status]
    # read back through a fresh store: the real serializer, the real file
    store = SessionStore(tmp_path / "host.db")
    try:
        stored = store.get(SessionRecord, session.session_id)
        assert stored is not None
        assert stored.checkpoint == committed
    finally:
        store.close()


@pytest.mark.anyio
async def test_after_a_host_restart_a_session_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "host.db"
    first_host = Host(path, {"scripted": scripted("happy_path")})
    async with first_host.running() as service:
        session = service.create_session(service.create_task(tmp_path).task_id, "scripted")
        await service.start_turn(session.session_id, "one")
        await service.wait_idle(session.session_id)
        checkpoint = service.session(session.session_id).checkpoint
        assert checkpoint is not None

    second_host = Host(path, {"scripted": scripted("happy_path")})
    async with second_host.running() as service:
        await service.start_turn(session.session_id, "two")
        await service.wait_idle(session.session_id)
        [provider] = second_host.made
        assert isinstance(provider, ScriptedProvider)
        assert provider.calls[0] == Started(
            run_id=service.runs(session.session_id)[-1].run_id,
            prompt="two",
            resume=checkpoint.resume,
        )
        starts = [e for e in service.log.read(session.session_id) if isinstance(e, RunStarted)]
        assert {s.session_id for s in starts} == {checkpoint.resume}


@pytest.mark.anyio
async def test_stopping_the_host_abandons_a_running_turn_without_touching_the_checkpoint(
    tmp_path: Path,
) -> None:
    path = tmp_path / "host.db"
    host = Host(path, {"stuck": lambda: StuckProvider()})
    async with host.running() as service:
        session = service.create_session(service.create_task(tmp_path).task_id, "stuck")
        await service.start_turn(session.session_id, "hang")
        await wait_for_event(service, session.session_id, "run.started")

    async with host.running() as service:
        [record] = service.runs(session.session_id)
        assert record.status == "abandoned"
        events = service.log.read(session.session_id)
        check_events(events)
        assert events[-1].type == "run.killed"
        assert service.session(session.session_id).checkpoint is None


@pytest.mark.anyio
async def test_a_host_that_died_mid_turn_is_repaired_by_the_next_one(tmp_path: Path) -> None:
    path = tmp_path / "host.db"
    log, store = SqliteEventLog(path), SessionStore(path)
    session_id = "session-x"
    store.put(TaskRecord(task_id="task-x", workdir=str(tmp_path), created_at=1.0))
    store.put(SessionRecord(session_id=session_id, task_id="task-x", provider="p", created_at=1.0))
    store.put(
        RunRecord(
            run_id="run-x", session_id=session_id, prompt="p", status="running", started_at=1.0
        )
    )
    log.append(session_id, [RunStarted(run_id="run-x", ts=1.0, session_id="t", provider="p")])
    log.close()
    store.close()  # the host "died" here: the run is still marked running

    async with Host(path, {}).running() as service:
        assert [r.status for r in service.runs(session_id)] == ["abandoned"]
        check_events(service.log.read(session_id))


@pytest.mark.anyio
async def test_bad_requests_are_refused_with_actionable_errors(tmp_path: Path) -> None:
    host = Host(tmp_path / "host.db", {"stuck": lambda: StuckProvider()})
    async with host.running() as service:
        with pytest.raises(UsageError, match="workdir must be an absolute path, got 'rel/dir'"):
            service.create_task("rel/dir")
        task = service.create_task(tmp_path)
        with pytest.raises(UsageError, match=r"no provider named 'nope' .*known: stuck"):
            service.create_session(task.task_id, "nope")
        with pytest.raises(UsageError, match="no task 'task-404'"):
            service.create_session("task-404", "stuck")
        session = service.create_session(task.task_id, "stuck")
        with pytest.raises(UsageError, match="has no running turn"):
            await service.interrupt(session.session_id)
        await service.start_turn(session.session_id, "hang")
        with pytest.raises(UsageError, match="is still running"):
            await service.start_turn(session.session_id, "again")
        await service.close_session(session.session_id)
        with pytest.raises(UsageError, match="is closed"):
            await service.start_turn(session.session_id, "after close")
        assert service.runs(session.session_id)[0].status == "killed"


@pytest.mark.anyio
async def test_a_subscriber_away_across_a_rollback_and_reappend_is_told_where_to_resume(
    session_service: SessionService, log_seam: LogSeam
) -> None:
    seeded = log_seam.seed()
    log_seam.publish(seeded, *["message.delta"] * 4)  # seqs 1..5
    async with session_service as host:
        first = host.subscribe(seeded.session_id)
        with anyio.fail_after(5):
            seen = [await first.__anext__() for _ in range(5)]
        held = (first.epoch, first.cursor)
        await first.aclose()
        log_seam.rollback(seeded, 2)
        log_seam.publish(seeded, "tool.started", "tool.completed", "message.delta")

        assert held == (0, 5)
        with pytest.raises(StaleCursor, match="rolled back to seq 2") as info:
            host.subscribe(seeded.session_id, after=5, epoch=0)
        assert info.value.resume_at == 2
        again = host.subscribe(seeded.session_id, after=info.value.resume_at, epoch=0)
        with anyio.fail_after(5):
            rest = [await again.__anext__() for _ in range(3)]
        await again.aclose()

    assert [e.type for e in rest] == ["tool.started", "tool.completed", "message.delta"]
    assert seen[:2] + rest == host.log.read(seeded.session_id)
    assert (again.epoch, again.cursor) == (1, 5)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("cancel", "says"),
    [
        ("ends", "timed out: the turn ran past the host's turn_timeout of 0.05 s"),
        (
            "ignored",
            "timed out: the turn ran past the host's turn_timeout of 0.05 s (the provider's "
            "did not end the run within 0.05 s; the host ended it)",
        ),
        (
            "blocks",
            "timed out: the turn ran past the host's turn_timeout of 0.05 s (the provider's "
            "did not end the run within 0.05 s; the host ended it)",
        ),
    ],
)
async def test_a_turn_past_its_timeout_ends_killed_whatever_its_provider_does(
    cancel: str, says: str
) -> None:
    store = SessionStore(":memory:")
    log = MemoryEventLog()
    providers = {"stuck": lambda: StuckProvider(cancel=cancel)}  # type: ignore[arg-type]
    try:
        async with SessionService(
            log=log, store=store, providers=providers, turn_timeout=0.05, cancel_grace=0.05
        ) as service:
            task = service.create_task("/work")
            session = service.create_session(task.task_id, "stuck").session_id
            await service.start_turn(session, "hang")
            await service.wait_idle(session)
            assert [r.status for r in service.runs(session)] == ["killed"]
        events = log.read(session)
        check_events(events)
        assert [e.type for e in events] == ["run.started", "run.killed"]
        assert events[-1].reason == says  # type: ignore[union-attr]
    finally:
        store.close()


@pytest.mark.anyio
async def test_an_interrupt_that_blocks_does_not_hang_the_caller() -> None:
    store = SessionStore(":memory:")
    log = MemoryEventLog()
    providers = {"stuck": lambda: StuckProvider(cancel="blocks")}
    try:
        async with SessionService(
            log=log, store=store, providers=providers, cancel_grace=0.05
        ) as service:
            task = service.create_task("/work")
            session = service.create_session(task.task_id, "stuck").session_id
            await service.start_turn(session, "hang")
            await wait_for_event(service, session, "run.started")
            await service.interrupt(session, "user pressed stop")
            await service.wait_idle(session)
        assert log.read(session)[-1].reason == (  # type: ignore[union-attr]
            "user pressed stop (the provider's interrupt() did not return within 0.05 s; "
            "the host ended it)"
        )
    finally:
        store.close()


class ClosingCounted(ScriptedProvider):
    """A scripted provider that records that it was closed."""

    closed_count = 0

    async def aclose(self) -> None:
        ClosingCounted.closed_count += 1
        await super().aclose()


@pytest.mark.anyio
async def test_sessions_never_closed_keep_only_a_bounded_number_of_providers_open() -> None:
    # sessions whose clients went away without `close`: their providers (the per-session
    # memory) are closed beyond max_idle_providers, least recently used first, and a session
    # whose provider went resumes from its checkpoint with a new one (issue #33)
    turns = tuple(scenarios.build("happy_path").turns) * 2
    made: list[ClosingCounted] = []

    def factory() -> AgentProvider:
        made.append(ClosingCounted(Script(turns=turns)))
        return made[-1]

    ClosingCounted.closed_count = 0
    store = SessionStore(":memory:")
    log = MemoryEventLog()
    try:
        async with SessionService(
            log=log, store=store, providers={"s": factory}, max_idle_providers=4
        ) as service:
            task = service.create_task("/work")
            sessions = [service.create_session(task.task_id, "s").session_id for _ in range(60)]
            for session in sessions:
                await service.start_turn(session, "one")
                await service.wait_idle(session)
                assert service.open_providers() <= 5  # the cap, plus the one just used
            assert len(made) == 60
            assert ClosingCounted.closed_count == 60 - service.open_providers()
            first = sessions[0]  # its provider was closed long ago: a new one resumes it
            await service.start_turn(first, "two")
            await service.wait_idle(first)
            assert [r.status for r in service.runs(first)] == ["completed", "completed"]
            calls = [c for c in made[-1].calls if isinstance(c, Started)]
            assert calls[0].resume == starts_session(log.read(first))
    finally:
        store.close()
