"""Where two long values first differ: the path to the first difference (``messages[3].content``)
and a window of text around it, so a change deep in a 20 KB request shows as what changed,
not as two identical 100-character prefixes."""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["MISSING", "first_difference", "mismatch_window", "text_window"]

#: Characters of context shown on each side of the first differing character.
WIDTH = 40


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


#: Stands for a key or item one side does not have.
MISSING: Final = _Missing()


def _key(path: str, key: Any) -> str:
    if isinstance(key, str) and key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key) if isinstance(key, str) else key}]"


def first_difference(expected: Any, actual: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """``(path, expected part, actual part)`` at the first place the two JSON-like values
    differ (dict keys in the expected value's order, then the actual's extra ones; list items
    by index), or ``None`` if they are equal. A missing key or item is ``MISSING``."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        keys = list(expected) + [key for key in actual if key not in expected]
        for key in keys:
            found = first_difference(
                expected.get(key, MISSING), actual.get(key, MISSING), _key(path, key)
            )
            if found is not None:
                return found
        return None
    if isinstance(expected, list | tuple) and isinstance(actual, list | tuple):
        for index in range(max(len(expected), len(actual))):
            found = first_difference(
                expected[index] if index < len(expected) else MISSING,
                actual[index] if index < len(actual) else MISSING,
                f"{path}[{index}]",
            )
            if found is not None:
                return found
        return None
    if expected is actual or (type(expected) is type(actual) and expected == actual):
        return None
    return path or "(the whole value)", expected, actual


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is MISSING:
        return "<missing>"
    return json.dumps(value, default=str, ensure_ascii=False, sort_keys=False)


def _show(text: str, start: int, end: int) -> str:
    part = text[start:end].encode("unicode_escape").decode("ascii")
    return ("…" if start > 0 else "") + part + ("…" if end < len(text) else "")


def text_window(expected: str, actual: str, *, width: int = WIDTH) -> tuple[int, str, str]:
    """``(index, expected window, actual window)``: the first differing character and up to
    ``width`` characters either side of it in each string (``…`` where text was cut; control
    characters escaped so a newline shows as ``\\n``)."""
    index = next(
        (i for i, (a, b) in enumerate(zip(expected, actual, strict=False)) if a != b),
        min(len(expected), len(actual)),
    )
    start = max(0, index - width)
    return (
        index,
        _show(expected, start, index + width),
        _show(actual, start, index + width),
    )


def mismatch_window(
    expected: Any,
    actual: Any,
    *,
    labels: tuple[str, str] = ("expected", "actual"),
    width: int = WIDTH,
    indent: str = "  ",
    path: str = "",
) -> str:
    """The lines that show where ``expected`` and ``actual`` first differ: the path, the
    character index, and a window around it in each (labelled ``labels``; ``path`` prefixes the
    path shown). Empty if equal."""
    found = first_difference(expected, actual, path)
    if found is None:
        return ""
    path, left, right = found
    a, b = _text(left), _text(right)
    index, shown_a, shown_b = text_window(a, b, width=width)
    pad = max(len(labels[0]), len(labels[1])) + 1
    at = f"first difference at {path}"
    if isinstance(left, str) and isinstance(right, str):
        at += f", character {index} (lengths {len(a)} and {len(b)})"
    start = max(0, index - width)
    before = len(_show(a, start, index)) - (1 if index < len(a) else 0)  # less its closing "…"
    caret = " " * (len(indent) + pad + 1 + before) + "^"
    return "\n".join(
        [
            f"{indent}{at}:",
            f"{indent}{labels[0] + ':':<{pad}} {shown_a}",
            f"{indent}{labels[1] + ':':<{pad}} {shown_b}",
            caret,
        ]
    )
