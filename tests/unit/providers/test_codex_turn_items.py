"""The item mapping both Codex wires share, on its own: each wire's naming table, items in,
events out (the readers' own tests drive it through their notifications and lines)."""

from __future__ import annotations

from typing import Any

import pytest

from stuntset.drift.codex_exec import EXEC
from stuntset.events import (
    MessageCompleted,
    MessageDelta,
    ReasoningCompleted,
    ReasoningDelta,
    ToolCompleted,
    ToolStarted,
)
from stuntset.providers._codex_turn_items import ItemNames, TurnItems
from stuntset.providers.codex._items import APP_SERVER


class Broken(Exception):
    pass


def turn(names: ItemNames) -> tuple[TurnItems, list[tuple[type[Any], dict[str, Any]]]]:
    out: list[tuple[type[Any], dict[str, Any]]] = []
    return TurnItems(names, lambda cls, **fields: out.append((cls, fields)), Broken), out


@pytest.mark.parametrize(
    ("fields", "text"),
    [({"content": ["Raw", "thought"]}, "Raw\nthought"), ({}, "Stre"), ({"summary": []}, "Stre")],
)
def test_a_reasoning_item_says_its_first_text_field_set_else_what_streamed(
    fields: dict[str, Any], text: str
) -> None:
    items, out = turn(APP_SERVER)
    items.started({"type": "reasoning", "id": "r1"})
    items.delta("reasoning", "r1", "Stre")
    items.completed({"type": "reasoning", "id": "r1", **fields})
    assert out == [
        (ReasoningDelta, {"item_id": "r1", "text": "Stre"}),
        (ReasoningCompleted, {"item_id": "r1", "text": text}),
    ]


def test_exec_items_are_said_whole_under_exec_names() -> None:
    """exec completes text items it never started, and renders an MCP result as it is."""
    items, out = turn(EXEC)
    items.completed({"type": "agent_message", "id": "m", "text": "Hi"})
    items.completed({"type": "reasoning", "id": "r", "text": ""})
    result = {"content": [{"type": "text", "text": "3"}], "structured_content": None}
    call = {"type": "mcp_tool_call", "id": "t", "server": "s", "tool": "add", "arguments": {}}
    items.started(call)
    items.started(call)  # a repeated start opens nothing new
    items.completed({**call, "status": "completed", "result": result})
    assert out == [
        (MessageDelta, {"item_id": "m", "text": "Hi"}),
        (MessageCompleted, {"item_id": "m", "text": "Hi"}),
        (ReasoningCompleted, {"item_id": "r", "text": ""}),
        (ToolStarted, {"tool_call_id": "t", "name": "add", "input": {}, "server": "s"}),
        (ToolCompleted, {"tool_call_id": "t", "output": result, "is_error": False}),
    ]
    with pytest.raises(Broken, match="a mcp_tool_call item 't' completed, never started"):
        items.completed(call)
