"""Field-by-field differences between two JSON-like values, for failure messages.

``differences(a, b)`` walks dicts and lists in step and names each place that differs with a
path (``messages[2].content[0].text``); ``describe`` renders one as a line a reader can act on
(a long string shows where it first differs, so a timestamp in a system prompt stands out).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["MISSING", "Difference", "differences", "render_value"]


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


#: Stands for a key or item present on one side only.
MISSING: Any = _Missing()


@dataclass(frozen=True, slots=True)
class Difference:
    """``path`` holds ``before`` on one side and ``after`` on the other (``MISSING`` if absent)."""

    path: str
    before: Any
    after: Any

    def describe(self, width: int = 100) -> str:
        where = self.path or "(the whole value)"
        if self.before is MISSING:
            return f"{where}: added {render_value(self.after, width)}"
        if self.after is MISSING:
            return f"{where}: removed (was {render_value(self.before, width)})"
        if isinstance(self.before, str) and isinstance(self.after, str):
            return f"{where}: {_string_change(self.before, self.after, width)}"
        return f"{where}: {render_value(self.before, width)} -> {render_value(self.after, width)}"


def render_value(value: Any, width: int = 100) -> str:
    """``value`` as compact JSON (``repr`` for strings), cut to ``width`` characters."""
    if isinstance(value, str):
        text = repr(value)
    else:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


def _string_change(before: str, after: str, width: int) -> str:
    at = next(
        (i for i, (x, y) in enumerate(zip(before, after, strict=False)) if x != y),
        min(len(before), len(after)),
    )
    if len(before) <= width // 2 and len(after) <= width // 2:
        return f"{before!r} -> {after!r}"
    note = f"(first difference at character {at}; lengths {len(before)} and {len(after)})"
    if len(before) <= width and len(after) <= width:
        return f"{before!r} -> {after!r} {note}"
    start = max(0, at - 20)
    lead = "..." if start else ""
    return f"{lead}{before[start : at + 40]!r} -> {lead}{after[start : at + 40]!r} {note}"


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def differences(before: Any, after: Any, path: str = "", *, limit: int = 20) -> list[Difference]:
    """Every place where ``before`` and ``after`` differ (at most ``limit``), depth first."""
    found: list[Difference] = []
    _walk(before, after, path, found, limit)
    return found


def _walk(before: Any, after: Any, path: str, found: list[Difference], limit: int) -> None:
    if len(found) >= limit or before == after:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for key in [*before, *(k for k in after if k not in before)]:
            _walk(before.get(key, MISSING), after.get(key, MISSING), _join(path, key), found, limit)
        return
    if isinstance(before, list) and isinstance(after, list):
        for index in range(max(len(before), len(after))):
            left = before[index] if index < len(before) else MISSING
            right = after[index] if index < len(after) else MISSING
            _walk(left, right, _join(path, index), found, limit)
        return
    found.append(Difference(path, before, after))
