"""Pass rates with honest uncertainty: the Wilson score interval, which stays inside [0, 1]
and stays wide for few runs (3 passes of 3 is not "100%": it is 44–100% at 95%)."""

from __future__ import annotations

import math

__all__ = ["wilson_interval"]


def wilson_interval(passed: int, runs: int, *, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of ``passed`` successes in ``runs`` trials (``z``: 95% by
    default). ``(0.0, 1.0)`` for no runs."""
    if runs < 0 or not 0 <= passed <= runs:
        raise ValueError(f"need 0 <= passed <= runs, got passed={passed}, runs={runs}")
    if runs == 0:
        return (0.0, 1.0)
    p = passed / runs
    denominator = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / denominator
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / denominator
    return (max(0.0, centre - half), min(1.0, centre + half))
