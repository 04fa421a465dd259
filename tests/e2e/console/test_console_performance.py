"""The session view keeps up with a 10,000-event session: no more than 1 s from append to
paint, measured with the real browser and real time (the issue's stated requirement, so it
is asserted here rather than in bench/).

What is measured: the wall-clock time from the moment ``append`` is called (this process,
``time.time()``; the append's own time counts) to the animation frame in which the page put the append's last event into
the DOM (the page's ``performance.timeOrigin + performance.now()``: the same machine's wall
clock; the frame is painted right after that callback). 10,000 events go in as 100 appends
of 100 (deltas, and a tool card every 100 events), each append made once the previous one is
painted; then one more event is appended to the 10,000-event timeline. A burst of 1,000
events in one append is slower: the daemon sends one WebSocket frame per event (~0.35 ms
each on this machine), measured at 0.7-1.4 s on a loaded 2-core machine; not asserted.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from stuntset.browser.snapshot import PageSnapshot
from stuntset.console.testing import ConsoleServer
from stuntset.runtime.testing import build_event

expect = pytest.importorskip("playwright.sync_api").expect

APPENDS, PER_APPEND = 100, 100


def batch(run_id: str, number: int) -> list[Any]:
    events = [
        build_event("message.delta", run_id=run_id, item_id=f"m-{number}", text="word ")
        for _ in range(PER_APPEND - 1)
    ]
    call = f"call-{number}"
    events.append(build_event("tool.started", run_id=run_id, tool_call_id=call, name="grep"))
    return events


@pytest.mark.timeout(240)  # ~25 s alone; far longer on a loaded 2-core machine
def test_ten_thousand_events_each_painted_within_a_second_of_their_append(
    console: ConsoleServer, page_snapshot: PageSnapshot, tmp_path: Path
) -> None:
    with console.client() as client:
        task = client.call("create_task", workdir=str(tmp_path))
        session_id = client.call("create_session", task_id=task["task_id"], provider="stuck")[
            "session_id"
        ]
        run_id = client.call("start_turn", session_id=session_id, prompt="go")["run_id"]
        page = page_snapshot.page
        page.goto(console.login_url(f"/sessions/{session_id}"))
        timeline = page.locator("#timeline")
        expect(timeline).to_have_attribute("data-seq", "1")  # run.started
        log = console.service.log

        def append_and_paint(events: list[Any]) -> float:
            appended = time.time()  # when append is called: its own time counts too
            [*_, last] = log.append(session_id, events)
            expect(timeline).to_have_attribute("data-seq", str(last.seq), timeout=10_000)
            return float(timeline.get_attribute("data-painted") or "nan") / 1000 - appended

        started = time.time()
        latencies = [append_and_paint(batch(run_id, number)) for number in range(APPENDS)]
        total = time.time() - started
        one_more = append_and_paint(
            [build_event("message.delta", run_id=run_id, item_id="last", text="one more")]
        )
        client.call("interrupt", session_id=session_id, reason="done")
    worst = max(latencies)
    print(
        f"\n{APPENDS} x {PER_APPEND} events: append-to-paint worst {worst * 1000:.0f} ms, mean "
        f"{sum(latencies) / len(latencies) * 1000:.0f} ms, all in {total:.1f} s; one more on "
        f"the 10,000-event page: {one_more * 1000:.0f} ms"
    )
    assert all(latency >= 0 for latency in [*latencies, one_more])  # one clock, in order
    assert worst <= 1.0, f"append-to-paint {worst:.3f} s > 1 s: {latencies}"
    assert one_more <= 1.0, f"append-to-paint on a 10,000-event page: {one_more:.3f} s > 1 s"
    assert page.locator("#timeline > li.tool").count() == APPENDS
