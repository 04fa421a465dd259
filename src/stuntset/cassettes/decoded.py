"""Cassette text as a reader sees it, for finding secrets: JSON unescaped, and a stream's
frames reassembled.

A key is hidden from a scan of the raw bytes when it is written with a JSON ``\\u`` escape, or
when it is streamed token by token and so split across SSE frames (or CLI stdout lines). Here a
JSON document is walked string by string (decoded), and the strings of a stream are joined per
*channel* — the same place in every frame (``choices[0].delta.content``, ``delta.text`` of the
content block with the same ``index``…) — so a key split at any byte position is whole again.
``split_hits`` maps a hit in the joined text back to the part each frame holds, which is how
the scrubber redacts it in every frame while each frame stays valid JSON.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from stuntset.cassettes.secrets import Hit, placeholder

__all__ = [
    "NOT_JSON",
    "Fragment",
    "channels",
    "collector_paused",
    "decode_json",
    "encode_json",
    "joined",
    "redact_fragments",
    "set_at",
    "strings",
]

Path = tuple[str | int, ...]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused for a block that makes many objects and
    leaves no cycles (decoding, scrubbing and scanning a long recording): each collection
    walks every object alive, so a 100k-frame stream paid ≈ 1.3× a frame's cost for it. A
    block inside another (or in another thread) while it is paused leaves it alone."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class _NotJson:
    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON: Any = _NotJson()


def decode_json(text: str) -> Any:
    """The JSON value of ``text``, or ``NOT_JSON`` (also for nesting too deep to decode, or an
    integer too long to convert)."""
    stripped = text.lstrip()
    if not stripped or stripped[0] not in '{["':
        return NOT_JSON
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return NOT_JSON


def encode_json(value: Any) -> str:
    """Compact JSON, keys in their original order, characters unescaped."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def strings(value: Any) -> Iterator[tuple[Path, str, bool]]:
    """Every string in a JSON value with its path, and whether it is an object's key (then
    the path is its object's); iterative, so any depth is fine."""
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            yield path, item, False
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                yield path, key, True
                stack.append(((*path, key), child))
        elif isinstance(item, list):
            for index in range(len(item) - 1, -1, -1):
                stack.append(((*path, index), item[index]))


class Fragment(NamedTuple):
    """One frame's part of a channel: frame number, path in the frame's JSON (``None``: the
    frame's whole text), and the text."""

    frame: int
    path: Path | None
    text: str


def _channel_key(value: Any, path: Path) -> tuple[Any, ...]:
    """The channel of a string: its path, with the ``index`` of every enclosing object (the
    content block an Anthropic delta belongs to)."""
    key: list[Any] = []
    item = value
    for part in path:
        if isinstance(item, dict) and isinstance(item.get("index"), int):
            key.append(("index", item["index"]))
        key.append(part)
        item = item[part]
    return tuple(key)


def channels(frames: list[Any], *, singletons: bool = False) -> list[list[Fragment]]:
    """The channels of a stream whose frames are decoded JSON values (a frame kept as text
    given as a 1-tuple ``(text,)``): those that more than one frame holds, or all of them
    (``singletons``)."""
    grouped: dict[tuple[Any, ...], list[Fragment]] = {}
    for number, frame in enumerate(frames):
        if isinstance(frame, tuple):
            grouped.setdefault(("<text>",), []).append(Fragment(number, None, frame[0]))
            continue
        for path, text, is_key in strings(frame):
            if path and not is_key:
                grouped.setdefault(_channel_key(frame, path), []).append(
                    Fragment(number, path, text)
                )
    return [f for f in grouped.values() if singletons or len(f) > 1]


def redact_fragments(fragments: list[Fragment], hits: list[Hit]) -> dict[int, str]:
    """The new text of each fragment (by its position in ``fragments``) once every hit in the
    joined channel is replaced: the placeholder goes where the secret starts, and the rest of
    the secret is removed from the fragments that hold it."""
    out: dict[int, str] = {}
    if not hits:
        return out
    joined = "".join(f.text for f in fragments)
    offset = 0
    first = 0  # hits before this one end before the current fragment
    for position, fragment in enumerate(fragments):
        start, end = offset, offset + len(fragment.text)
        offset = end
        while first < len(hits) and hits[first].end <= start:
            first += 1
        touching = []
        for hit in hits[first:]:
            if hit.start >= end:
                break
            touching.append(hit)
        if not touching:
            continue
        pieces: list[str] = []
        cursor = start
        for hit in touching:
            if hit.start > cursor:
                pieces.append(joined[cursor : hit.start])
            if start <= hit.start < end:
                pieces.append(placeholder(hit.kind))
            cursor = max(cursor, min(hit.end, end))
        pieces.append(joined[cursor:end])
        out[position] = "".join(pieces)
    return out


def joined(fragments: list[Fragment]) -> str:
    return "".join(f.text for f in fragments)


def set_at(value: Any, path: Path, text: str) -> None:
    """Replace the string at ``path`` (non-empty) in a decoded JSON value."""
    item = value
    for part in path[:-1]:
        item = item[part]
    item[path[-1]] = text
