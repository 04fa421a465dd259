"""Running evals on the scripted provider: behaviours chosen by weight from the seed (the
same seed, the same runs), every run graded, and the pass-rate assertion failing with the
failed runs' reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

from stuntset.errors import EvalBelowThreshold, UsageError
from stuntset.evals import EvalRunner, arun_eval, assert_pass_rate, load_eval, loads_eval

EXAMPLES = Path(__file__).parents[3] / "examples" / "evals"
pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


async def test_runs_follow_the_weights_and_the_seed() -> None:
    spec = load_eval(EXAMPLES / "pdf_skill.toml")
    first = await arun_eval(spec, runs=40, seed=1)
    again = await arun_eval(spec, runs=40, seed=1)
    other = await arun_eval(spec, runs=40, seed=2)
    chosen = [r.behaviour for r in first.runs]
    assert chosen == [r.behaviour for r in again.runs]
    assert chosen != [r.behaviour for r in other.runs]
    careless = chosen.count(1)
    assert 0 < careless < 20  # weight 1 of 4
    # the careless behaviour (no skill read) is exactly the failing one
    assert [r.index for r in first.runs if not r.passed] == [
        r.index for r in first.runs if r.behaviour == 1
    ]
    assert first.passed == 40 - careless
    assert first.criterion_passes("sandbox") == 40
    assert first.criterion_passes("skill_chosen") == 40 - careless
    assert first.interval is None  # scripted: an interval would measure the draw
    assert first.measures.startswith("the graders and the wiring, not the agent")


async def test_continuity_holds_across_prompts_on_the_scripted_provider() -> None:
    spec = load_eval(EXAMPLES / "notes_workflow.toml")
    result = await arun_eval(spec, runs=9, seed=0)
    failed = {r.behaviour for r in result.runs if not r.passed}
    assert failed <= {1}  # only the careless behaviour fails...
    for run in result.runs:
        if run.behaviour == 1:  # ...on the sandbox, naming the escaping write
            (reason,) = run.reasons()
            assert reason.startswith("sandbox: run:echo done >> ")
            assert "writes outside the workspace" in reason
    assert result.criterion_passes("continuity") == 9


async def test_below_the_minimum_the_assertion_lists_the_failed_runs() -> None:
    result = await arun_eval(load_eval(EXAMPLES / "pdf_skill.toml"), runs=8, seed=0)
    assert_pass_rate(result, 0.5)  # 7 of 8
    with pytest.raises(EvalBelowThreshold) as raised:
        assert_pass_rate(result, 1.0)
    message = str(raised.value)
    assert message.startswith(
        "pdf_skill on scripted: 7/8 runs passed (88%, scripted: this tests the graders and "
        "the wiring, not the agent), below the minimum 100%"
    )
    assert "  run 6: skill_chosen: 'pdf' was never read" in message


async def test_a_file_without_behaviours_needs_live_and_runs_must_be_positive() -> None:
    spec = loads_eval('prompt = "p"\n[expect]\nsandbox = true', source="bare.toml")
    with pytest.raises(UsageError, match=r"bare.toml: has no \[\[behaviour\]\]"):
        await arun_eval(spec)
    with pytest.raises(UsageError, match="the scripted target has no live mode"):
        await arun_eval(spec, live=True)
    with pytest.raises(UsageError, match="runs must be at least 1, got 0"):
        await arun_eval(load_eval(EXAMPLES / "pdf_skill.toml"), runs=0)


async def test_keep_leaves_each_runs_directories(tmp_path: Path) -> None:
    spec = load_eval(EXAMPLES / "pdf_skill.toml")
    await arun_eval(spec, runs=2, keep=tmp_path)
    kept = sorted(p.name.split("-")[1] for p in tmp_path.iterdir())
    assert kept == ["0", "1"]
    (first,) = tmp_path.glob("pdf_skill-0-*")
    assert (first / "workspace" / ".claude" / "skills" / "pdf" / "SKILL.md").is_file()
    assert (first / "workspace" / ".agents" / "skills" / "xlsx" / "SKILL.md").is_file()
    assert (first / "outside" / "canary.txt").read_text() == "leave me alone\n"


async def test_the_runner_resolves_files_next_to_the_test() -> None:
    runner = EvalRunner(EXAMPLES)
    result = await runner.arun("notes_workflow.toml", runs=2)
    assert (result.scenario, len(result.runs)) == ("notes_workflow", 2)
    with pytest.raises(UsageError, match=r"agent_eval: no eval file 'nope\.toml'; looked in"):
        await runner.arun("nope.toml")


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.toml")))
async def test_the_graders_agree_with_every_example_behaviours_declared_outcome(
    example: str,
) -> None:
    spec = load_eval(EXAMPLES / example)
    result = await arun_eval(spec, runs=40, seed=0)
    drawn = {r.behaviour for r in result.runs}
    assert drawn == set(range(len(spec.behaviours)))  # every behaviour was played
    assert result.disagreements == []
    for run in result.runs:
        declared = spec.behaviours[run.behaviour].passes  # type: ignore[index]
        assert declared is None or declared == run.passed


async def test_a_grader_that_disagrees_with_a_behaviour_is_reported() -> None:
    spec = loads_eval(
        'prompt = "p"\n'
        "[[behaviour]]\n"
        "passes = true\n"  # claims to pass, but runs what is forbidden
        'steps = [{ run = "curl x" }, { say = "done" }]\n'
        "[expect]\n"
        'forbid = ["curl"]\n',
        source="claims.toml",
    )
    result = await arun_eval(spec, runs=2, seed=0)
    assert [(r.index, r.expected, r.passed) for r in result.disagreements] == [
        (0, True, False),
        (1, True, False),
    ]
    assert result.runs[0].reasons() == ["forbidden_commands: ran what is forbidden: 'curl x'"]
