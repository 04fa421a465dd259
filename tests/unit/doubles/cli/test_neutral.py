"""The catalog's wire-neutral tools played as each CLI's own (``doubles/cli/_neutral``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stuntset import scenarios
from stuntset.doubles.cli._neutral import NEUTRAL_TOOLS, native_tools
from stuntset.script import Script, Text, ToolCall, ToolResult

PROGRAMS = ("claude", "codex", "gemini")

#: (program, neutral call) -> (the call as the program's own tool, output for "a\nb")
EXPECTED: dict[tuple[str, str], tuple[str, dict[str, Any], Any]] = {
    ("claude", "read_file"): ("Read", {"file_path": "a.txt"}, "1\ta\n2\tb"),
    ("claude", "bash"): ("Bash", {"command": "make"}, "a\nb"),
    ("claude", "list_files"): ("Bash", {"command": "ls -p src"}, "a\nb"),
    ("codex", "read_file"): ("exec_command", {"cmd": "cat a.txt"}, "a\nb"),
    ("codex", "bash"): ("exec_command", {"cmd": "make"}, "a\nb"),
    ("codex", "list_files"): ("exec_command", {"cmd": "ls -p src"}, "a\nb\n"),
    ("gemini", "read_file"): ("read_file", {"file_path": "a.txt"}, ""),
    ("gemini", "bash"): ("run_shell_command", {"command": "make"}, "a\nb"),
    ("gemini", "list_files"): ("list_directory", {"dir_path": "src"}, None),
}
INPUTS = {
    "read_file": {"path": "a.txt"},
    "bash": {"command": "make"},
    "list_files": {"path": "src"},
}


@pytest.mark.parametrize(("program", "tool"), list(EXPECTED))
def test_each_neutral_tool_is_the_programs_own(program: str, tool: str) -> None:
    script = Script.of([ToolCall(tool, INPUTS[tool]), ToolResult("a\nb"), Text("done")])
    call, result, text = native_tools(script, program).turns[0].steps
    name, given, output = EXPECTED[(program, tool)]
    assert isinstance(call, ToolCall)
    assert isinstance(result, ToolResult)
    assert (call.name, dict(call.input), result.output) == (name, given, output)
    assert text == Text("done")


def test_claudes_bash_names_an_empty_output() -> None:
    script = Script.of([ToolCall("bash", {"command": "true"}), ToolResult("")])
    (_, result) = native_tools(script, "claude").turns[0].steps
    assert isinstance(result, ToolResult)
    assert result.output == "(Bash completed with no output)"


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_script_without_neutral_tools_is_returned_as_it_is(program: str) -> None:
    script = Script.of([ToolCall("mcp__docs__find", {"q": 1}), ToolResult("x"), Text("y")])
    assert native_tools(script, program) is script
    happy = scenarios.build("happy_path")
    assert native_tools(happy, program) is happy


def test_geminis_own_read_file_stays_as_it_is() -> None:
    script = Script.of([ToolCall("read_file", {"file_path": "/w/a.txt"}), ToolResult("hi")])
    assert native_tools(script, "gemini") is script


_CALLS = st.lists(
    st.tuples(st.sampled_from([*NEUTRAL_TOOLS, "mcp__s__other"]), st.booleans()),
    min_size=1,
    max_size=5,
)


@given(calls=_CALLS, order=st.randoms(use_true_random=False), program=st.sampled_from(PROGRAMS))
@settings(max_examples=100, deadline=None)
def test_each_result_is_rewritten_for_the_call_it_answers(
    calls: list[tuple[str, bool]], order: Any, program: str
) -> None:
    """Calls in a row, answered in any order (by id where the script names one, else in the
    order of the calls): each result is rewritten for the call it answers, a non-neutral
    call's result is left as it is."""
    steps: list[Any] = [
        ToolCall(name, INPUTS.get(name, {"q": 1}), id=f"c{i}" if named else None)
        for i, (name, named) in enumerate(calls)
    ]
    named = [i for i, (_, has_id) in enumerate(calls) if has_id]
    unnamed = [i for i, (_, has_id) in enumerate(calls) if not has_id]
    answers = list(named)
    order.shuffle(answers)  # those with ids, in any order; the others in their own order
    answers += unnamed
    for i in answers:
        steps.append(ToolResult(f"out{i}", tool_call_id=f"c{i}" if calls[i][1] else None))
    played = native_tools(Script.of(steps), program).turns[0].steps
    for position, i in enumerate(answers):
        result = played[len(calls) + position]
        assert isinstance(result, ToolResult)
        name = calls[i][0]
        if name in NEUTRAL_TOOLS:
            expected = EXPECTED[(program, name)][2]
            expected = expected if expected in ("", None) else expected.replace("a\nb", f"out{i}")
            if program == "claude" and name == "read_file":
                expected = f"1\tout{i}"
            assert result.output == expected
        else:
            assert result.output == f"out{i}"
