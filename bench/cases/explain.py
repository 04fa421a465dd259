"""Issue 28: what the failure timeline, the traces and the deadline cost a *passing* test.

Each variant is one pytest run (a subprocess) of the same 100 passing tests, each asking the
model double one question in process; a conftest in the sample times every test's whole
protocol (setup, call, teardown) from inside, so the runs' start-up is not in the samples.
Variants run interleaved, round after round. The subject is the default (the timeline kept,
traces ``retain-on-failure``, the 60 s deadline armed); ``off`` switches traces and the
deadline off; ``on`` writes a trace for every test (reported); ``plain`` is a test without a
double, with and without the plugin (``-p no:stuntset``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.runner import Case, Result

TESTS = 100
ROUNDS = 7

CONFTEST = """
import json, os, time
import pytest

_TIMES = []

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    start = time.perf_counter()
    try:
        return (yield)
    finally:
        _TIMES.append((time.perf_counter() - start) * 1000)

def pytest_sessionfinish(session):
    with open(os.environ["STUNTSET_BENCH_OUT"], "w") as out:
        json.dump(_TIMES[1:], out)  # the first test pays the imports
"""

DOUBLE_TESTS = """
import httpx2

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

def _ask(stand_in):
    with httpx2.Client(transport=stand_in.transport()) as client:
        assert client.post("http://double/v1/chat/completions", json=BODY).status_code == 200
""" + "".join(
    f"""
def test_{n}(stand_in):
    stand_in.play(__import__("stuntset").scenarios.build("happy_path"))
    _ask(stand_in)
"""
    for n in range(TESTS)
)

PLAIN_TESTS = "".join(f"def test_{n}():\n    assert {n} == {n}\n" for n in range(TESTS))


def _sample() -> Path:
    root = Path(tempfile.mkdtemp(prefix="stuntset-bench-explain-"))
    (root / "conftest.py").write_text(CONFTEST)
    (root / "test_double.py").write_text(DOUBLE_TESTS)
    (root / "test_plain.py").write_text(PLAIN_TESTS)
    (root / "pytest.ini").write_text("[pytest]\n")
    return root


def explain_overhead() -> Case:
    root = _sample()
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    base += ["-p", "no:hypothesispytest", "-p", "no:xdist", "-p", "no:cov"]
    variants: dict[str, list[str]] = {
        "default (retain-on-failure)": ["test_double.py"],
        "traces and deadline off": [
            "test_double.py",
            "--stuntset-trace=off",
            "-o",
            "stuntset_deadline=0",
        ],
        "trace on (every test)": ["test_double.py", "--stuntset-trace=on"],
        "plain test, plugin": ["test_plain.py"],
        "plain test, -p no:stuntset": ["test_plain.py", "-p", "no:stuntset"],
    }

    def run() -> dict[str, Result]:
        samples: dict[str, list[float]] = {name: [] for name in variants}
        names = list(variants)
        for round_index in range(ROUNDS + 1):
            shift = round_index % len(names)
            for name in names[shift:] + names[:shift]:
                out = root / "times.json"
                env = {**os.environ, "STUNTSET_BENCH_OUT": str(out)}
                subprocess.run(
                    [*base, *variants[name]], cwd=root, env=env, check=True, capture_output=True
                )
                if round_index:  # the first round warms the caches
                    samples[name] += json.loads(out.read_text())
        return {name: Result(name, values) for name, values in samples.items()}

    def verdict(results: dict[str, Result]) -> tuple[bool, str]:
        default = results["default (retain-on-failure)"].median
        off = results["traces and deadline off"].median
        on = results["trace on (every test)"].median
        plain = results["plain test, plugin"].median
        bare = results["plain test, -p no:stuntset"].median
        ratio = default / off
        return ratio <= 1.02, (
            f"{ratio:.3f}× with traces and deadline off; trace on {on / off:.2f}×; "
            f"a plain test {plain * 1000:.0f} µs with the plugin, {bare * 1000:.0f} µs without"
        )

    return Case(
        name="explain_overhead",
        title="per-test cost of the failure timeline, traces and deadline on passing tests",
        variants=[],
        budget="default ≤ 1.02× traces and deadline off (issue 28)",
        verdict=verdict,
        custom=run,
    )
