"""The Wilson interval, against values computed by hand."""

from __future__ import annotations

import pytest

from stuntset.evals import wilson_interval


@pytest.mark.parametrize(
    ("passed", "runs", "low", "high"),
    [
        (7, 8, 0.5291, 0.9776),
        (3, 3, 0.4385, 1.0),
        (0, 10, 0.0, 0.2775),
        (50, 100, 0.4038, 0.5962),
        (0, 0, 0.0, 1.0),
    ],
)
def test_wilson_interval(passed: int, runs: int, low: float, high: float) -> None:
    got = wilson_interval(passed, runs)
    assert got == (pytest.approx(low, abs=1e-4), pytest.approx(high, abs=1e-4))


def test_impossible_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="need 0 <= passed <= runs, got passed=4, runs=3"):
        wilson_interval(4, 3)
