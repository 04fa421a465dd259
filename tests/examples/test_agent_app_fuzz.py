"""examples/agent_app: the fuzzer finds each planted bug within a bounded budget and shrinks
it to at most two turns; the app without bugs passes the same budget. Each test prints its
examples-to-find, seconds and the shrunk script (run with -s to see them)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hypothesis")

from hypothesis import given, settings

from stuntset.clock import FakeClock
from stuntset.doubles.model import ModelDouble, ModelTransport
from stuntset.script import Script, Text, ToolCall, loads_script
from stuntset.strategies import CI, FuzzFailure, judge, reset, scripts

sys.path.insert(0, str(Path(__file__).parents[2] / "examples" / "agent_app"))
from agent import Agent

BASE = Script.of([ToolCall("lookup", {"city": "Paris"})], [Text("It is sunny in Paris.")])
TOOLS = {"lookup": lambda city: f"sunny in {city}"}
BUDGET = 200  # examples


def fuzz(bugs: frozenset[str], tmp_path: Path) -> tuple[int | None, int, float, str]:
    """(examples to the first failure, examples run, seconds, the failure's message)."""
    clock = FakeClock()
    double = ModelDouble(BASE, clock=clock)  # one double for every example, reset each time
    seen = {"examples": 0, "first": None}

    @settings(CI, max_examples=BUDGET)
    @given(script=scripts(BASE))
    def agent_survives(script: Script) -> None:
        seen["examples"] += 1
        reset(double, script)
        agent = Agent(ModelTransport(double), sleep=clock.advance, bugs=bugs, tools=TOOLS)
        try:
            judge(
                lambda: agent.run("weather in Paris?"),
                double,
                script,
                outcomes={"completed", "error"},
                save_to=tmp_path,
                replay="stuntset script check {path}",
            )
        except FuzzFailure:
            seen["first"] = seen["first"] or seen["examples"]
            raise

    started = time.monotonic()
    try:
        agent_survives()
    except FuzzFailure as failure:
        return seen["first"], seen["examples"], time.monotonic() - started, str(failure)
    return None, seen["examples"], time.monotonic() - started, ""


def shrunk_script(message: str) -> Script:
    toml = message.split("reads it):\n", 1)[1].split("\n\nwritten to", 1)[0]
    return loads_script(toml, format="toml")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("bug", "rule"),
    [
        ("cut_as_complete", "no_partial_as_complete"),
        ("retry_401", "non_retryable_retried"),
        ("drop_tool_result", "changed_body_on_retry"),
    ],
)
def test_the_fuzzer_finds_each_planted_bug_and_shrinks_it(
    bug: str, rule: str, tmp_path: Path, capsys: Any
) -> None:
    first, examples, seconds, message = fuzz(frozenset({bug}), tmp_path)
    assert first is not None, f"{bug}: not found in {BUDGET} examples"
    assert f"  {rule}: " in message
    script = shrunk_script(message)
    assert len(script.turns) <= 2, message
    assert "replay: stuntset script check " in message
    assert "pin it: @example(" in message
    with capsys.disabled():
        print(
            f"\n{bug}: found after {first} example(s), {examples} run with shrinking, "
            f"{seconds:.2f} s\n{message}"
        )


@pytest.mark.slow
def test_the_app_without_bugs_passes_the_same_budget(tmp_path: Path) -> None:
    first, examples, _, message = fuzz(frozenset(), tmp_path)
    assert first is None, message
    assert examples == BUDGET
