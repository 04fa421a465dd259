from __future__ import annotations

import pytest

from stuntset.errors import ScriptError
from stuntset.script import (
    ApprovalRequest,
    Match,
    Script,
    SpawnFailure,
    Stall,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    TurnRequest,
    Usage,
    turn,
)


def test_script_of_accepts_turns_step_lists_and_single_steps() -> None:
    script = Script.of(turn(Text("a")), [Text("b"), Usage(1, 1)], Text("c"), seed=3, name="demo")
    assert [len(t.steps) for t in script.turns] == [1, 2, 1]
    assert script.seed == 3
    assert script.label() == "demo"
    assert len(script.steps()) == 4
    assert len(script.then([Text("d")]).turns) == 4


def test_segments_split_a_turn_where_tool_results_come_back() -> None:
    t = turn(Text("a"), ToolCall("x"), ToolCall("y"), ToolResult(1), ToolResult(2), Text("b"))
    assert t.segments() == [(Text("a"), ToolCall("x"), ToolCall("y")), (Text("b"),)]
    assert turn(ToolCall("x"), ToolResult(1)).segments() == [(ToolCall("x"),)]
    assert turn().segments() == [()]


def test_match_all_given_fields_must_hold() -> None:
    request = TurnRequest(input_text="what is the weather", model="m", retry_count=1)
    assert Match(contains="weather", model="m").matches(request)
    assert not Match(contains="weather", model="other").matches(request)
    assert Match(retry_count=1, tool_result=False).matches(request)
    assert not Match(tool_result=True).matches(request)
    assert Match().describe() == "anything"
    assert Match(contains="w").describe() == "contains='w'"


def test_turn_accepts_by_match_and_predicate() -> None:
    t = turn(Text("x"), match=Match(contains="a"), predicate=lambda r: r.model == "m")
    assert t.accepts(TurnRequest(input_text="a", model="m"))
    assert not t.accepts(TurnRequest(input_text="a", model="n"))
    assert not t.accepts(TurnRequest(input_text="b", model="m"))
    assert "(with a predicate)" in t.describe()


@pytest.mark.parametrize(
    ("steps", "words", "step"),
    [
        ([Text("a"), SpawnFailure()], "only be a turn's first step", 1),
        ([Stall(), Text("a")], "stall ends the turn", 1),
        ([ToolResult("x")], "answers no tool call", 0),
        ([ApprovalRequest()], "asks about no tool", 0),
        (["text"], "is not a step", 0),
    ],
)
def test_structural_mistakes_name_turn_and_step(steps: list[object], words: str, step: int) -> None:
    with pytest.raises(ScriptError, match=words) as info:
        Script.of(Text("ok"), steps)  # type: ignore[arg-type]
    assert (info.value.turn, info.value.step) == (1, step)


def test_times_must_be_positive() -> None:
    with pytest.raises(ScriptError, match="times must be at least 1"):
        Script.of(Turn(steps=(Text("a"),), times=0))


def test_function_turns_are_validated_when_made() -> None:
    script = Script.from_function(lambda request: [Stall(), Text("never")])
    with pytest.raises(ScriptError, match=r"function .*<lambda>.*turn 0, step 1"):
        script.turn_from_function(TurnRequest(), 0)
