"""``stuntset console --trace FILE``: the trace served on loopback; a bad file is one line,
exit 2, before anything listens."""

from __future__ import annotations

from pathlib import Path

import httpx2
from click.testing import CliRunner

from stuntset.cli import main
from stuntset.explain.row import Row
from stuntset.explain.trace import write_trace
from stuntset.explain.viewer import TraceViewer

ROWS = [Row(0.25, "model", "#0 POST /v1/messages [anthropic] -> 529", {"status": 529})]


def test_the_viewer_serves_the_page_and_its_records(tmp_path: Path) -> None:
    page, jsonl = write_trace(tmp_path / "t", "t.py::test_x", "failed", ROWS)
    for source in (page, jsonl):
        with TraceViewer(source) as viewer, httpx2.Client() as client:
            assert viewer.url.startswith("http://127.0.0.1:")
            shown = client.get(viewer.url)
            assert shown.status_code == 200
            assert "#0 POST /v1/messages [anthropic] -&gt; 529" in shown.text
            records = client.get(viewer.url + "trace.jsonl").text.splitlines()
            assert len(records) == 2
            assert client.get(viewer.url + "elsewhere").status_code == 404


def test_a_missing_trace_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["console", "--trace", str(tmp_path / "gone.html")])
    assert result.exit_code == 2
    assert result.output.strip().endswith("gone.html: no such file")
    assert len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output
