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


def test_the_command_serves_until_interrupted(tmp_path: Path) -> None:
    """``stuntset console --trace FILE`` as a user runs it: the URL line, the page, then
    Ctrl-C stops it cleanly (exit 0, no traceback)."""
    import signal
    import subprocess
    import sys

    page, _ = write_trace(tmp_path / "t", "t.py::test_x", "failed", ROWS)
    command = Path(sys.executable).with_name("stuntset")
    process = subprocess.Popen(
        [str(command), "console", "--trace", str(page), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        said = process.stdout.readline()
        assert said.startswith("stuntset trace viewer on http://127.0.0.1:"), said
        url = said.split(" on ", 1)[1].split(" ", 1)[0]
        with httpx2.Client() as client:
            assert "#0 POST /v1/messages" in client.get(url).text
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
        assert process.stderr is not None
        assert "Traceback" not in process.stderr.read()
    finally:
        process.kill()
        process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
