"""The Codex notification translator on its own: notifications in, events out."""

from __future__ import annotations

from typing import Any

import pytest

from stuntset.events import (
    MessageCompleted,
    MessageDelta,
    ReasoningCompleted,
    ReasoningDelta,
    RunCrashed,
    RunKilled,
    ToolCompleted,
    ToolStarted,
    Usage,
)
from stuntset.providers.codex._crash import OutOfOrder
from stuntset.providers.codex._items import Translator


def translator(
    killed: str | None = None,
) -> tuple[Translator, list[tuple[type[Any], dict[str, Any]]]]:
    out: list[tuple[type[Any], dict[str, Any]]] = []
    return Translator(lambda cls, **fields: out.append((cls, fields)), lambda: killed), out


def test_a_message_item_streams_its_deltas_then_completes() -> None:
    items, out = translator()
    assert not items.handle("item/started", {"item": {"type": "agentMessage", "id": "m1"}})
    items.handle("item/agentMessage/delta", {"itemId": "m1", "delta": "Hel"})
    items.handle("item/agentMessage/delta", {"itemId": "m1", "delta": ""})  # nothing to say
    items.handle("item/completed", {"item": {"type": "agentMessage", "id": "m1", "text": "Hel"}})
    assert out == [
        (MessageDelta, {"item_id": "m1", "text": "Hel"}),
        (MessageCompleted, {"item_id": "m1", "text": "Hel"}),
    ]


def test_a_delta_for_an_item_never_started_is_out_of_order() -> None:
    items, _ = translator()
    with pytest.raises(OutOfOrder, match="'m9', which was never started"):
        items.handle("item/agentMessage/delta", {"itemId": "m9", "delta": "x"})


def test_a_tool_item_completed_twice_is_out_of_order() -> None:
    items, out = translator()
    item = {"type": "commandExecution", "id": "c1", "command": "ls", "exitCode": 0}
    items.handle("item/started", {"item": item})
    items.handle("item/completed", {"item": item})
    assert out[-1] == (ToolCompleted, {"tool_call_id": "c1", "output": None, "is_error": False})
    with pytest.raises(OutOfOrder, match="completed, never started"):
        items.handle("item/completed", {"item": item})


def test_an_interrupted_turn_reports_its_usage_then_the_kill_reason() -> None:
    items, out = translator(killed="user stop")
    usage = {"tokenUsage": {"last": {"inputTokens": 7, "outputTokens": 2}}}
    assert not items.handle("thread/tokenUsage/updated", usage)
    assert items.handle("turn/completed", {"turn": {"status": "interrupted"}})
    assert out == [
        (Usage, {"input_tokens": 7, "output_tokens": 2}),
        (RunKilled, {"reason": "user stop"}),
    ]


def usage_of(last: tuple[int, int], total: tuple[int, int]) -> dict[str, Any]:
    def breakdown(tokens: tuple[int, int]) -> dict[str, int]:
        return {"inputTokens": tokens[0], "outputTokens": tokens[1]}

    return {"tokenUsage": {"last": breakdown(last), "total": breakdown(total)}}


def test_a_turn_of_several_model_responses_reports_the_sum_of_their_usage() -> None:
    """Codex reports each model response's tokens (``last``) as it ends; ``total`` is the
    thread's, earlier turns included (here a resumed thread's 100 input tokens before this
    turn, which a new process never saw reported)."""
    items, out = translator()
    items.handle("thread/tokenUsage/updated", usage_of((10, 2), (110, 22)))  # a tool call
    items.handle("thread/tokenUsage/updated", usage_of((20, 5), (130, 27)))  # the answer
    assert items.handle("turn/completed", {"turn": {"status": "completed"}})
    assert out[0] == (Usage, {"input_tokens": 30, "output_tokens": 7})


def test_items_completed_without_deltas_are_said_whole() -> None:
    items, out = translator()
    items.handle("item/started", {"item": {"type": "agentMessage", "id": "m1"}})
    items.handle("item/completed", {"item": {"type": "agentMessage", "id": "m1", "text": "Hi"}})
    items.handle("item/started", {"item": {"type": "reasoning", "id": "r1"}})
    reasoning = {"type": "reasoning", "id": "r1", "summary": ["Think", "twice"]}
    items.handle("item/completed", {"item": reasoning})
    assert out == [
        (MessageDelta, {"item_id": "m1", "text": "Hi"}),
        (MessageCompleted, {"item_id": "m1", "text": "Hi"}),
        (ReasoningDelta, {"item_id": "r1", "text": "Think\ntwice"}),
        (ReasoningCompleted, {"item_id": "r1", "text": "Think\ntwice"}),
    ]
    with pytest.raises(OutOfOrder, match="reasoning item 'r1' completed, never started"):
        items.handle("item/completed", {"item": reasoning})


@pytest.mark.parametrize(
    ("item", "name", "tool_input", "output", "is_error"),
    [
        (
            {"type": "fileChange", "changes": [{"path": "a"}], "status": "declined"},
            "file_change",
            {"changes": [{"path": "a"}]},
            {"changes": [{"path": "a"}], "status": "declined"},
            True,
        ),
        (
            {"type": "webSearch", "query": "weather", "status": "completed"},
            "web_search",
            {"query": "weather"},
            "weather",
            False,
        ),
        (
            {
                "type": "mcpToolCall",
                "tool": "add",
                "arguments": {"a": 1},
                "error": {"message": "no"},
            },
            "add",
            {"a": 1},
            "no",
            True,
        ),
        (
            {"type": "mcpToolCall", "arguments": "raw", "result": {"content": [{"text": "3"}]}},
            "mcp_tool",
            {"arguments": "raw"},
            "3",
            False,
        ),
        (
            {"type": "commandExecution", "command": "false", "exitCode": 1, "aggregatedOutput": ""},
            "command_execution",
            {"command": "false", "cwd": None},
            "",
            True,
        ),
    ],
)
def test_each_tool_item_kind_is_a_tool_call_with_its_input_and_result(
    item: dict[str, Any], name: str, tool_input: dict[str, Any], output: Any, is_error: bool
) -> None:
    items, out = translator()
    item = {**item, "id": "t1"}
    items.handle("item/started", {"item": item})
    items.handle("item/completed", {"item": item})
    (started_cls, started), (completed_cls, completed) = out
    assert started_cls is ToolStarted
    assert (started["name"], started["input"]) == (name, tool_input)
    assert completed_cls is ToolCompleted
    assert (completed["output"], completed["is_error"]) == (output, is_error)


def test_a_failed_turn_is_a_crash_named_by_its_error() -> None:
    items, out = translator()
    error = {"message": "slow down", "codexErrorInfo": {"x": {"httpStatusCode": 429}}}
    assert items.handle("turn/completed", {"turn": {"status": "failed", "error": error}})
    assert out == [
        (RunCrashed, {"kind": "rate_limited", "message": "slow down", "retryable": True})
    ]
