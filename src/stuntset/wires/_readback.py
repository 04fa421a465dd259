"""A recorded model response read back as script steps: the collector each wire's reader
fills (``ResponseReader``), and the error reading the wires share.

The number of streamed deltas is kept (``chunks``); exact chunk boundaries and timing are not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from stuntset.script import HttpError, Reasoning, Step, Text, ToolCall, Usage

__all__ = ["ResponseReader", "error_object", "error_step", "frame_json"]


class ResponseReader:
    """Collects one response's items in the order they first appear."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}
        #: (key, field) -> the deltas not yet joined into ``items`` (joined once, in
        #: ``steps``: ``+=`` on a dict's string copied the whole text per delta, quadratic)
        self._parts: dict[tuple[str, str], list[str]] = {}
        self.usage: list[int] = [0, 0]
        self.has_usage = False
        self.tail: list[Step] = []

    def item(self, key: str, kind: str, **fields: Any) -> dict[str, Any]:
        if key not in self.items:
            self.items[key] = {"kind": kind, "text": "", "deltas": 0, "args": "", **fields}
        return self.items[key]

    def add(self, key: str, kind: str, delta: str, field: str = "text") -> None:
        item = self.item(key, kind)
        self.extend(key, field, delta)
        item["deltas"] += 1

    def extend(self, key: str, field: str, delta: str) -> None:
        """Append ``delta`` to an existing item's ``field`` (linear: joined in ``steps``)."""
        self._parts.setdefault((key, field), []).append(delta)

    def _join(self) -> None:
        for (key, field), parts in self._parts.items():
            item = self.items[key]
            item[field] = item[field] + "".join(parts)
        self._parts.clear()

    def count(self, input_tokens: int | None = None, output_tokens: int | None = None) -> None:
        self.has_usage = True
        if input_tokens:
            self.usage[0] = input_tokens
        if output_tokens:
            self.usage[1] = output_tokens

    def unstreamed(self) -> None:
        """A whole body was not streamed: let the double choose the chunking."""
        for item in self.items.values():
            item["deltas"] = 0

    def steps(self) -> list[Step]:
        self._join()
        steps: list[Step] = []
        for item in self.items.values():
            chunks = item["deltas"] or None
            if item["kind"] == "text" and item["text"]:
                steps.append(Text(item["text"], chunks=chunks))
            elif item["kind"] == "reasoning" and item["text"]:
                steps.append(
                    Reasoning(item["text"], signature=item.get("signature"), chunks=chunks)
                )
            elif item["kind"] == "tool":
                raw = item.get("input")
                if raw is None:
                    try:
                        raw = json.loads(item["args"] or "{}")
                    except json.JSONDecodeError:
                        raw = {"_unparsed_arguments": item["args"]}
                steps.append(
                    ToolCall(
                        item["name"],
                        raw if isinstance(raw, dict) else {"value": raw},
                        id=item.get("id"),
                    )
                )
        if self.has_usage:
            steps.append(Usage(input_tokens=self.usage[0], output_tokens=self.usage[1]))
        return steps + self.tail


def frame_json(data: str) -> Any:
    """A frame's data as JSON, or None when it is not JSON."""
    try:
        return json.loads(data)
    except json.JSONDecodeError:
        return None


def error_object(body: Any) -> Any:
    """The ``error`` object of an error body (Gemini's error before an array stream is an
    array of that one body)."""
    if isinstance(body, list) and len(body) == 1:
        body = body[0]
    return body.get("error") if isinstance(body, dict) else None


def error_step(status: int, body: Any, headers: Mapping[str, str]) -> Step:
    """The ``HttpError`` a recorded error response stands for: its status, message and type
    (Anthropic and OpenAI say ``type``, Gemini ``status``: RESOURCE_EXHAUSTED…) and its
    ``retry-after-ms``."""
    error = error_object(body)
    message = error.get("message") if isinstance(error, dict) else None
    kind = (error.get("type") or error.get("status")) if isinstance(error, dict) else None
    retry_ms = headers.get("retry-after-ms")
    return HttpError(
        status,
        message=message,
        error_type=kind,
        retry_after_ms=int(float(retry_ms)) if retry_ms else None,
    )
