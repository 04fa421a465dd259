"""The Requests and Cassettes views in a real Chromium: rows as requests arrive, filter and
search; a transcript with its timing bar and a side-by-side diff."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from stuntset.browser.snapshot import PageSnapshot
from stuntset.cassettes.format import (
    Cassette,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    dumps_cassette,
)
from stuntset.console.testing import ConsoleServer

expect = pytest.importorskip("playwright.sync_api").expect

CHAT = {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}], "stream": True}
MESSAGES = {
    "model": "claude-x",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "hi"}],
    "stream": True,
}


def send(console: ConsoleServer) -> None:
    stand_in = console.stand_in
    httpx.post(stand_in.url("openai") + "/chat/completions", json=CHAT)
    limited = stand_in.url("openai", scenario="rate_limited")
    httpx.post(limited + "/chat/completions", json={**CHAT, "stream": False})
    httpx.post(
        stand_in.url("anthropic", scenario="happy_path") + "/v1/messages",
        json=MESSAGES,
        headers={"anthropic-version": "2023-06-01", "x-api-key": "sk-test"},
    )


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


def interaction(number: int, words: list[str], times: list[float]) -> Interaction:
    frames = [
        Frame(t=t, data='{"choices":[{"delta":{"content":"%s"},"index":0}]}' % word)
        for word, t in zip(words, times, strict=True)
    ]
    frames.append(Frame(t=times[-1] + 0.01, data="[DONE]"))
    return Interaction(
        id=f"i-{number}",
        wire="openai.chat",
        request=RecordedRequest(
            method="POST", path="/v1/chat/completions", body={**CHAT, "model": "gpt-x"}
        ),
        response=RecordedResponse(
            status=200, headers={"content-type": "text/event-stream"}, frames=frames
        ),
    )


def write_cassettes(folder: Path) -> None:
    old = Cassette(interactions=[interaction(1, ["Hello", " there"], [0.25, 0.3])])
    new = Cassette(interactions=[interaction(1, ["Hello", " world", "!"], [0.1, 0.15, 0.9])])
    (folder / "old.jsonl").write_bytes(dumps_cassette(old))
    (folder / "new.jsonl").write_bytes(dumps_cassette(new))
    (folder / "notes.txt").write_text("not a cassette")


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
    page.goto(console.url("/cassettes"))
    page.get_by_label("Old").select_option("old.jsonl")
    page.get_by_label("New").select_option("new.jsonl")
    page.get_by_role("button", name="Compare").click()
    expect(page.get_by_role("heading", name="What changed")).to_be_visible()
    page_snapshot.check("diff")
