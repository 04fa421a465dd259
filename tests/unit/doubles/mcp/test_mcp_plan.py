"""What a tool call gets: the plan made from its turn, and what the dispatcher records."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stuntset.doubles.mcp import spec_of
from stuntset.doubles.mcp._plan import Dispatcher, Plan, plan_turn
from stuntset.doubles.mcp.journal import JournalWriter, read_journal
from stuntset.script import (
    AuthExpired,
    Delay,
    Exit,
    HttpError,
    Overloaded,
    RateLimit,
    Reasoning,
    Script,
    Step,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)


def plan(*steps: Step, transport: str = "stdio", scale: float = 1.0) -> Plan:
    return plan_turn(steps, transport=transport, time_scale=scale)


@pytest.mark.parametrize(
    ("output", "result"),
    [
        ("hi", {"content": [{"type": "text", "text": "hi"}]}),
        (
            {"a": 1},
            {"content": [{"type": "text", "text": '{"a": 1}'}], "structured_content": {"a": 1}},
        ),
        ([1, 2], {"content": [{"type": "text", "text": "[1, 2]"}]}),
        (
            [{"type": "image", "data": "AA==", "mimeType": "image/png"}],
            {"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]},
        ),
    ],
)
def test_tool_result_outputs_become_content(output: Any, result: dict[str, Any]) -> None:
    assert plan(ToolCall("t"), ToolResult(output)).result == result


def test_an_error_result_and_the_delays_before_it() -> None:
    made = plan(
        ToolCall("t"),
        Delay(0.5),
        Text("a b c", interval=0.25),
        ToolResult("boom", is_error=True),
        Text("the model's answer, after the result: skipped"),
        scale=2.0,
    )
    assert made.delay == pytest.approx(2.0)  # (0.5 + 2 × 0.25) × 2
    assert made.result == {"content": [{"type": "text", "text": "boom"}], "is_error": True}


def test_text_alone_is_the_result_and_nothing_is_empty_content() -> None:
    assert plan(Reasoning("hm"), Text("one "), Text("two"), Usage(1, 1)).result == {
        "content": [{"type": "text", "text": "one two"}]
    }
    assert plan(ToolCall("t")).result == {"content": []}


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (HttpError(502, message="bad gateway"), "bad gateway"),
        (HttpError(500), "HTTP 500"),
        (AuthExpired(message="expired"), "expired"),
        (RateLimit(), "Rate limit reached. Please try again later."),
        (Overloaded(), "Overloaded"),
    ],
)
def test_http_faults_are_json_rpc_errors_on_stdio_and_faults_over_http(
    step: Step, message: str
) -> None:
    assert plan(step).error == (-32603, message)
    assert plan(step, transport="http").fault == step


def test_a_fault_after_a_pause() -> None:
    made = plan(Delay(1), Exit(3))
    assert (made.delay, made.fault, made.result) == (1.0, Exit(3), None)


def dispatcher(tmp_path: Path, script: Script, **kwargs: Any) -> Dispatcher:
    return Dispatcher(spec_of(script, **kwargs), JournalWriter(tmp_path), transport="stdio")


def call(ident: int, tool: str, arguments: Any = None) -> dict[str, Any]:
    params = {"name": tool} if arguments is None else {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}


def test_the_dispatcher_plans_tool_calls_and_records_every_message(tmp_path: Path) -> None:
    d = dispatcher(tmp_path, Script.of([ToolCall("add"), ToolResult("3")]), tools=["ls"])
    assert d.on_message({"jsonrpc": "2.0", "id": 1, "method": "initialize"}, "s") is None
    assert d.on_message({"jsonrpc": "2.0", "method": "notifications/initialized"}, "s") is None
    planned = d.on_message(call(2, "add", {"a": 1}), "s")
    assert planned is not None
    token, made = planned
    assert (made.id, made.result) == (2, {"content": [{"type": "text", "text": "3"}]})
    assert d.take(token) == made
    assert d.take(token) is None  # once
    _, unknown = d.on_message(call(3, "rm"), "s") or ("", Plan())
    assert unknown.error == (-32602, "Unknown tool: rm")
    _, exhausted = d.on_message(call(4, "add"), "s") or ("", Plan())
    assert exhausted.error is not None
    assert "has no turn for request #2" in exhausted.error[1]
    assert "has no turn" in d.exhausted[0]
    _, listed = d.on_message(call(5, "ls", {}), "s") or ("", Plan())
    assert listed.error is not None  # listed but unscripted: no turn answers it
    d.on_message({"jsonrpc": "2.0", "id": 9, "result": {}}, "s")
    d.on_message([1, 2], "s")
    d.unparsed(b"\xff not json", "s")
    d.journal.close()
    calls = read_journal(tmp_path)
    assert [(c.method, c.outcome) for c in calls] == [
        ("initialize", "request"),
        ("notifications/initialized", "notification"),
        ("tools/call", "result"),
        ("tools/call", "unknown_tool"),
        ("tools/call", "exhausted"),
        ("tools/call", "exhausted"),
        (None, "response"),
        (None, "unparsed"),
        (None, "unparsed"),
    ]
    assert calls[2].arguments == {"a": 1}
    assert calls[2].turn == 0
    assert calls[3].arguments == {}
    assert calls[-1].params == "\ufffd not json"


def test_a_recorded_outcome_overrides_planning(tmp_path: Path) -> None:
    d = dispatcher(tmp_path, Script.of([ToolCall("add"), ToolResult("3")]))
    assert d.on_message(call(1, "add"), "s", outcome="unauthorized") is None
    assert d.on_message(None, "s", outcome="unauthorized") is None
    d.journal.close()
    assert [(c.method, c.outcome) for c in read_journal(tmp_path)] == [
        ("tools/call", "unauthorized"),
        (None, "unauthorized"),
    ]
    assert d.player.unused()  # the refused call did not use the turn
