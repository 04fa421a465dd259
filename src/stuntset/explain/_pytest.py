"""What the pytest plugin calls for the failure timeline, the traces and the deadline (the
plugin only wires: the hooks' logic is here)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from stuntset.errors import UsageError

from .deadline import DEFAULT_SECONDS, Deadline, deadline_message, parse_seconds
from .timeline import DEFAULT_ROWS, Timeline, render

__all__ = [
    "TRACE_MODES",
    "deadline_for",
    "explain_report",
    "trace_dir",
    "trace_mode",
]

TRACE_MODES = ("retain-on-failure", "on", "off")
SECTION = "stuntset"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def trace_mode(config: pytest.Config) -> str:
    mode = config.getoption("--stuntset-trace") or config.getini("stuntset_trace")
    if mode not in TRACE_MODES:
        raise pytest.UsageError(f"ini stuntset_trace = {mode!r}: expected one of {TRACE_MODES}")
    return str(mode)


def trace_dir(config: pytest.Config) -> Path:
    named = config.getoption("--stuntset-trace-dir") or config.getini("stuntset_trace_dir")
    path = Path(str(named))
    return path if path.is_absolute() else Path(config.rootpath) / path


def trace_name(nodeid: str) -> str:
    """A file name (no suffix) for a test's trace: its node id made safe, never empty."""
    name = _UNSAFE.sub("_", nodeid).strip("_.") or "test"
    return name[:180]


def deadline_for(item: pytest.Item, timeline: Timeline) -> Deadline:
    """The ``Deadline`` of one test: its ``stuntset_deadline`` marker, else the ini option."""
    marker = item.get_closest_marker("stuntset_deadline")
    if marker is not None:
        if len(marker.args) != 1 or marker.kwargs:
            raise UsageError(
                f"{item.nodeid}: @pytest.mark.stuntset_deadline takes one number of seconds "
                f"(0 for none), got args={marker.args!r} kwargs={marker.kwargs!r}"
            )
        seconds = parse_seconds(marker.args[0], f"{item.nodeid}: @pytest.mark.stuntset_deadline")
    else:
        raw = item.config.getini("stuntset_deadline")
        seconds = parse_seconds(raw if raw != "" else DEFAULT_SECONDS, "ini stuntset_deadline")
    return Deadline(
        seconds,
        lambda: deadline_message(item.nodeid, seconds, timeline),
        unblock=lambda: unblock(timeline),
    )


def unblock(timeline: Timeline) -> None:
    """End what keeps a test waiting on its doubles: the model doubles' stalled responses end
    (as at their close) and the fake CLI processes still running are killed."""
    from .sources import cli_rows

    for kind, double in timeline.doubles:
        if kind == "model":
            getattr(double, "double", double).closing.set()
        elif kind == "cli":
            for row in cli_rows(double, timeline):
                if row.pending:
                    with contextlib.suppress(OSError):
                        os.kill(int(row.detail["pid"]), signal.SIGKILL)


def explain_report(
    item: pytest.Item, report: pytest.TestReport, timeline: Timeline, state: dict[str, Any]
) -> None:
    """On the first failed phase: the ``stuntset`` section (about 30 rows; every row with
    ``-vv``). After the last phase: the trace, if its mode asks for one."""
    failed = report.failed
    mode = trace_mode(item.config)
    base = trace_dir(item.config) / trace_name(item.nodeid)
    rows = None
    if failed and not state.get("explained"):
        state["explained"] = True
        rows = timeline.rows()
        verbose = item.config.get_verbosity() >= 2
        text = render(rows, limit=None if verbose else DEFAULT_ROWS)
        if mode != "off":
            text += f"trace: {base}.html (and .jsonl; `stuntset console --trace FILE`)\n"
        report.sections.append((SECTION, text))
    state["failed"] = state.get("failed", False) or failed
    if report.when != "teardown":
        return
    if mode == "on" or (mode == "retain-on-failure" and state["failed"]):
        from .trace import write_trace

        rows = timeline.rows() if rows is None or failed else rows
        write_trace(base, item.nodeid, "failed" if state["failed"] else "passed", rows)
