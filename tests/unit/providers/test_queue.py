from __future__ import annotations

import anyio
import pytest

from stuntset.events import RunCompleted, RunStarted
from stuntset.providers._queue import EventQueue

pytestmark = pytest.mark.anyio


async def test_get_waits_for_put_and_ends_after_the_last_event() -> None:
    queue = EventQueue()
    started = RunStarted(run_id="r", ts=0, session_id="s", provider="p")
    done = RunCompleted(run_id="r", ts=0)
    got = []
    async with anyio.create_task_group() as group:

        async def consume() -> None:
            while (event := await queue.get()) is not None:
                got.append(event)

        group.start_soon(consume)
        await anyio.lowlevel.checkpoint()
        queue.put(started)
        queue.put(done)
        queue.end()
    assert got == [started, done]
    assert await queue.get() is None
