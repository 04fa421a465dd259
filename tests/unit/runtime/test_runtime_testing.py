"""Builders, the log seam and the scenario registry."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from stuntset import check_events
from stuntset.errors import UsageError
from stuntset.events import MessageDelta
from stuntset.log import SqliteEventLog, project
from stuntset.runtime import RunRecord, SessionRecord, SessionService, SessionStore, TaskRecord
from stuntset.runtime.testing import (
    LogSeam,
    build_event,
    build_run,
    build_session,
    build_task,
    scenario_registry,
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    store = SessionStore(tmp_path / "host.db")
    yield store
    store.close()


def test_a_session_builder_lays_down_its_task_with_an_absolute_workdir(
    store: SessionStore,
) -> None:
    session = build_session(store, provider="tool_use")

    task = store.get(TaskRecord, session.task_id)
    assert task is not None
    assert Path(task.workdir).is_absolute()
    assert store.get(SessionRecord, session.session_id) == session
    assert session.provider == "tool_use"


def test_a_run_builder_lays_down_session_and_task_and_overrides_win(store: SessionStore) -> None:
    run = build_run(store, prompt="do it", status="completed")

    assert (run.prompt, run.status) == ("do it", "completed")
    assert store.all(RunRecord) == [run]
    assert len(store.all(SessionRecord)) == len(store.all(TaskRecord)) == 1
    assert build_task(workdir="/srv/x").workdir == "/srv/x"
    with pytest.raises(UsageError, match="workdir must be absolute, got 'x'"):
        build_task(workdir="x")


def test_build_event_fills_defaults_and_names_mistakes() -> None:
    event = build_event("message.delta", text="hi")
    assert isinstance(event, MessageDelta)
    assert (event.run_id, event.item_id, event.text) == ("run-1", "msg-1", "hi")
    with pytest.raises(UsageError, match=r"unknown event type 'message.sent'; known: run.started"):
        build_event("message.sent")
    with pytest.raises(UsageError, match=r"build_event\('usage'\): Expected `int`"):
        build_event("usage", input_tokens="many")


def test_the_log_seam_seeds_publishes_finishes_and_rolls_back(
    tmp_path: Path, store: SessionStore
) -> None:
    log = SqliteEventLog(tmp_path / "host.db")
    seam = LogSeam(log, store)
    seeded = seam.seed(provider="happy_path")
    seam.publish(
        seeded, "message.delta", build_event("message.delta", run_id=seeded.run_id, text="!")
    )
    assert project(log.read(seeded.session_id)).messages[0].text == "Hello!"

    terminal = seam.finish(seeded)
    check_events(log.read(seeded.session_id))
    session = store.get(SessionRecord, seeded.session_id)
    assert session is not None
    assert session.checkpoint is not None
    assert session.checkpoint.seq == terminal.seq
    assert store.all(RunRecord)[0].status == "completed"

    assert seam.rollback(seeded, 1) == 3
    assert project(log.read(seeded.session_id)).status == "running"
    log.close()


@pytest.mark.anyio
async def test_the_scenario_registry_drives_a_service_for_many_turns(
    tmp_path: Path, store: SessionStore
) -> None:
    log = SqliteEventLog(tmp_path / "host.db")
    async with SessionService(log=log, store=store, providers=scenario_registry()) as host:
        session = host.create_session(host.create_task(tmp_path).task_id, "happy_path")
        for prompt in ("one", "two", "three"):
            await host.start_turn(session.session_id, prompt)
            await host.wait_idle(session.session_id)
        assert [r.status for r in host.runs(session.session_id)] == ["completed"] * 3
    log.close()
