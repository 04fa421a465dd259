"""Timeline rows read from each kind of double's own journal: model requests (wire, path,
turn, status, retry count, bytes, how long a streamed reply took to its end, the reply in one
line), fake CLI invocations (argv, exit
status, control requests, the last stderr lines), MCP calls, and the turns never used."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .row import Row, Start

#: Reads one watched double into rows: ``(double, the test's start) -> rows``.
Reader = Callable[[Any, Start], list[Row]]

__all__ = ["READERS", "cli_rows", "mcp_rows", "model_rows", "one_line", "reply_summary"]

_ONE_LINE = 80
_STDERR_LINES = 3
#: JSON string values that carry what a reply said, on every wire (chat ``content``, the
#: Responses / Anthropic / Gemini ``text`` and ``delta``, error ``message``s).
_SAID = re.compile(r'"(?:text|content|delta|message|partial_json)"\s*:\s*"((?:[^"\\]|\\.)*)"')


def one_line(text: str, width: int = _ONE_LINE) -> str:
    """``text`` on one line, cut to ``width`` characters (with ``…``)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _said(body: bytes) -> str:
    parts: list[str] = []
    for match in _SAID.finditer(body.decode("utf-8", "replace")):
        try:
            parts.append(json.loads(f'"{match.group(1)}"'))
        except ValueError:
            parts.append(match.group(1))
    return "".join(parts)


def reply_summary(reply: Any, took: float | None = None) -> tuple[str, dict[str, Any], bool]:
    """``(one line, detail, stalled)`` for a model double's ``Reply`` (``None``: no reply);
    ``took``: the seconds from the request to the end of its streamed reply, when known."""
    from stuntset.wires import Abort, Pause, Stall

    if reply is None:
        return "no reply", {}, False
    sent = b"".join(a for a in reply.actions if isinstance(a, bytes))
    stalled = any(isinstance(a, Stall) for a in reply.actions)
    aborted = next((a for a in reply.actions if isinstance(a, Abort)), None)
    paused = sum(a.seconds for a in reply.actions if isinstance(a, Pause)) + reply.wait
    status = "no status line" if reply.status is None else str(reply.status)
    bits = [status, f"{len(sent)} B"]
    if reply.streaming:
        bits.append("stream" if took is None else f"stream ended after {took:.3f}s")
    if paused:
        bits.append(f"scripted pauses {paused:g}s")
    if stalled:
        bits.append("then stalls")
    if aborted is not None:
        bits.append("then resets the connection" if aborted.reset else "then drops the connection")
    said = _said(sent)
    line = ", ".join(bits) + (f': "{one_line(said, 60)}"' if said else "")
    last = [a for a in reply.actions if isinstance(a, bytes) and a.strip()]
    detail = {
        "status": reply.status,
        "bytes": len(sent),
        "streaming": reply.streaming,
        "said": said,
        "body": sent.decode("utf-8", "replace"),
        "last_sent": last[-1].decode("utf-8", "replace") if last else "",
        "took": took,
    }
    return line, detail, stalled


def model_rows(stand_in: Any, timeline: Start) -> list[Row]:
    """A model double's requests in arrival order, then the turns it never played and the
    requests no turn could answer."""
    double = getattr(stand_in, "double", stand_in)
    rows: list[Row] = []
    seen: dict[tuple[str, str, str], int] = {}
    closing = double.closing.is_set()
    ends = double.journal.stream_ends()
    for ns, entry, reply in double.journal.stamped():
        key = (entry.method, entry.path, json.dumps(entry.body, sort_keys=True, default=str))
        retry = seen.get(key, 0)
        seen[key] = retry + 1
        end = ends.get(entry.index)
        said, detail, stalled = reply_summary(reply, None if end is None else (end - ns) / 1e9)
        model = entry.body.get("model") if isinstance(entry.body, dict) else None
        head = f"#{entry.index} {entry.method} {entry.path}"
        where = [w for w in (entry.wire, f"model={model}" if model else None) if w]
        if entry.scenario:
            where.append(f"scenario={entry.scenario}")
        if entry.turn is not None:
            where.append(f"turn {entry.turn}")
        if retry:
            where.append(f"retry {retry}")
        text = f"{head} [{', '.join(where)}] -> {said}"
        detail.update(
            index=entry.index,
            method=entry.method,
            path=entry.path,
            wire=entry.wire,
            model=model,
            turn=entry.turn,
            scenario=entry.scenario,
            retry=retry,
            request=entry.body,
        )
        rows.append(
            Row(timeline.since_mono(ns), "model", text, detail, pending=stalled and not closing)
        )
    for line in double.unused():
        rows.append(Row(None, "model", f"never used: {line.strip()}"))
    unanswered = double.unanswered
    if unanswered:
        more = f" ({len(unanswered)} in all)" if len(unanswered) > 1 else ""
        text = f"no turn could answer{more}; the first: {one_line(unanswered[0], 120)}"
        rows.append(Row(None, "model", text, {"unanswered": unanswered}))
    return rows


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError, OSError):
        return False
    return True


