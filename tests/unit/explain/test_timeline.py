"""The timeline read from a real model double's journal (in process), and its rendering."""

from __future__ import annotations

import httpx2
import pytest

from stuntset.doubles.model import StandIn
from stuntset.explain.row import Row
from stuntset.explain.sources import cli_rows, mcp_rows, one_line
from stuntset.explain.timeline import Timeline, render
from stuntset.script import RateLimit, Script, Stall, Text, Turn


def _post(client: httpx2.Client, content: str) -> int:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": content}]}
    return client.post("http://double/v1/chat/completions", json=body).status_code


def test_model_rows_are_in_order_with_status_retries_and_the_reply() -> None:
    script = Script.of(Turn(steps=(RateLimit(retry_after_ms=1),), times=2), [Text("All good now.")])
    timeline = Timeline()
    with StandIn(script) as double, httpx2.Client(transport=double.transport()) as client:
        timeline.watch("model", double)
        statuses = [_post(client, "hi"), _post(client, "hi"), _post(client, "hi")]
        rows = timeline.rows()
    assert statuses == [429, 429, 200]
    assert [r.detail["status"] for r in rows] == [429, 429, 200]
    assert [r.detail["retry"] for r in rows] == [0, 1, 2]
    times = [r.t for r in rows]
    assert all(t is not None and t >= 0 for t in times)
    assert times == sorted(times)  # type: ignore[type-var]
    assert "All good now." in rows[2].text
    assert "model=gpt-4o" in rows[0].text
    assert not any(r.pending for r in rows)


def test_a_stalled_reply_is_pending_until_the_double_closes() -> None:
    timeline = Timeline()
    double = StandIn(Script.of([Text("partial"), Stall()]))
    timeline.watch("model", double)
    body = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}'
    double.double.handle("POST", "/v1/chat/completions", "", {}, body)
    (row,) = timeline.pending()
    assert "then stalls" in row.text
    assert "partial" in row.detail["last_sent"]
    double.close()
    assert timeline.pending() == []


def test_unused_turns_and_unanswered_requests_come_last() -> None:
    timeline = Timeline()
    with StandIn(Script.of([Text("one")], [Text("two")])) as double:
        timeline.watch("model", double)
        rows = timeline.rows()
        assert [r.text for r in rows] == [
            line for line in (r.text for r in rows) if line.startswith("never used: turn")
        ]
        assert len(rows) == 2


def test_a_journal_that_cannot_be_read_is_a_row_not_an_error() -> None:
    timeline = Timeline()
    timeline.watch("model", object())
    (row,) = timeline.rows()
    assert "could not read this double's journal" in row.text


@pytest.mark.parametrize("total", [0, 1, 29, 30, 31, 200])
def test_render_keeps_the_first_and_last_rows_within_the_limit(total: int) -> None:
    rows = [Row(float(n), "model", f"row {n}") for n in range(total)]
    lines = render(rows).splitlines()
    if total <= 30:
        assert len(lines) == total + 1
        assert lines[0].endswith(f"{total} row(s)")
    else:
        assert lines[0].endswith(f"30 of {total} rows")
        assert len(lines) == 1 + 30 + 1
        assert f"{total - 30} row(s) left out" in lines[6]
        assert lines[1].endswith("row 0")
        assert lines[-1].endswith(f"row {total - 1}")
    assert len(render(rows, limit=None).splitlines()) == total + 1


def test_one_line_flattens_and_cuts() -> None:
    assert one_line("a\n b\t c") == "a b c"
    assert one_line("x" * 100, 10) == "x" * 9 + "…"


def test_readers_of_the_other_doubles_accept_empty_journals() -> None:
    class NoCalls:
        def __init__(self) -> None:
            self.calls: list[object] = []

    timeline = Timeline()
    assert mcp_rows(NoCalls(), timeline) == []
    assert cli_rows(object(), timeline) == []
