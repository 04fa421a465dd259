from __future__ import annotations

from pathlib import Path

import pytest

from stuntset import scenarios
from stuntset.errors import ScriptError
from stuntset.script import (
    AGENT_WIRE,
    Delay,
    Match,
    Script,
    Stall,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    Wire,
    dumps_script,
    load_script,
    loads_script,
)

WEATHER = """
name = "weather"
seed = 7

[[turns]]
match = { contains = "weather" }
times = 2
steps = [
  { text = "Let me check." },
  { kind = "tool_call", name = "get_weather", input = { city = "Paris" } },
  { tool_result = "sunny" },
  { text = { text = "It is sunny.", chunks = 3 } },
  { text = "It is sunny.", chunks = 3 },
  { usage = { input_tokens = 12, output_tokens = 5 } },
  { delay = 0.5 },
]

[[turns]]
steps = [{ stall = true }]
"""


def test_toml_file_with_full_and_shorthand_steps(tmp_path: Path) -> None:
    path = tmp_path / "weather.toml"
    path.write_text(WEATHER)
    script = load_script(path)
    assert script.name == "weather"
    assert script.seed == 7
    assert script.source == str(path)
    first = script.turns[0]
    assert first.match == Match(contains="weather")
    assert first.times == 2
    assert first.steps == (
        Text("Let me check."),
        ToolCall("get_weather", {"city": "Paris"}),
        ToolResult("sunny"),
        Text("It is sunny.", chunks=3),
        Text("It is sunny.", chunks=3),
        Usage(input_tokens=12, output_tokens=5),
        Delay(0.5),
    )
    assert script.turns[1].steps == (Stall(),)


@pytest.mark.parametrize("entry", scenarios.all(), ids=lambda e: e.name)
def test_every_scenario_round_trips_through_json(entry: scenarios.Scenario, tmp_path: Path) -> None:
    script = entry.build()
    path = tmp_path / "s.json"
    path.write_text(dumps_script(script))
    loaded = load_script(path, wire=AGENT_WIRE)
    assert loaded.turns == script.turns
    assert (loaded.seed, loaded.name) == (script.seed, script.name)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[[turns]]\nsteps = [{ txt = 'hi' }]",
            "a.toml, turn 0, step 0: unknown step kind 'txt' (did you mean 'text'?)",
        ),
        (
            "[[turns]]\nsteps = [{ kind = 'txet', text = 'hi' }]",
            "a.toml, turn 0, step 0, field 'kind': unknown step kind 'txet' (did you mean 'text'?)",
        ),
        (
            "[[turns]]\nsteps = [{ text = 5 }]",
            "a.toml, turn 0, step 0, field 'text': Expected `str`, got `int`",
        ),
        (
            "[[turns]]\nsteps = [{ kind = 'tool_call', name = 'x', inptu = {} }]",
            "a.toml, turn 0, step 0: unknown field 'inptu' (did you mean 'input'?); fields here: name, input, id, fragments",
        ),
        ("[[turn]]", "a.toml: unknown field 'turn' (did you mean 'turns'?)"),
        ("[[turns]]\nstepz = []", "a.toml, turn 0: unknown field 'stepz' (did you mean 'steps'?)"),
        (
            "[[turns]]\nsteps = [{ kind = 'text' }]",
            "a.toml, turn 0, step 0: Object missing required field `text`",
        ),
        (
            "[[turns]]\nsteps = [{ http_error = 200 }]",
            "a.toml, turn 0, step 0: status must be an HTTP error status (400-599), got 200",
        ),
        (
            "[[turns]]\nsteps = [{ stall = true }, { text = 'x' }]",
            "a.toml, turn 0, step 1: stall ends the turn",
        ),
        (
            "[[turns]]\nsteps = [{ text = 'a', delay = 1 }]",
            "a.toml, turn 0, step 0: a step needs a 'kind'",
        ),
        (
            "[[turns]]\nsteps = [{ out_of_order = 3 }]",
            "a.toml, turn 0, step 0: out_of_order has no main field",
        ),
        (
            "[[turns]]\nsteps = [{ text = 'a', chunks = 0 }]",
            "a.toml, turn 0, step 0: chunks must be at least 1",
        ),
        (
            "[[turns]]\nsteps = [{ tool_result = 'a', is_error = true, text = 'x' }]",
            "a.toml, turn 0, step 0: a step needs a 'kind'",
        ),
        ("[[turns]]\nsteps = [{ delay = nan }]", "a.toml, turn 0, step 0: seconds must not be"),
        (
            "[[turns]]\nsteps = [{ rate_limit = { retry_after = -1 } }]",
            "a.toml, turn 0, step 0: retry_after must not be negative",
        ),
        ("[[turns]]\nsteps = [{ exit = 300 }]", "a.toml, turn 0, step 0: code must be a process"),
        (
            "[[turns]]\nsteps = [{ usage = { output_tokens = -2 } }]",
            "a.toml, turn 0, step 0: output_tokens must not be negative",
        ),
        ("seed = " + "9" * 5000, "a.toml: not a usable TOML script: Exceeds the limit"),
        ("a = " + "[" * 10_000 + "]" * 10_000, "a.toml: not a usable TOML script: nested too deep"),
        (
            "[[turns]]\nsteps = [{ tool_call = { name = 'x', input = "
            + "{ a = " * 70
            + "1"
            + " }" * 70
            + " } }]",
            "a.toml, turn 0, step 0, field 'tool_call.input.a.….a.a': nested deeper than 64 levels",
        ),
        ("turns = [", "a.toml: not valid TOML: Invalid value (at end of document)"),
        ("turns = 3", "a.toml, field 'turns': Expected `array`, got `int`"),
    ],
)
def test_bad_files_get_one_line_naming_the_place(text: str, expected: str) -> None:
    with pytest.raises(ScriptError) as info:
        loads_script(text, source="a.toml")
    assert str(info.value).startswith(expected)
    assert "\n" not in str(info.value)


