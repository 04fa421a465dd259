from __future__ import annotations

import re

import pytest

from stuntset import scenarios
from stuntset.errors import UnknownScenario, UsageError
from stuntset.script import AGENT_WIRE, FAULT_KINDS, Script, kind_of

DESIGNED = [
    "happy_path", "tool_use", "needs_approval", "input_request", "interleaved_streaming",
    "long_stream", "multi_turn", "spawn_missing", "auth_expired_mid_run", "rate_limited",
    "overloaded", "stream_cut", "malformed_json", "garbage_bytes", "out_of_order",
    "crash_mid_turn", "stuck", "slow",
]  # fmt: skip


def test_the_catalog_is_the_designed_one_in_order() -> None:
    assert scenarios.names() == DESIGNED
    assert [s.name for s in scenarios.all()] == DESIGNED


@pytest.mark.parametrize("entry", scenarios.all(), ids=lambda e: e.name)
def test_each_scenario_is_documented_and_builds_a_valid_script(entry: scenarios.Scenario) -> None:
    assert entry.description.endswith(".")
    assert "correct client" in entry.guidance
    script = entry()
    assert isinstance(script, Script)
    assert script.name == entry.name
    AGENT_WIRE.check(script)
    has_fault = any(kind_of(step) in FAULT_KINDS for step in script.steps())
    assert has_fault == entry.fault


def test_parameters_shape_the_script() -> None:
    assert len(scenarios.build("multi_turn", turns=5).turns) == 5
    assert scenarios.build("rate_limited", failures=3).turns[0].times == 3
    long = scenarios.build("long_stream", deltas=50)
    assert len(long.turns[0].steps[0].deltas()) == 50  # type: ignore[union-attr]


def test_unknown_names_get_a_suggestion_and_the_list() -> None:
    with pytest.raises(
        UnknownScenario,
        match=r"no scenario named 'rate_limit'. Did you mean 'rate_limited'\? Known scenarios: happy_path, ",
    ):
        scenarios.get("rate_limit")
    with pytest.raises(UnknownScenario, match=r"no scenario named 'zzz'. Known"):
        scenarios.build("zzz")


def test_bad_parameters_name_the_signature() -> None:
    with pytest.raises(
        UsageError,
        match=r"scenario 'happy_path' takes \(text: 'str' = .*unexpected keyword argument 'txt'",
    ):
        scenarios.build("happy_path", txt="x")


def test_route_parameters_are_converted_by_the_defaults_kind() -> None:
    from stuntset.scenarios import build_from_route, coerce_params

    assert build_from_route("stream_cut;after_words=2;cli=yes").turns[0].steps[-1].cli is True
    assert build_from_route("stream_cut;cli=0").turns[0].steps[-1].cli is False
    slow = build_from_route("slow;delay=0.5").turns[0].steps[1]
    assert slow.interval == 0.5
    tool = build_from_route('tool_use;input={"path":"b.txt"}').turns[0].steps[1]
    assert tool.input == {"path": "b.txt"}
    assert coerce_params("slow", {"delay": 1}, where="p") == {"delay": 1.0}
    assert coerce_params("tool_use", {"input": None}, where="p") == {"input": None}


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("stream_cut;cli=maybe", "stream_cut.cli: 'maybe' is not a boolean"),
        ("slow;delay=x", "slow.delay: 'x' is not a number"),
        ("slow;delay=5000", "slow.delay: 5000.0 is out of range (0 to 3600.0 s)"),
        ("slow;delay=nan", "out of range"),
        ("rate_limited;failures=-1", "out of range (0 to 10000)"),
        ("tool_use;input={", "tool_use.input: '{' is not a JSON object"),
        ("tool_use;input=" + "[" * 10, "is not a JSON object"),
        ("happy_path;text=" + "x" * 10_001, "longer than 10000 characters"),
        ('tool_use;input={"a":"' + "x" * 10_001 + '"}', "larger than 10000 bytes"),
        ("happy_path;=x", "'=x' is not a parameter"),
        ("rate_limited;failures=0", "/scenarios/rate_limited: <python>, turn 0: times must be"),
        ("interleaved_streaming;x=1", "has no parameter 'x' (its parameters: none)"),
    ],
)
def test_bad_route_parameters_name_the_place(spec: str, says: str) -> None:
    from stuntset.scenarios import build_from_route

    with pytest.raises(UsageError, match=re.escape(says)):
        build_from_route(spec)
