"""Fidelity measured, not assumed: ``stuntset drift`` plays catalog scenarios through the
real ``claude`` and ``codex`` binaries (over the model double) and through stuntset's fake
CLIs, through the same SDK adapter, and diffs the two normalized event streams.

``runners``    plays one side (real binary over the double, or the fake) of one scenario
``normalize``  reduces events to what is compared (no ids, no timings, no chunking)
``compare``    the first difference, explained in one line
``allowlist``  the committed intended differences (``allowlist.toml``), each with a reason
``report``     ``drift()``: the whole run, concurrent; the table, Markdown and JSON
``live``       ``--live``: the wire shape of the real providers against the double's
"""

from __future__ import annotations

from .allowlist import ALLOWLIST, Allowed, load_allowlist
from .compare import Difference, first_difference
from .normalize import normalize
from .report import DriftCell, DriftReport, drift

__all__ = [
    "ALLOWLIST",
    "Allowed",
    "Difference",
    "DriftCell",
    "DriftReport",
    "drift",
    "first_difference",
    "load_allowlist",
    "normalize",
]
