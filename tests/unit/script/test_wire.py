from __future__ import annotations

import pytest

from stuntset.errors import ScriptError
from stuntset.script import (
    AGENT_WIRE,
    STEP_KINDS,
    ApprovalRequest,
    Exit,
    Script,
    SpawnFailure,
    Text,
    ToolCall,
    ToolResult,
    Wire,
)

HTTP = Wire(
    name="test.http",
    renders=frozenset({"text", "tool_call", "tool_result", "exit"}),
    ignores=frozenset({"approval_request"}),
    reasons={"spawn_failure": "an HTTP server has no binary to miss"},
)


def test_a_renderable_script_passes() -> None:
    script = Script.of([Text("a"), ToolCall("x"), ApprovalRequest(), ToolResult("r"), Exit()])
    assert HTTP.check(script) is script


def test_an_unrenderable_step_names_turn_step_and_wire() -> None:
    script = Script.of([Text("a")], [Text("b"), ToolCall("ls"), ToolResult(1)], [SpawnFailure()])
    with pytest.raises(ScriptError) as info:
        HTTP.check(script)
    error = info.value
    assert (error.turn, error.step, error.wire) == (2, 0, "test.http")
    assert (
        "spawn_failure cannot be rendered on this wire: an HTTP server has no binary to miss"
        in str(error)
    )
    assert "Renderable here: exit, text, tool_call, tool_result" in str(error)


def test_the_agent_wire_renders_everything_but_needs_tool_results() -> None:
    assert AGENT_WIRE.renders == frozenset(STEP_KINDS)
    AGENT_WIRE.check(Script.of([ToolCall("x"), Exit()]))  # a crash may leave a call open
    with pytest.raises(ScriptError, match=r"1 tool call\(s\) but 0 tool result\(s\)"):
        AGENT_WIRE.check(Script.of([Text("a"), ToolCall("x")]))
