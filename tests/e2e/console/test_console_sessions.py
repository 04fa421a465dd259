"""The Sessions view in a real Chromium: a session's timeline for every catalog scenario,
a resume from the cursor after the WebSocket drops, loses or reorders frames, and a
rollback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stuntset import scenarios
from stuntset.browser import WebSocketGate
from stuntset.browser.snapshot import PageSnapshot
from stuntset.console.testing import ConsoleServer, play_session

expect = pytest.importorskip("playwright.sync_api").expect

# the pages carry their token in every link (never a cookie): the snapshots name it so
pytestmark = pytest.mark.page_snapshot(normalize={r"token=[\w-]+": "token=<token>"})


def painted(page: Any, seq: int) -> None:
    """Wait until the page has painted the event ``seq`` (and no later one). Playwright's
    ``expect`` (not ``wait_for_function``: the console's CSP forbids eval)."""
    expect(page.locator("#timeline")).to_have_attribute("data-seq", str(seq), timeout=10_000)
    expect(page.locator("#connection")).to_have_text(f"live · {seq} event(s)")


def undisturbed(scenario: str) -> str:
    """The committed snapshot of ``scenario``'s session page, undisturbed."""
    name = f"test_session_view_of_each_catalog_scenario-{scenario}.session.aria.yml"
    return (Path(__file__).parent / "snapshots" / Path(__file__).stem / name).read_text()


def open_session(snap: PageSnapshot, console: ConsoleServer, session_id: str, seq: int) -> None:
    snap.page.goto(console.login_url(f"/sessions/{session_id}"))
    painted(snap.page, seq)


@pytest.mark.parametrize("scenario", scenarios.names())
def test_session_view_of_each_catalog_scenario(
    scenario: str, console: ConsoleServer, page_snapshot: PageSnapshot, tmp_path: Path
) -> None:
    session_id, seq = play_session(console, scenario, tmp_path)
    open_session(page_snapshot, console, session_id, seq)
    timeline = page_snapshot.page.locator("#timeline")
    assert timeline.get_attribute("data-state") in ("completed", "crashed", "killed")
    page_snapshot.check("session")


def test_session_view_resumes_from_its_cursor_after_the_socket_drops(
    console: ConsoleServer, page_snapshot: PageSnapshot, tmp_path: Path
) -> None:
    session_id, seq = play_session(console, "tool_use", tmp_path)
    page = page_snapshot.page
    gate = WebSocketGate(page)
    gate.disconnect_after(4)  # the subscribe's reply and three events, then the line drops
    open_session(page_snapshot, console, session_id, seq)
    assert gate.disconnects == 1
    assert gate.connections == 2
    assert page.locator("#timeline").get_attribute("data-reconnects") == "1"
    # every event painted once: the same page as the undisturbed one
    assert page_snapshot.aria() + "\n" == undisturbed("tool_use")


def test_session_view_resubscribes_when_a_frame_is_lost(
    console: ConsoleServer, page_snapshot: PageSnapshot, tmp_path: Path
) -> None:
    session_id, seq = play_session(console, "tool_use", tmp_path)
    page = page_snapshot.page
    gate = WebSocketGate(page)
    gate.drop(1, when=lambda frame: '"seq":5,' in frame)
    open_session(page_snapshot, console, session_id, seq)
    assert gate.dropped == 1
    assert gate.connections == 2
    assert page.locator("#timeline").get_attribute("data-resyncs") == "1"
    assert page_snapshot.aria() + "\n" == undisturbed("tool_use")


def test_session_view_resubscribes_when_frames_come_out_of_order(
    console: ConsoleServer, page_snapshot: PageSnapshot, tmp_path: Path
) -> None:
    session_id, seq = play_session(console, "happy_path", tmp_path)
    page = page_snapshot.page
    gate = WebSocketGate(page)
    gate.hold()
    page.goto(console.login_url(f"/sessions/{session_id}"))
    expect(page.locator("#timeline")).to_have_attribute("data-connected", "true")
    gate.wait_for(lambda: gate.held == seq + 1)  # the reply to subscribe and every event
    assert gate.release(reverse=True) == seq + 1
    painted(page, seq)
    assert page.locator("#timeline").get_attribute("data-resyncs") == "1"
    assert page_snapshot.aria() + "\n" == undisturbed("happy_path")


def test_session_view_shows_a_rollback(
    console: ConsoleServer, page_snapshot: PageSnapshot, tmp_path: Path
) -> None:
    session_id, seq = play_session(console, "tool_use", tmp_path)
    open_session(page_snapshot, console, session_id, seq)
    console.service.log.rollback(session_id, 4)
    page = page_snapshot.page
    expect(page.locator("#notice")).to_have_text(
        "The session was rolled back to event 4; what came after it is gone."
    )
    painted(page, 4)
    page_snapshot.check("rolled-back")
