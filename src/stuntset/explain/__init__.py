"""Why a red test is red: the timeline of what every double a test used saw and did (the
report's ``stuntset`` section), the trace files kept for failed tests, the test-bound
deadline that ends a hung test naming what is pending, and the window that shows where two
long values first differ."""

from __future__ import annotations

from .deadline import DEFAULT_SECONDS, Deadline, deadline_message
from .timeline import DEFAULT_ROWS, Row, Timeline, render
from .trace import load_trace, render_trace_html, write_trace
from .window import first_difference, mismatch_window

__all__ = [
    "DEFAULT_ROWS",
    "DEFAULT_SECONDS",
    "Deadline",
    "Row",
    "Timeline",
    "deadline_message",
    "first_difference",
    "load_trace",
    "mismatch_window",
    "render",
    "render_trace_html",
    "write_trace",
]
