"""A test's trace: its timeline as JSONL (one row a line, after a header line) and as one
self-contained HTML file (no script, no stylesheet or font fetched: it opens offline, from a
CI artifact, with ``file://``), which also carries the JSONL so ``stuntset console --trace``
can read either file.

Each row of the page expands to what the double saw and did: a model request's body and the
frames of its reply, a fake CLI's argv, stdin messages (control requests), stdout events and
stderr, an MCP call's arguments and result.
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path
from typing import Any

from stuntset.errors import UsageError

from .row import Row

__all__ = ["TRACE_VERSION", "load_trace", "render_trace_html", "trace_lines", "write_trace"]

TRACE_VERSION = 1
_EMBED_ID = "stuntset-trace"
_EMBEDDED = re.compile(
    r'<script type="application/x-ndjson" id="stuntset-trace">(.*?)</script>', re.DOTALL
)

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5rem;color:#1b1b1b;background:#fff}
h1{font-size:1.2rem;margin:0 0 .25rem}
.meta{color:#555;margin-bottom:1rem}
.failed{color:#b00020}.passed{color:#116611}
ol{list-style:none;padding:0;margin:0;font-family:ui-monospace,monospace;font-size:13px}
li{border-bottom:1px solid #eee;padding:.2rem 0}
summary{cursor:pointer;white-space:pre-wrap}
.t{display:inline-block;width:6.5rem;color:#555}
.src{display:inline-block;width:4.5rem;font-weight:600}
.pending{background:#fff4e0}
pre{background:#f6f6f6;padding:.5rem;overflow:auto;max-height:30rem;white-space:pre-wrap}
h2{font-size:.9rem;margin:.5rem 0 .1rem}
"""


def trace_lines(nodeid: str, outcome: str, rows: list[Row]) -> list[dict[str, Any]]:
    """The JSONL records: a header, then one per row."""
    head: dict[str, Any] = {
        "kind": "stuntset-trace",
        "version": TRACE_VERSION,
        "test": nodeid,
        "outcome": outcome,
        "rows": len(rows),
    }
    return [
        head,
        *(
            {
                "t": row.t,
                "source": row.source,
                "text": row.text,
                "pending": row.pending,
                "detail": row.detail,
            }
            for row in rows
        ),
    ]


def _dumps(record: Any) -> str:
    return json.dumps(record, default=str, ensure_ascii=False, separators=(",", ":"))


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str, ensure_ascii=False, indent=2)


def _frames(body: str) -> list[str]:
    return [frame for frame in re.split(r"\r?\n\r?\n", body) if frame.strip()]


def _detail_html(detail: dict[str, Any]) -> str:
    parts: list[str] = []

    def block(title: str, value: Any) -> None:
        parts.append(f"<h2>{html.escape(title)}</h2><pre>{html.escape(_pretty(value))}</pre>")

    if "request" in detail:
        block("request", detail["request"])
    if detail.get("body"):
        frames = _frames(str(detail["body"])) if detail.get("streaming") else []
        if len(frames) > 1:
            block(f"reply: {len(frames)} frames", "\n\n".join(frames))
        else:
            block("reply", detail["body"])
    if "argv" in detail:
        block("argv", detail["argv"])
        block("stdin (what the client sent, control requests included)", detail.get("stdin"))
        block("stdout (events written)", detail.get("stdout"))
        if detail.get("stderr"):
            block("stderr", detail["stderr"])
    if "arguments" in detail:
        block("arguments", detail["arguments"])
        block("result", detail.get("result"))
    shown = {"request", "body", "argv", "stdin", "stdout", "stderr", "arguments", "result"}
    rest = {key: value for key, value in detail.items() if key not in shown}
    if rest:
        block("details", rest)
    return "".join(parts)


def render_trace_html(records: list[dict[str, Any]]) -> str:
    """The self-contained page for a trace's records (``trace_lines``)."""
    head, rows = records[0], records[1:]
    test = html.escape(str(head.get("test", "?")))
    outcome = str(head.get("outcome", "?"))
    items: list[str] = []
    for row in rows:
        t = row.get("t")
        when = "" if t is None else f"+{float(t):.3f}s"
        flag = " (pending)" if row.get("pending") else ""
        summary = (
            f'<span class="t">{when}</span><span class="src">'
            f"{html.escape(str(row.get('source', '')))}</span>"
            f"{html.escape(str(row.get('text', '')))}{flag}"
        )
        cls = ' class="pending"' if row.get("pending") else ""
        detail = _detail_html(row.get("detail") or {})
        items.append(f"<li{cls}><details><summary>{summary}</summary>{detail}</details></li>")
    embedded = "\n".join(_dumps(record) for record in records).replace("</", "<\\/")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>stuntset trace: {test}</title><style>{_STYLE}</style></head><body>"
        f"<main><h1>{test}</h1>"
        f'<p class="meta"><span class="{html.escape(outcome)}">{html.escape(outcome)}</span>'
        f" · {len(rows)} row(s), times from the test's start; click a row for what the double "
        f"saw and did</p>"
        f'<ol aria-label="timeline">{"".join(items)}</ol></main>'
        f'<script type="application/x-ndjson" id="{_EMBED_ID}">{embedded}</script>'
        "</body></html>\n"
    )


def write_trace(base: Path, nodeid: str, outcome: str, rows: list[Row]) -> tuple[Path, Path]:
    """Write ``base.jsonl`` and ``base.html`` (their folder made if missing); return both."""
    records = trace_lines(nodeid, outcome, rows)
    base.parent.mkdir(parents=True, exist_ok=True)
    jsonl = base.with_name(base.name + ".jsonl")
    page = base.with_name(base.name + ".html")
    for path, text in (
        (jsonl, "".join(_dumps(record) + "\n" for record in records)),
        (page, render_trace_html(records)),
    ):
        temporary = path.with_name(path.name + f".{os.getpid()}.tmp")
        temporary.write_text(text, "utf-8")
        temporary.replace(path)
    return page, jsonl


def _parse(text: str, where: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise UsageError(f"{where}:{number}: not a JSON line ({exc})") from None
        if not isinstance(record, dict):
            raise UsageError(f"{where}:{number}: expected a JSON object, got {line[:40]!r}")
        records.append(record)
    if not records or records[0].get("kind") != "stuntset-trace":
        raise UsageError(f"{where}:1: not a stuntset trace (no stuntset-trace header line)")
    return records


def load_trace(path: str | Path) -> list[dict[str, Any]]:
    """The records of a trace file: its ``.jsonl``, or the ``.html`` page (which carries them).
    ``UsageError`` naming the file (and line) if it is not one."""
    file = Path(path)
    try:
        text = file.read_text("utf-8")
    except FileNotFoundError:
        raise UsageError(f"--trace {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--trace {path}: cannot read it ({exc})") from None
    if file.suffix.lower() in (".html", ".htm") or text.lstrip().startswith("<"):
        found = _EMBEDDED.search(text)
        if found is None:
            raise UsageError(f"--trace {path}: an HTML file without a stuntset trace in it")
        text = found.group(1)  # ``<\/`` in its strings is JSON's own escape of ``/``
    return _parse(text, str(path))
