"""Cases: cost per unit as inputs grow (issue 37, item 3). Each measures the same work at a
small and a large size, interleaved round by round, and reports the cost per unit (per delta,
per frame, per turn); the budget is that it stays flat: the large size's per-unit median at
most 1.5× the small one's (noise on a shared machine; a quadratic cost shows 10× or more)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from bench.runner import Case, Result

FLAT = 1.5


def _per_unit(
    sizes: list[int], make: Callable[[int], Callable[[], object]], rounds: int
) -> dict[str, Result]:
    """Per-unit times (µs) of ``make(size)()`` for each size, the sizes taking turns."""
    calls = {size: make(size) for size in sizes}
    samples: dict[int, list[float]] = {size: [] for size in sizes}
    for index in range(rounds + 1):
        order = sizes[index % len(sizes) :] + sizes[: index % len(sizes)]
        for size in order:
            start = time.perf_counter()
            calls[size]()
            elapsed = time.perf_counter() - start
            if index:  # the first round warms up
                samples[size].append(elapsed / size * 1e6)
    return {f"{size:,}": Result(f"{size:,}", values) for size, values in samples.items()}


def _flat(unit: str) -> Callable[[dict[str, Result]], tuple[bool, str]]:
    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        medians = [r.median for r in results.values()]
        ratio = medians[-1] / medians[0]
        spread = ", ".join(f"{name}: {r.median:.2f} µs" for name, r in results.items())
        return ratio <= FLAT, f"{ratio:.2f}× per {unit} from smallest to largest ({spread})"

    return verdict


def project_scaling() -> Case:
    """``project()`` of one message of 16k, 64k and 128k deltas (was quadratic: 40 ms, 3.4 s,
    15.8 s), per delta."""
    from stuntset.events import Event, MessageDelta, RunStarted
    from stuntset.log.projections import project

    def make(size: int) -> Callable[[], object]:
        events: list[Event] = [RunStarted(run_id="r", ts=0.0, session_id="s", provider="p")]
        events += [
            MessageDelta(run_id="r", ts=0.0, item_id="m", text=f"tok{i} ") for i in range(size)
        ]
        return lambda: project(events)

    return Case(
        name="project_scaling",
        title="project() of one message of 16k / 64k / 128k deltas, per delta",
        variants=[],
        budget=f"flat: ≤ {FLAT}× per delta from 16k to 128k",
        verdict=_flat("delta"),
        unit="µs",
        custom=lambda: _per_unit([16_000, 64_000, 128_000], make, rounds=5),
    )


def _median(values: list[float]) -> float:
    return statistics.median(values)
