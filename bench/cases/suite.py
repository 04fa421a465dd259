"""Cases 7–8: the project's own test suite, and the plugin's collection overhead."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.runner import Case, Result, Variant

ROOT = Path(__file__).resolve().parents[2]


def plugin_overhead() -> Case:
    sample = Path(tempfile.mkdtemp(prefix="stuntset-bench-collect-"))
    for module in range(10):
        tests = "\n".join(f"def test_{i}():\n    pass\n" for i in range(20))
        (sample / f"test_sample_{module}.py").write_text(tests)
    base = [
        sys.executable,
        "-m",
        "pytest",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        str(sample),
    ]

    def collect(*extra: str) -> None:
        subprocess.run([*base, *extra], cwd=sample, check=True, capture_output=True)

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        extra = results["with stuntset"].median - results["without stuntset"].median
        return extra <= 150, f"{extra:+.0f} ms"

    return Case(
        name="plugin_overhead",
        title="pytest --collect-only on 200 trivial tests, with and without the plugin",
        variants=[
            Variant("with stuntset", lambda: collect()),
            Variant("without stuntset", lambda: collect("-p", "no:stuntset")),
        ],
        budget="≤ +150 ms",
        verdict=verdict,
        calls_per_round=2,
        rounds=5,
    )


def test_suite() -> Case:
    """One `make test`-equivalent pytest run (xdist on every core), with per-test durations."""

    def run() -> dict[str, Result]:
        start = time.perf_counter()
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-n",
                "auto",
                "-q",
                "-p",
                "no:randomly",
                "--durations=0",
                "--durations-min=0",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - start
        durations = [
            float(m.group(1)) * 1000 for m in re.finditer(r"^([\d.]+)s call ", out.stdout, re.M)
        ]
        slowest = sorted(
            re.findall(r"^([\d.]+)s call\s+(\S+)", out.stdout, re.M), key=lambda p: -float(p[0])
        )[:10]
        _NOTES.clear()
        _NOTES.extend(f"slow: {float(s) * 1000:.0f} ms {name}" for s, name in slowest)
        tail = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-200:]
        _NOTES.append(f"outcome: {tail}")
        return {
            "whole suite": Result("whole suite", [wall * 1000]),
            "per test": Result("per test", durations or [0.0]),
        }

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        wall = results["whole suite"].median / 1000
        median = results["per test"].median
        return wall < 120 and median < 20, f"{wall:.1f} s wall, median test {median:.1f} ms"

    return Case(
        name="test_suite",
        title="the project's own test suite (pytest -n auto)",
        variants=[],
        budget="suite < 2 min on 2 cores; median test < 20 ms",
        verdict=verdict,
        custom=run,
        notes=_NOTES,
    )


_NOTES: list[str] = []