def _journals(installed: Any) -> list[Path]:
    return sorted((Path(installed.state_dir) / "invocations").glob("*.jsonl"))


def _start_ns(path: Path) -> int | None:
    head = path.name.split("-", 1)[0]
    return int(head) if head.isdigit() else None


def cli_rows(fixture: Any, timeline: Start) -> list[Row]:
    """A fake CLI fixture's invocations (each fake installed in the test), then its unused
    turns."""
    from stuntset.doubles.cli._install import Invocation

    rows: list[Row] = []
    for installed, _ in getattr(fixture, "_installed", ()):
        name = installed.name
        for path in _journals(installed):
            inv = Invocation.from_journal(path)
            start = _start_ns(path)
            t = None if start is None else timeline.since_wall(start)
            controls = [str(m.get("request", {}).get("subtype", "?")) for m in inv.control_requests]
            running = inv.exit_code is None and _alive(inv.pid)
            if inv.exit_code is not None:
                end = f"exit {inv.exit_code}"
            else:
                end = "still running" if running else "killed (no exit recorded)"
            argv = " ".join(inv.argv)
            bits = [f"pid {inv.pid} `{name} {one_line(argv, 60)}` -> {end}"]
            bits.append(f"{len(inv.stdout)} line(s) out")
            if controls:
                bits.append("control: " + ", ".join(controls))
            stderr = [line for line in inv.stderr.splitlines() if line.strip()]
            if stderr:
                bits.append("stderr: " + one_line(" | ".join(stderr[-_STDERR_LINES:]), 80))
            last = inv.stdout[-1] if inv.stdout else None
            detail = {
                "program": name,
                "argv": inv.argv,
                "pid": inv.pid,
                "cwd": inv.cwd,
                "exit_code": inv.exit_code,
                "stdin": inv.stdin,
                "stdout": inv.stdout,
                "stderr": inv.stderr,
                "last_sent": "" if last is None else json.dumps(last),
            }
            rows.append(Row(t, name, "; ".join(bits), detail, pending=running))
        for index, turn in installed.unused_turns():
            rows.append(Row(None, name, f"never used: turn {index}: {turn.describe()}"))
    return rows


def mcp_rows(double: Any, timeline: Start) -> list[Row]:
    """An MCP double's journal: every message a client sent and what the double did."""
    rows: list[Row] = []
    calls = double.calls
    used: dict[int, int] = {}
    for call in calls:
        if call.turn is not None:
            used[call.turn] = used.get(call.turn, 0) + 1
    for call in calls:
        what = call.method or "(no method)"
        if call.tool:
            args = json.dumps(call.arguments, default=str) if call.arguments is not None else ""
            what += f" {call.tool}({one_line(args, 50)})"
        turn = "" if call.turn is None else f" turn {call.turn}"
        text = f"{call.transport} {what}{turn} -> {call.outcome}"
        detail = {
            "transport": call.transport,
            "session": call.session,
            "method": call.method,
            "tool": call.tool,
            "arguments": call.arguments,
            "outcome": call.outcome,
            "result": call.result,
            "turn": call.turn,
        }
        pending = call.outcome == "fault:stall"
        t = timeline.since_mono(call.ns) if call.ns else None
        rows.append(Row(t, "mcp", text, detail, pending=pending))
    script = getattr(getattr(double, "spec", None), "script", None)
    for index, turn in enumerate(getattr(script, "turns", ())):
        if used.get(index, 0) < turn.times:
            rows.append(Row(None, "mcp", f"never used: turn {index}: {turn.describe()}"))
    return rows


READERS: dict[str, Reader] = {"model": model_rows, "cli": cli_rows, "mcp": mcp_rows}