def test_json_errors_name_the_line() -> None:
    with pytest.raises(
        ScriptError, match=r"^a.json:2: not valid JSON: Expecting value \(line 2, column 13\)"
    ):
        loads_script('{"turns":\n [{"steps": ]}', format="json", source="a.json")
    with pytest.raises(ScriptError, match="a script is a table with 'turns', got list"):
        loads_script("[]", format="json", source="a.json")


def test_file_level_errors(tmp_path: Path) -> None:
    with pytest.raises(ScriptError, match="no such file"):
        load_script(tmp_path / "missing.toml")
    odd = tmp_path / "script.yaml"
    odd.write_text("turns: []")
    with pytest.raises(ScriptError, match=r"unknown script format '.yaml'"):
        load_script(odd)
    binary = tmp_path / "bad.toml"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(ScriptError, match="not UTF-8"):
        load_script(binary)


def test_loading_checks_the_wire() -> None:
    wire = Wire(name="text-only", renders=frozenset({"text"}))
    with pytest.raises(
        ScriptError, match=r"turn 0, step 1, wire 'text-only': stall cannot be rendered"
    ):
        loads_script("[[turns]]\nsteps = [{ text = 'a' }, { stall = true }]", wire=wire)


def test_scripts_with_callables_cannot_be_written() -> None:
    with pytest.raises(ScriptError, match="cannot be written"):
        dumps_script(Script.from_function(lambda r: [Text("x")]))


def test_json_that_no_double_can_send_is_refused_naming_the_place() -> None:
    surrogate = '{"turns": [{"steps": [{"kind": "text", "text": "a\\ud800b"}]}]}'
    with pytest.raises(ScriptError, match=r"^a.json, turn 0, step 0, field 'text': holds a lone"):
        loads_script(surrogate, format="json", source="a.json")
    named = '{"name": "\\udfff", "turns": []}'
    with pytest.raises(ScriptError, match=r"^a.json, field 'name': holds a lone surrogate"):
        loads_script(named, format="json", source="a.json")
    deep = '{"turns": ' + "[" * 10_000 + "]" * 10_000 + "}"
    with pytest.raises(ScriptError, match="nested too deep"):
        loads_script(deep, format="json", source="a.json")
    huge = '{"seed": ' + "9" * 5000 + ', "turns": []}'
    with pytest.raises(ScriptError, match="4300 digits"):
        loads_script(huge, format="json", source="a.json")
