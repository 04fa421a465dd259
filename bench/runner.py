"""The bench runner: each case's subject and anchors run interleaved (A B C A B C …, rotating
the order every round, after a warm-up), so machine noise lands on all of them alike; the
report is ratios, never absolute times judged against a constant."""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Case", "Result", "Variant", "measure", "report", "write_json"]


@dataclass
class Variant:
    """One contender: ``call()`` does one unit of work (one SDK call, one spawn…)."""

    name: str
    call: Callable[[], object]
    setup: Callable[[], None] | None = None
    teardown: Callable[[], None] | None = None


@dataclass
class Result:
    variant: str
    samples: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


@dataclass
class Case:
    """A subject (first variant) measured against anchors (the rest).

    ``budget`` says in words what must hold; ``verdict(results)`` returns (ok, detail) or
    ``None`` where the case only reports.
    """

    name: str
    title: str
    variants: list[Variant]
    budget: str
    verdict: Callable[[dict[str, Result]], tuple[bool, str]] | None = None
    calls_per_round: int = 20
    rounds: int = 7
    warmup_rounds: int = 1
    unit: str = "ms"
    notes: list[str] = field(default_factory=list)
    #: Called once after the case (stop servers…).
    close: Callable[[], None] | None = None
    #: A case that computes its own results (e.g. throughput, a whole suite run).
    custom: Callable[[], dict[str, Result]] | None = None


def measure(case: Case, *, rounds: int | None = None) -> dict[str, Result]:
    if case.custom is not None:
        return case.custom()
    samples: dict[str, list[float]] = {v.name: [] for v in case.variants}
    total = case.warmup_rounds + (rounds or case.rounds)
    try:
        for round_index in range(total):
            shift = round_index % len(case.variants)
            order = case.variants[shift:] + case.variants[:shift]
            for variant in order:
                # setup/teardown bracket each block of calls (a patcher such as respx or vcrpy
                # must not stay active while another contender runs); they are not timed
                if variant.setup:
                    variant.setup()
                try:
                    for _ in range(case.calls_per_round):
                        start = time.perf_counter()
                        variant.call()
                        elapsed = time.perf_counter() - start
                        if round_index >= case.warmup_rounds:
                            samples[variant.name].append(elapsed * 1000)
                finally:
                    if variant.teardown:
                        variant.teardown()
    finally:
        if case.close is not None:
            case.close()
    return {name: Result(name, values) for name, values in samples.items()}


def ratio_line(results: dict[str, Result], subject: str) -> dict[str, float]:
    base = results[subject].median
    return {name: base / r.median for name, r in results.items() if name != subject and r.median}


def report(rows: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="stuntset bench (medians; ratio = subject / anchor, lower is faster)")
    for column in ("case", "variant", "median", "p95", "ratio", "budget", "verdict"):
        table.add_column(
            column, justify="right" if column in ("median", "p95", "ratio") else "left"
        )
    for row in rows:
        first = True
        for variant in row["variants"]:
            ratio = row["ratios"].get(variant["name"])
            table.add_row(
                row["case"] if first else "",
                variant["name"],
                f"{variant['median']:.3f} {row['unit']}",
                f"{variant['p95']:.3f} {row['unit']}",
                "" if ratio is None else f"{ratio:.2f}×",
                row["budget"] if first else "",
                row["verdict"] if first else "",
            )
            first = False
        table.add_section()
    console = Console(width=160)
    console.print(table)
    for row in rows:
        for note in row["notes"]:
            console.print(f"[dim]{row['case']}: {note}[/dim]")


def describe_machine() -> dict[str, str]:
    import os

    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": str(os.cpu_count()),
        "platform": platform.platform(),
    }


def write_json(rows: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": describe_machine(),
        "cases": rows,
    }
    path.write_text(json.dumps(payload, indent=2) + "\n")
