"""assert_tool on both sides: the schema an app declares (from its requests, every wire) and
the typed arguments its collaborator receives from a scripted tool call."""

from __future__ import annotations

import enum
from typing import Any, Literal

import pytest
from _agent_apps import AGENTS, TOOLS, chat_agent

from stuntset.checks import DeclaredTool, ReceivedCall, ToolCalls, ToolMismatch, assert_tool
from stuntset.doubles.model import StandIn
from stuntset.errors import UsageError
from stuntset.script import Script, Text, ToolCall, ToolResult

CALL = ToolCall("get_weather", {"city": "Paris", "unit": "F"})
SCRIPT = Script.of([CALL, ToolResult("sunny"), Text("Sunny.")])
WEATHER_SCHEMA = TOOLS[0]["parameters"]


class Unit(enum.Enum):
    C = "C"
    F = "F"


class WeatherService:
    """The app's collaborator: the code a tool call ends up in."""

    def get_weather(self, city: str, unit: Unit = Unit.C) -> str:
        return f"sunny in {city} ({unit})"


def run_app(convert: Any) -> ToolCalls:
    """The app under test, with its tool dispatch (``convert`` turns the model's JSON
    arguments into the collaborator's keyword arguments)."""
    calls = ToolCalls()
    get_weather = calls.record(WeatherService().get_weather)
    stand_in = StandIn(SCRIPT)
    chat_agent(stand_in, "Weather?", run_tool=lambda name, args: get_weather(**convert(args)))
    return calls


def failure(*args: Any, **kwargs: Any) -> str:
    with pytest.raises(ToolMismatch) as caught:
        assert_tool(*args, **kwargs)
    return str(caught.value)


@pytest.mark.parametrize("wire", sorted(AGENTS))
def test_the_declared_schema_is_read_from_the_requests_on_every_wire(wire: str) -> None:
    stand_in = StandIn(SCRIPT)
    AGENTS[wire](stand_in, "Weather?")
    declared = assert_tool(
        stand_in, "get_weather", schema=WEATHER_SCHEMA, description="Current weather for a city."
    )
    assert declared == DeclaredTool("get_weather", "Current weather for a city.", WEATHER_SCHEMA)
    assert_tool(stand_in, "get_weather", function=WeatherService().get_weather)


def test_a_declared_schema_that_differs_is_named_field_by_field() -> None:
    stand_in = StandIn(SCRIPT)
    AGENTS["anthropic-messages"](stand_in, "Weather?")
    expected = {**WEATHER_SCHEMA, "required": ["city", "unit"]}
    message = failure(stand_in, "get_weather", schema=expected, description="Weather.")
    assert message == (
        "request 0 (anthropic-messages): the tool 'get_weather' the model is shown differs from "
        "what the test expects (expected -> declared):\n"
        "  parameters.required[1]: removed (was 'unit')\n"
        "  description: 'Current weather for a city.', expected 'Weather.'"
    )


def test_a_tool_missing_from_the_request_is_named() -> None:
    stand_in = StandIn(SCRIPT)
    AGENTS["openai-responses"](stand_in, "Weather?")
    message = failure(stand_in, "search", schema={})
    assert message == (
        "request 0 (openai-responses) does not declare the tool 'search'; it declares "
        "['get_time', 'get_weather']"
    )
    assert "no request declared any tools" in failure(StandIn(SCRIPT), "search", schema={})


def test_a_schema_out_of_step_with_the_implementing_function_is_caught() -> None:
    def get_weather(city: str = "Paris", units: str = "C") -> str:
        return city

    stand_in = StandIn(SCRIPT)
    AGENTS["openai-chat"](stand_in, "Weather?")
    message = failure(stand_in, "get_weather", function=get_weather)
    assert message == (
        "request 0 (openai-chat): the tool 'get_weather' the model is shown differs from what "
        "the test expects (expected -> declared):\n"
        "  parameter 'units' of get_weather() is not in the schema\n"
        "  schema property 'unit' is not a parameter of get_weather()\n"
        "  'city' is required in the schema but has a default in get_weather()"
    )


def test_the_collaborator_receives_the_typed_arguments_the_model_sent() -> None:
    calls = run_app(lambda args: {"city": args["city"], "unit": Unit(args["unit"])})
    received = assert_tool(calls, CALL)
    assert received == ReceivedCall(
        "get_weather",
        {"city": "Paris", "unit": Unit.F},
        {"city": str, "unit": Unit},
    )


def test_a_raw_string_where_an_enum_is_annotated_is_caught() -> None:
    calls = run_app(lambda args: args)
    message = failure(calls, CALL)
    assert message == (
        "call #0 of 'get_weather': the collaborator did not receive what the model sent:\n"
        "  unit: got 'F' (str), but the parameter is annotated Unit: the app passed the model's "
        "raw value on without converting it\n"
        "  model sent: {'city': 'Paris', 'unit': 'F'}\n"
        "  received:   {'city': 'Paris', 'unit': 'F'}"
    )


def test_a_dropped_or_changed_argument_is_caught() -> None:
    dropped = run_app(lambda args: {"city": args["city"]})
    assert "  unit: the model sent 'F', the collaborator never received it\n" in failure(
        dropped, CALL
    )
    changed = run_app(lambda args: {"city": args["city"].lower(), "unit": Unit(args["unit"])})
    assert "  city: 'Paris' (sent by the model) -> 'paris' (received)\n" in failure(changed, CALL)


def test_expected_arguments_can_be_given_and_calls_counted() -> None:
    calls = run_app(lambda args: {"city": args["city"], "unit": Unit(args["unit"])})
    assert_tool(calls, "get_weather", arguments={"city": "Paris", "unit": "F"})
    message = failure(calls, "get_weather", arguments={"city": "Paris"}, call=1)
    assert message.startswith(
        "the collaborator 'get_weather' was called 1 time(s), so there is no call #1"
    )
    assert "recorded calls: none" in failure(ToolCalls(), CALL)


def test_annotation_kinds() -> None:
    calls = ToolCalls()

    def tool(
        n: int, ratio: float, mode: Literal["a", "b"], note: str | None = None, flag: bool = False
    ) -> None:
        return None

    recorded = calls.record(tool, name="tool")
    recorded(3, 1, "a", None, True)
    recorded(True, 1.5, "c", 4)
    assert_tool(
        calls, "tool", arguments={"n": 3, "ratio": 1, "mode": "a", "note": None, "flag": True}
    )
    message = failure(
        calls, "tool", arguments={"n": True, "ratio": 1.5, "mode": "c", "note": 4}, call=1
    )
    assert "n: got True (bool), but the parameter is annotated int" in message
    assert "mode: got 'c' (str)" in message
    assert "note: got 4 (int)" in message


def test_misuse_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="needs the arguments the model sent"):
        assert_tool(ToolCalls(), "get_weather")
    with pytest.raises(UsageError, match="pass schema=, description= or function="):
        assert_tool(StandIn(SCRIPT), "get_weather")
    with pytest.raises(UsageError, match="expected a tool name or a scripted ToolCall"):
        assert_tool(ToolCalls(), 3)
