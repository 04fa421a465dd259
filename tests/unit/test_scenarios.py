from __future__ import annotations

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
