"""The ``agent_eval`` fixture through pytester: an eval file next to the test, played N
times, a passing minimum and a failing one with the failed runs' reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

QUIET = ("-p", "no:hypothesispytest", "-p", "no:respx", "-p", "no:cacheprovider")
EXAMPLE = Path(__file__).parents[2] / "examples" / "evals" / "pdf_skill.toml"

TESTS = """
from stuntset.evals import assert_pass_rate

def test_meets_its_minimum(agent_eval):
    result = agent_eval("evals/pdf_skill.toml", runs=8)
    assert (result.passed, len(result.runs)) == (7, 8)
    assert_pass_rate(result)

def test_demands_too_much(agent_eval):
    assert_pass_rate(agent_eval("evals/pdf_skill.toml", runs=8), 0.95)
"""


@pytest.mark.slow
def test_agent_eval_fixture(pytester: pytest.Pytester) -> None:
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "pdf_skill.toml").write_text(EXAMPLE.read_text())
    pytester.makepyfile(test_eval=TESTS)
    result = pytester.runpytest_subprocess(*QUIET)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*EvalBelowThreshold: pdf_skill on scripted: 7/8 runs passed (88%, scripted: this "
            "tests the graders and the wiring, not the agent), below the minimum 95%",
            "*run 6: skill_chosen: 'pdf' was never read*",
        ]
    )
