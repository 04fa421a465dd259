"""Running an eval: each scenario N times on a target, one fresh workspace per run, a
behaviour chosen per run by its weight from a seeded generator (the same seed, the same
choices), each run graded.

What a result measures depends on how it ran. Live, the model decides: the pass rate
estimates the agent's, with its 95% Wilson interval. Offline the behaviours are scripted and
drawn by weight, so the rate is the weights' and says nothing of the agent; such a result
has no interval, says it tests the graders and the wiring (``measures``), and lists the runs
where the graders disagreed with a behaviour's declared ``passes`` (``disagreements``)."""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from stuntset.errors import EvalBelowThreshold, UsageError
from stuntset.evals.criteria import Grade, grade
from stuntset.evals.spec import EvalSpec
from stuntset.evals.stats import wilson_interval
from stuntset.evals.targets import Target, Workdir, make_target, remove

__all__ = ["EvalResult", "EvalRunner", "RunResult", "arun_eval", "assert_pass_rate", "specs_of"]

Progress = Callable[["RunResult"], None]


@dataclass(frozen=True)
class RunResult:
    """One run: which behaviour played (``None`` live), each criterion's grade, a crash, and
    how long it took."""

    index: int
    behaviour: int | None
    grades: tuple[Grade, ...]
    crashed: str | None
    seconds: float
    #: what the behaviour declared the graders must say (``passes``), offline
    expected: bool | None = None

    @property
    def passed(self) -> bool:
        return self.crashed is None and all(g.passed for g in self.grades)

    @property
    def disagrees(self) -> bool:
        """The graders said otherwise than the behaviour declared."""
        return self.expected is not None and self.expected != self.passed

    def reasons(self) -> list[str]:
        out = [f"crashed: {self.crashed}"] if self.crashed else []
        return out + [f"{g.criterion}: {g.detail}" for g in self.grades if not g.passed]


@dataclass
class EvalResult:
    """A scenario's runs on one target."""

    scenario: str
    source: str
    target: str
    criteria: tuple[str, ...]
    min_pass_rate: float | None
    runs: list[RunResult] = field(default_factory=list)
    #: the model decided (``--live``); else the behaviours were scripted
    live: bool = False

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.runs)

    @property
    def rate(self) -> float:
        return self.passed / len(self.runs) if self.runs else 0.0

    @property
    def interval(self) -> tuple[float, float] | None:
        """The rate's 95% Wilson interval, live; ``None`` offline, where the outcome is
        scripted and an interval would measure the random draw of the behaviours."""
        return wilson_interval(self.passed, len(self.runs)) if self.live else None

    @property
    def measures(self) -> str:
        """What the pass rate is evidence of."""
        if self.live:
            return "the agent (the model decided each run)"
        return (
            "the graders and the wiring, not the agent (scripted behaviours drawn by weight: "
            "the rate follows the weights; run --live to measure the agent)"
        )

    @property
    def disagreements(self) -> list[RunResult]:
        """Runs the graders judged otherwise than their behaviour's ``passes`` declared."""
        return [r for r in self.runs if r.disagrees]

    def criterion_passes(self, criterion: str) -> int:
        return sum(any(g.criterion == criterion and g.passed for g in r.grades) for r in self.runs)

    @property
    def meets_minimum(self) -> bool:
        return self.min_pass_rate is None or self.rate >= self.min_pass_rate


def _choose(spec: EvalSpec, seed: int, index: int) -> int:
    weights = [b.weight for b in spec.behaviours]
    chooser = random.Random(f"{seed}:{spec.name}:{index}")
    return chooser.choices(range(len(weights)), weights=weights)[0]


