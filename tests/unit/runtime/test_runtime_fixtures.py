"""The host fixtures of the pytest plugin: ``log_seam``, ``session_service`` (``daemon`` is
exercised by tests/e2e)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from stuntset import check_events
from stuntset.events import InputRequested
from stuntset.log import SqliteEventLog, project
from stuntset.runtime import SessionService
from stuntset.runtime.testing import LogSeam


def test_log_seam_sets_up_state_without_a_provider(
    log_seam: LogSeam, event_log: SqliteEventLog
) -> None:
    seeded = log_seam.seed()
    log_seam.publish(seeded, "tool.started", "tool.completed")
    log_seam.finish(seeded, "crashed")

    events = event_log.read(seeded.session_id)
    check_events(events)
    view = project(events)
    assert (view.status, view.tool_calls[0].output) == ("crashed", "ok")


@pytest.mark.anyio
async def test_session_service_runs_catalog_scenarios_by_name(
    session_service: SessionService, tmp_path: Path
) -> None:
    async with session_service as host:
        session = host.create_session(host.create_task(tmp_path).task_id, "input_request")
        await host.start_turn(session.session_id, "deploy")
        subscription = host.subscribe(session.session_id)
        with anyio.fail_after(5):
            async for event in subscription:
                if isinstance(event, InputRequested):
                    await host.respond(session.session_id, event.request_id, "main")
                if event.type == "run.completed":
                    break
        await subscription.aclose()
        await host.wait_idle(session.session_id)
        check_events(host.log.read(session.session_id))
