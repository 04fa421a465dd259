"""Trace files: the JSONL and the self-contained HTML page carry the same records, load back,
and bad files are one clear error naming the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from stuntset.errors import UsageError
from stuntset.explain.row import Row
from stuntset.explain.trace import load_trace, render_trace_html, trace_lines, write_trace

ROWS = [
    Row(
        0.012,
        "model",
        "#0 POST /v1/chat/completions -> 429",
        {"status": 429, "request": {"messages": [{"content": "</script><b>x</b>"}]},
         "body": "data: {\"a\":1}\n\ndata: {\"a\":2}\n\n", "streaming": True},
    ),
    Row(0.5, "claude", "pid 7 `claude -p hi` -> exit 1", {"argv": ["-p", "hi"], "stdin": [],
        "stdout": [{"type": "system"}], "stderr": "boom"}, pending=True),
    Row(None, "model", "never used: turn 1: [text]"),
]  # fmt: skip


def test_the_page_and_the_jsonl_hold_the_same_records(tmp_path: Path) -> None:
    page, jsonl = write_trace(tmp_path / "traces" / "t", "t.py::test_x", "failed", ROWS)
    assert load_trace(page) == load_trace(jsonl) == trace_lines("t.py::test_x", "failed", ROWS)
    text = page.read_text()
    # self-contained: nothing fetched, and what the client sent cannot break out of the page
    assert "<script src" not in text
    assert "<link" not in text
    assert "http" not in text.replace("http_", "")
    assert "</script><b>" not in text
    assert "reply: 2 frames" in text
    assert 'class="pending"' in text


def test_rows_render_in_order_with_their_times() -> None:
    page = render_trace_html(trace_lines("t", "failed", ROWS))
    assert page.index("+0.012s") < page.index("+0.500s") < page.index("never used")


def test_bad_trace_files_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(UsageError, match=r"^--trace .*nope.jsonl: no such file$"):
        load_trace(missing)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"kind": "stuntset-trace"}\nnot json\n')
    with pytest.raises(UsageError, match=r"broken.jsonl:2: not a JSON line"):
        load_trace(broken)
    other = tmp_path / "other.jsonl"
    other.write_text('{"kind": "cassette"}\n')
    with pytest.raises(UsageError, match=r"other.jsonl:1: not a stuntset trace"):
        load_trace(other)
    page = tmp_path / "page.html"
    page.write_text("<html>hello</html>")
    with pytest.raises(UsageError, match="an HTML file without a stuntset trace"):
        load_trace(page)