async def arun_eval(
    spec: EvalSpec,
    target: str | Target = "scripted",
    *,
    runs: int | None = None,
    seed: int = 0,
    live: bool = False,
    keep: Path | None = None,
    progress: Progress | None = None,
) -> EvalResult:
    """Play ``spec`` ``runs`` times (default: the file's ``runs``) on ``target`` and grade
    every run. ``keep``: leave each run's directories under that folder (for a look at what
    the agent did) instead of deleting them."""
    chosen = make_target(target, live=live) if isinstance(target, str) else target
    live = live or chosen.name.endswith("-live")
    if not live and not spec.behaviours:
        raise UsageError(
            f"{spec.source}: has no [[behaviour]]: on the doubles the model needs one "
            f"(or run it --live)"
        )
    count = spec.runs if runs is None else runs
    if count < 1:
        raise UsageError(f"runs must be at least 1, got {count}")
    result = EvalResult(
        spec.name,
        spec.source,
        chosen.name,
        tuple(spec.expect.criteria()),
        spec.min_pass_rate,
        live=live,
    )
    for index in range(count):
        behaviour = None if live else _choose(spec, seed, index)
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
        workdir = Workdir(Path(tempfile.mkdtemp(prefix=f"{spec.name}-{index}-", dir=keep)))
        started = time.perf_counter()
        try:
            workdir.prepare(spec)
            obs = await chosen.play(
                spec, None if behaviour is None else spec.behaviours[behaviour], workdir
            )
        finally:
            if keep is None:
                remove(workdir)
        run = RunResult(
            index,
            behaviour,
            tuple(grade(spec.expect, obs)),
            obs.crashed,
            time.perf_counter() - started,
            None if behaviour is None else spec.behaviours[behaviour].passes,
        )
        result.runs.append(run)
        if progress is not None:
            progress(run)
    return result


def assert_pass_rate(result: EvalResult, minimum: float | None = None) -> None:
    """Fail (``EvalBelowThreshold``) when ``result``'s pass rate is below ``minimum`` (default:
    the scenario's ``min_pass_rate``), listing the failed runs' reasons."""
    __tracebackhide__ = True
    floor = result.min_pass_rate if minimum is None else minimum
    if floor is None:
        raise UsageError(f"{result.source}: no minimum: pass one or set min_pass_rate")
    if result.rate >= floor:
        return
    interval = result.interval
    spread = (
        f"95% CI {interval[0]:.0%}–{interval[1]:.0%}"
        if interval is not None
        else "scripted: this tests the graders and the wiring, not the agent"
    )
    failed = [r for r in result.runs if not r.passed]
    lines = [
        f"{result.scenario} on {result.target}: {result.passed}/{len(result.runs)} runs passed "
        f"({result.rate:.0%}, {spread}), below the minimum {floor:.0%}"
    ]
    lines += [f"  run {r.index}: {'; '.join(r.reasons())}" for r in failed[:10]]
    raise EvalBelowThreshold("\n".join(lines))


def specs_of(paths: Sequence[Path]) -> list[Path]:
    """The eval files named: files as given, directories' ``*.toml`` sorted."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.toml"))
            if not found:
                raise UsageError(f"{path}: holds no *.toml eval file")
            out += found
        else:
            out.append(path)
    return out


class EvalRunner:
    """What the ``agent_eval`` fixture gives a test: ``runner(path, target=..., runs=...)``
    runs an eval file (a relative path is resolved against ``base``, the test file's folder)
    and returns its ``EvalResult``; ``await runner.arun(...)`` inside an async test."""

    __test__ = False

    def __init__(self, base: Path | None = None, *, seed: int = 0) -> None:
        self.base = base
        self.seed = seed

    def _spec(self, path: str | Path) -> EvalSpec:
        from stuntset._plugin_support import resolve_script_path
        from stuntset.evals.spec import load_eval

        return load_eval(resolve_script_path(path, self.base, "agent_eval", kind="eval"))

    async def arun(
        self, path: str | Path, target: str = "scripted", *, runs: int | None = None
    ) -> EvalResult:
        return await arun_eval(self._spec(path), target, runs=runs, seed=self.seed)

    def __call__(
        self, path: str | Path, target: str = "scripted", *, runs: int | None = None
    ) -> EvalResult:
        import anyio

        spec = self._spec(path)
        return anyio.run(lambda: arun_eval(spec, target, runs=runs, seed=self.seed))
