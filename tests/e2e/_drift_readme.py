"""The README's drift table, one column's part at a time: the ``claude``/``codex`` columns and
the ``gemini`` one run in different tiers (the real binaries of the claude and codex extras:
``real_cli``; the Node tier's ``@google/gemini-cli``: ``node``), so each run checks the part
of the table it played."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).parents[2] / "README.md"
_MARKERS = re.compile(r"<!-- drift-table -->\n(.*?)<!-- /drift-table -->", re.S)


def readme_drift_table() -> str:
    found = _MARKERS.search(README.read_text(encoding="utf-8"))
    assert found is not None, "README.md has no <!-- drift-table --> block"
    return found.group(1)


def only(table: str, clis: list[str]) -> str:
    """``table`` (``readme_table``'s Markdown) with the scenario column and the three columns
    (real, fake, verdict) of each of ``clis``, in the table's order."""
    lines = table.splitlines()
    head = [cell.strip() for cell in lines[0].strip().strip("|").split("|")]
    keep = [0] + [i for i, name in enumerate(head) if i and name.split(":")[0] in clis]
    shown = []
    for line in lines:
        cells = line.strip().strip("|").split("|")
        assert len(cells) == len(head), line
        shown.append("|" + "|".join(cells[i] for i in keep) + "|")
    return "\n".join(shown) + "\n"
