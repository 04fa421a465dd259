"""The console's screenshots in the README (docs/img/console-*.png) are made here.

With ``STUNTSET_SNAPSHOT_UPDATE=1`` (never in CI) they are rewritten from the pages as they
are now. Otherwise each must exist, be a PNG of the size this test makes, and be referenced
by the README; pixels are not compared (fonts and anti-aliasing differ between machines):
the pages' content is guarded by their ARIA snapshots in the other console tests.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import httpx
import pytest
from _console_helpers import send, write_cassettes

from stuntset.browser.snapshot import PageSnapshot, update_requested
from stuntset.console.testing import ConsoleServer, play_session

expect = pytest.importorskip("playwright.sync_api").expect

ROOT = Path(__file__).parents[3]
IMAGES = ROOT / "docs" / "img"
SIZE = (1100, 640)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.page_snapshot(viewport=SIZE)
def test_readme_screenshots_of_the_console(
    console: ConsoleServer, page_snapshot: PageSnapshot, tmp_path: Path
) -> None:
    send(console)
    assert console.cassettes is not None
    write_cassettes(console.cassettes)
    session_id, seq = play_session(console, "needs_approval", tmp_path)
    page = page_snapshot.page
    shots: dict[str, bytes] = {}
    page.goto(console.login_url("/requests"))
    page.locator("tr.request").nth(2).locator("summary").click()
    shots["console-requests.png"] = page.screenshot()
    page.goto(console.login_url(f"/sessions/{session_id}"))
    expect(page.locator("#timeline")).to_have_attribute("data-seq", str(seq))
    shots["console-sessions.png"] = page.screenshot()
    page.goto(console.login_url("/cassettes/diff?a=old.jsonl&b=new.jsonl"))
    shots["console-cassettes.png"] = page.screenshot()
    httpx.get(console.url("/cassettes"))  # (the view list stays reachable)
    readme = (ROOT / "README.md").read_text()
    write = update_requested() and not os.environ.get("CI")
    for name, data in shots.items():
        target = IMAGES / name
        if write:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        assert target.exists(), f"{target} is missing: run with STUNTSET_SNAPSHOT_UPDATE=1"
        assert png_size(target.read_bytes()) == png_size(data) == SIZE
        assert f"docs/img/{name}" in readme, f"README.md does not show docs/img/{name}"
