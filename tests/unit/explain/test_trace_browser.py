"""A kept trace opens in a real Chromium, offline from its file and from the trace viewer, and
a row expands to what the double saw. Skipped, saying why, where no Chromium is found."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stuntset.explain.row import Row
from stuntset.explain.trace import write_trace
from stuntset.explain.viewer import TraceViewer

ROWS = [
    Row(
        0.01,
        "model",
        "#0 POST /v1/chat/completions [openai-chat, turn 0] -> 429, 127 B",
        {"status": 429, "request": {"messages": [{"role": "user", "content": "the question"}]}},
    ),
    Row(0.02, "model", "#1 POST /v1/chat/completions [openai-chat, retry 1] -> 429, 127 B"),
    Row(None, "model", "never used: turn 1: [text, usage]"),
]


def _check(page: Any) -> None:
    rows = page.get_by_role("list", name="timeline").get_by_role("listitem")
    assert rows.count() == 3
    assert "retry 1" in rows.nth(1).inner_text()
    detail = page.get_by_text("the question")
    assert not detail.is_visible()
    rows.nth(0).locator("summary").click()
    assert detail.is_visible()


def test_a_trace_opens_offline_in_chromium(stuntset_browser: Any, tmp_path: Path) -> None:
    html, _ = write_trace(tmp_path / "trace", "t.py::test_x", "failed", ROWS)
    page = stuntset_browser.new_page()
    try:
        asked: list[str] = []
        page.on("request", lambda request: asked.append(request.url))
        page.goto(html.as_uri())
        assert page.title() == "stuntset trace: t.py::test_x"
        _check(page)
        assert asked == [html.as_uri()]  # nothing fetched beside the file itself
    finally:
        page.close()


def test_a_trace_opens_from_the_viewer_in_chromium(stuntset_browser: Any, tmp_path: Path) -> None:
    _, jsonl = write_trace(tmp_path / "trace", "t.py::test_x", "failed", ROWS)
    page = stuntset_browser.new_page()
    try:
        with TraceViewer(jsonl) as viewer:
            page.goto(viewer.url)
            _check(page)
    finally:
        page.close()
