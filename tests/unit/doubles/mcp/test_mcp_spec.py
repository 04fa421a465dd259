"""MCP server specs: built in Python, loaded from TOML/JSON, written back, refused with the
place named."""

from __future__ import annotations

from pathlib import Path

import pytest

from stuntset import scenarios
from stuntset.doubles.mcp import (
    MCP_WIRE,
    McpPrompt,
    McpResource,
    McpServerSpec,
    McpTool,
    dumps_spec,
    load_spec,
    loads_spec,
    spec_of,
)
from stuntset.errors import ScriptError
from stuntset.script import (
    ApprovalRequest,
    Match,
    Script,
    Stall,
    Text,
    ToolCall,
    ToolResult,
    TurnRequest,
    Usage,
    turn,
)

SPEC = """
name = "files"
auth_token = "s3cret"

[[tools]]
name = "read_file"
description = "Read a file"
input_schema = { type = "object", properties = { path = { type = "string" } } }

[[resources]]
uri = "file:///notes.txt"
name = "notes"
text = "remember"

[[prompts]]
name = "review"
arguments = [{ name = "code", required = true }]
messages = [{ text = "Review {code}" }]

[[turns]]
steps = [{ kind = "tool_call", name = "read_file" }, { tool_result = "hello" }]

[[turns]]
steps = [{ kind = "tool_call", name = "search" }, { stall = {} }]
"""


def test_a_spec_file_loads_with_its_catalog_and_turns() -> None:
    spec = loads_spec(SPEC, source="files.toml")
    assert (spec.name, spec.auth_token) == ("files", "s3cret")
    assert [t.name for t in spec.listed_tools()] == ["read_file", "search"]
    assert spec.listed_tools()[1].input_schema == {"type": "object"}
    assert spec.resources[0].text == "remember"
    assert spec.prompts[0].arguments[0].required is True
    assert len(spec.script.turns) == 2


def test_a_spec_round_trips_through_json(tmp_path: Path) -> None:
    spec = loads_spec(SPEC)
    path = tmp_path / "spec.json"
    path.write_text(dumps_spec(spec))
    again = load_spec(path)
    assert again.listed_tools() == spec.listed_tools()
    assert (again.resources, again.prompts, again.auth_token) == (
        spec.resources,
        spec.prompts,
        spec.auth_token,
    )
    assert again.script.steps() == spec.script.steps()


def test_turns_are_bound_to_the_tool_their_tool_call_names() -> None:
    spec = spec_of(
        Script.of(
            turn(ToolCall("a"), ToolResult("from a"), match=Match(contains="x")),
            [Text("any tool")],
        )
    )
    first, second = spec.call_script().turns
    assert first.accepts(TurnRequest(model="a", input_text='{"q": "x"}'))
    assert not first.accepts(TurnRequest(model="b", input_text='{"q": "x"}'))
    assert not first.accepts(TurnRequest(model="a", input_text='{"q": "y"}'))
    assert second.accepts(TurnRequest(model="b"))


def test_a_predicate_still_applies_to_a_bound_turn() -> None:
    spec = spec_of(
        Script.of(turn(ToolCall("a"), ToolResult("x"), predicate=lambda r: r.retry_count == 1))
    )
    (bound,) = spec.call_script().turns
    assert bound.accepts(TurnRequest(model="a", retry_count=1))
    assert not bound.accepts(TurnRequest(model="a"))


def test_catalog_scenarios_render_on_the_mcp_wire() -> None:
    for name in ("happy_path", "tool_use", "stuck", "slow", "crash_mid_turn", "malformed_json"):
        MCP_WIRE.check(scenarios.build(name))


def test_a_step_the_mcp_wire_cannot_render_is_refused_naming_it() -> None:
    with pytest.raises(ScriptError, match=r"turn 0, step 1, wire 'mcp': approval_request cannot"):
        McpServerSpec(script=Script.of([ToolCall("rm"), ApprovalRequest()]))


def test_usage_and_reasoning_are_ignored_not_refused() -> None:
    McpServerSpec(script=Script.of([ToolCall("t"), Usage(1, 1), ToolResult("x")]))


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ({"tools": (McpTool(name="a"), McpTool(name="a"))}, "tool 'a' is declared twice"),
        (
            {"resources": (McpResource(uri="u", name="a"), McpResource(uri="u", name="b"))},
            "resource 'u' is declared twice",
        ),
        ({"prompts": (McpPrompt(name="p"), McpPrompt(name="p"))}, "prompt 'p' is declared twice"),
    ],
)
def test_duplicates_are_refused(items: dict[str, object], message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        McpServerSpec(**items)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "form", "message"),
    [
        ("[[tools]\n", "toml", "not valid TOML"),
        ("{", "json", "not a usable JSON spec"),
        ("[1]", "json", "an MCP spec is a table"),
        ('[[tools]]\nname = "a"\nschema = 1\n', "toml", "unknown field `schema`"),
        ("[[turns]]\nsteps = [{ kind = 'nope' }]\n", "toml", "unknown step kind 'nope'"),
    ],
)
def test_bad_spec_text_is_one_error_naming_the_source(text: str, form: str, message: str) -> None:
    with pytest.raises(ScriptError, match=message) as error:
        loads_spec(text, format=form, source="bad-spec")  # type: ignore[arg-type]
    assert str(error.value).startswith("bad-spec")


def test_bad_spec_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="no such file"):
        load_spec(tmp_path / "missing.toml")
    with pytest.raises(ScriptError, match=r"use a \.toml or \.json file"):
        load_spec(tmp_path / "spec.yaml")
    (tmp_path / "dir.toml").mkdir()
    with pytest.raises(ScriptError, match="cannot read it"):
        load_spec(tmp_path / "dir.toml")


def test_spec_of_takes_tools_by_name_and_steps_as_a_turn() -> None:
    spec = spec_of([[ToolCall("t"), Stall()]], tools=["listed"], name="srv")
    assert [t.name for t in spec.listed_tools()] == ["listed", "t"]
    assert spec.name == "srv"
    assert spec_of().script.turns == ()


def test_a_script_with_callables_cannot_be_written() -> None:
    spec = spec_of(Script.from_function(lambda request: [Text("x")]))
    with pytest.raises(ScriptError, match="Python callables"):
        dumps_spec(spec)
