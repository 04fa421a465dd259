"""Trajectory matching over every source (events, raw Claude stream-json, raw Codex JSONL,
request journals and cassettes) and in every mode, each failing with both sides shown."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from _agent_apps import AGENTS

from stuntset.checks import (
    ToolStep,
    TrajectoryMismatch,
    assert_trajectory,
    match_trajectory,
    trajectory_of,
)
from stuntset.doubles.model import StandIn
from stuntset.errors import UsageError
from stuntset.events import RunCompleted, RunStarted, ToolCompleted, ToolStarted, to_builtins
from stuntset.providers import ScriptedProvider
from stuntset.script import Script, Text, ToolCall, ToolResult
from stuntset.waiting import collect_events

TWO_CALLS = Script.of(
    [
        ToolCall("get_weather", {"city": "Paris"}),
        ToolResult("sunny"),
        ToolCall("get_time", {"city": "Paris"}),
        ToolResult("noon"),
        Text("Sunny at noon in Paris."),
    ]
)
EXPECTED = [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]


def failure(actual: Any, expected: Any, **options: Any) -> str:
    with pytest.raises(TrajectoryMismatch) as caught:
        assert_trajectory(actual, expected, **options)
    return str(caught.value)


def events(*calls: tuple[str, dict[str, Any]]) -> list[Any]:
    out: list[Any] = [RunStarted(run_id="r", ts=0, session_id="s", provider="p")]
    for n, (name, args) in enumerate(calls):
        out.append(ToolStarted(run_id="r", ts=0, tool_call_id=f"t{n}", name=name, input=args))
        out.append(ToolCompleted(run_id="r", ts=0, tool_call_id=f"t{n}", output="ok"))
    out.append(RunCompleted(run_id="r", ts=0))
    return out


@pytest.mark.anyio
async def test_normalized_events_of_a_real_run() -> None:
    provider = ScriptedProvider(TWO_CALLS)
    run = provider.start("Weather?")
    seen = await collect_events(run)
    assert trajectory_of(seen) == [
        ToolStep("get_weather", {"city": "Paris"}),
        ToolStep("get_time", {"city": "Paris"}),
    ]
    assert_trajectory(seen, EXPECTED)
    assert_trajectory([to_builtins(e) for e in seen], EXPECTED)


@pytest.mark.parametrize("wire", sorted(AGENTS))
def test_a_request_journal_on_every_wire(wire: str) -> None:
    stand_in = StandIn(TWO_CALLS)
    AGENTS[wire](stand_in, "Weather?")
    assert_trajectory(stand_in, EXPECTED)
    assert_trajectory(stand_in.requests, EXPECTED)


def test_raw_claude_stream_json(fake_claude: Any) -> None:
    cli = fake_claude(TWO_CALLS, time_scale=0)
    done = subprocess.run(
        [str(cli.path), "-p", "--output-format", "stream-json", "--verbose", "Weather?"],
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    assert '"type":"tool_use"' in done.stdout.replace(" ", "")
    assert_trajectory(done.stdout, EXPECTED)
    assert_trajectory(done.stdout.splitlines(), EXPECTED)


def test_a_repeated_claude_message_counts_its_tool_call_once() -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    line = {"type": "assistant", "message": {"content": [block]}, "session_id": "s"}
    other = {**block, "id": "toolu_2"}
    lines = [line, line, {"type": "assistant", "message": {"content": [other]}}]
    assert trajectory_of(lines) == [ToolStep("Bash", {"command": "ls"})] * 2


def test_raw_codex_jsonl(fake_codex: Any, tmp_path: Path) -> None:
    script = Script.of(
        [
            ToolCall("exec_command", {"cmd": "ls"}),
            ToolResult("a.txt"),
            Text("One file."),
        ]
    )
    cli = fake_codex(script, time_scale=0)
    done = subprocess.run(
        [str(cli.path), "exec", "--json", "--skip-git-repo-check", "-"],
        input="List files",
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    )
    steps = trajectory_of(done.stdout.encode())
    assert [s.name for s in steps] == ["command_execution"]  # started + completed: once
    assert "ls" in str(steps[0].args)
    (tmp_path / "run.jsonl").write_text(done.stdout)
    assert_trajectory(tmp_path / "run.jsonl", ["command_execution"])


def test_codex_item_kinds_are_named_like_the_codex_adapter() -> None:
    lines = [
        {"type": "item.started", "item": {"id": "item_0", "type": "web_search", "query": "q"}},
        {"type": "item.completed", "item": {"id": "item_0", "type": "web_search", "query": "q"}},
        {
            "type": "item.completed",
            "item": {
                "id": "item_1",
                "type": "file_change",
                "changes": [{"path": "a", "kind": "add"}],
            },
        },
        {
            "type": "item.started",
            "item": {
                "id": "item_2",
                "type": "mcp_tool_call",
                "server": "s",
                "tool": "lookup",
                "arguments": {"k": 1},
            },
        },
        {"type": "item.completed", "item": {"id": "item_3", "type": "agent_message", "text": "hi"}},
    ]
    assert trajectory_of(lines) == [
        ToolStep("web_search", {"query": "q"}),
        ToolStep("file_change", {"changes": [{"path": "a", "kind": "add"}]}),
        ToolStep("lookup", {"k": 1}),
    ]


def test_strict_mode_fails_on_a_wrong_argument_with_both_sides_shown() -> None:
    actual = events(("get_weather", {"city": "Paris"}), ("get_time", {"city": "Lyon"}))
    message = failure(actual, EXPECTED)
    assert message == (
        "the agent's trajectory does not match (mode='strict': the same tool calls in the "
        "same order; args='exact'):\n"
        "  expected                       | actual\n"
        "   0  get_weather(city='Paris')  |  0  get_weather(city='Paris')\n"
        "!  1  get_time(city='Paris')     |  1  get_time(city='Lyon')   "
        "(expected 1 missing, actual 1 extra)\n"
        "2 actual call(s), 2 expected. To relax the comparison pass mode= ('unordered', "
        "'subset', 'superset') or args= ('ignore', a function, or a dict per tool)."
    )


def test_strict_mode_fails_on_order_that_unordered_accepts() -> None:
    swapped = events(("get_time", {"city": "Paris"}), ("get_weather", {"city": "Paris"}))
    assert "expected 0 missing, actual 0 extra" in failure(swapped, EXPECTED)
    assert_trajectory(swapped, EXPECTED, mode="unordered")


def test_unordered_mode_fails_on_an_extra_call() -> None:
    extra = events(*[(n, a) for n, a in EXPECTED], ("send_email", {"to": "x"}))
    message = failure(extra, EXPECTED, mode="unordered")
    assert "mode='unordered': the same tool calls in any order" in message
    assert "|  2  send_email(to='x')   (actual 2 extra)" in message


def test_subset_and_superset() -> None:
    one = events(("get_weather", {"city": "Paris"}))
    three = events(*[(n, a) for n, a in EXPECTED], ("rm_rf", {"path": "/"}))
    assert_trajectory(one, EXPECTED, mode="subset")
    assert_trajectory(three, EXPECTED, mode="superset")
    message = failure(three, EXPECTED, mode="subset")
    assert "no tool call outside the expected ones" in message
    assert "rm_rf(path='/')   (actual 2 extra)" in message
    message = failure(one, EXPECTED, mode="superset")
    assert "every expected tool call (others allowed)" in message
    assert "!  1  get_time(city='Paris')     |    (expected 1 missing)\n" in message
    both = events(("get_weather", {"city": "Lyon"}))
    assert "!  0  get_weather(city='Paris')  |  0  get_weather(city='Lyon')   (actual 0 extra)" in (
        failure(both, EXPECTED, mode="subset")
    )


def test_argument_rules_exact_ignore_custom_and_per_tool() -> None:
    actual = events(
        ("get_weather", {"city": "paris", "unit": "C"}), ("get_time", {"city": "Paris"})
    )
    assert "args='exact'" in failure(actual, EXPECTED)
    assert_trajectory(actual, EXPECTED, args="ignore")

    def same_city(expected: dict[str, Any], got: dict[str, Any]) -> bool:
        return str(got.get("city", "")).lower() == str(expected["city"]).lower()

    assert_trajectory(actual, EXPECTED, args=same_city)
    assert_trajectory(actual, EXPECTED, args={"get_weather": same_city})
    assert "args='custom'" in failure(actual, EXPECTED, args={"get_time": same_city})
    assert_trajectory(actual, ["get_weather", "get_time"])  # bare names: any arguments


def test_unordered_pairing_finds_a_matching_when_greedy_would_not() -> None:
    # the first expected step (any args) could take the first actual call and starve the second
    actual = events(("search", {"q": "a"}), ("search", {"q": "b"}))
    expected = [ToolStep("search"), ToolStep("search", {"q": "a"})]
    assert match_trajectory(actual, expected, mode="unordered").ok


def test_misuse_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="mode='fuzzy'"):
        assert_trajectory([], [], mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="args='loose'"):
        assert_trajectory([], [], args="loose")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="item 0: 42 is not a ToolStep"):
        trajectory_of([42])
    with pytest.raises(UsageError, match="cannot read a trajectory from 42"):
        trajectory_of(42)
    with pytest.raises(UsageError, match="<lines>:2: not a JSON line"):
        trajectory_of('{"type": "x"}\nnope\n')
    with pytest.raises(UsageError, match="cannot read a trajectory from it"):
        trajectory_of(tmp_path / "missing.jsonl")
