"""The Requests and Cassettes views in a real Chromium: rows as requests arrive, filter and
search; a transcript with its timing bar and a side-by-side diff."""

from __future__ import annotations

import httpx
import pytest
from _console_helpers import CHAT, send, write_cassettes

from stuntset.browser.snapshot import PageSnapshot
from stuntset.console.testing import ConsoleServer

expect = pytest.importorskip("playwright.sync_api").expect

# the pages carry their token in every link (never a cookie): the snapshots name it so
pytestmark = pytest.mark.page_snapshot(normalize={r"token=[\w-]+": "token=<token>"})


def test_requests_view_lists_filters_and_follows_the_journal(
    console: ConsoleServer, page_snapshot: PageSnapshot
) -> None:
    send(console)
    page = page_snapshot.page
    page.goto(console.login_url("/requests"))
    page_snapshot.check("requests")
    count = page.locator("#request-count")
    page.locator("#request-search").fill("rate_limit")
    expect(count).to_have_text("1 request(s) of 3")
    page.locator("#request-search").fill("")
    page.locator("#request-state").select_option("failed")
    expect(count).to_have_text("1 request(s) of 3")
    page.locator("#request-state").select_option("")
    page.locator("#request-wire").select_option("anthropic-messages")
    expect(count).to_have_text("1 request(s) of 3")
    page.locator("#request-wire").select_option("")
    httpx.post(console.stand_in.url("openai") + "/chat/completions", json=CHAT)
    expect(count).to_have_text("4 request(s)")  # fetched live, without a reload
    page.locator("tr.request").first.locator("summary").click()
    expect(page.locator("tr.request").first.locator("ol.frames li").first).to_contain_text(
        "+0 B · 0 ms"
    )


def test_cassettes_view_lists_shows_timing_and_diffs(
    console: ConsoleServer, page_snapshot: PageSnapshot
) -> None:
    assert console.cassettes is not None
    write_cassettes(console.cassettes)
    page = page_snapshot.page
    page.goto(console.login_url("/cassettes"))
    page_snapshot.check("list")
    page.get_by_role("link", name="new.jsonl").click()
    bar = page.get_by_role("img")
    expect(bar).to_have_attribute(
        "aria-label",
        "time to first frame 100.0 ms, 4 frames over 910.0 ms, largest gap 750.0 ms",
    )
    page_snapshot.check("show")
    page.get_by_role("link", name="all cassettes").click()  # the link carries the token on
    page.get_by_label("Old").select_option("old.jsonl")
    page.get_by_label("New").select_option("new.jsonl")
    page.get_by_role("button", name="Compare").click()
    expect(page.get_by_role("heading", name="What changed")).to_be_visible()
    page_snapshot.check("diff")
