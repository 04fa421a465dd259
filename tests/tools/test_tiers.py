"""The suite's tier guard (tests/_tiers.py), the durations report and the stress runner."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import _tiers

TOOLS = Path(__file__).parent

# a test that starts an executable called ``uv`` (a package build, by the guard's rules)
STARTS_UV = """
import subprocess
import sys
import pytest

def _uv(tmp_path):
    uv = tmp_path / "uv"
    uv.write_text("#!/bin/sh\\nexit 0\\n")
    uv.chmod(0o755)
    return str(uv)

def test_unmarked(tmp_path):
    subprocess.run([_uv(tmp_path), "--version"], check=True)

@pytest.mark.wheel
def test_marked(tmp_path):
    subprocess.run([_uv(tmp_path), "--version"], check=True)

def test_starts_nothing_of_a_tier(tmp_path):
    subprocess.run(["true"], check=True)

def test_unmarked_grandchild(tmp_path):  # a Python child that starts it
    code = f"import subprocess; subprocess.run([{_uv(tmp_path)!r}, '--version'], check=True)"
    subprocess.run([sys.executable, "-c", code], check=True)
"""


@pytest.mark.slow  # a pytest or a stress run in a subprocess
def test_a_test_starting_a_tier_process_without_its_marker_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(TOOLS.parent))  # tests/, where _tiers.py lives
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # only the guard, loaded below
    pytester.makepyfile(test_spawns=STARTS_UV)
    result = pytester.runpytest_subprocess("-p", "_tiers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, errors=2)
    result.stdout.fnmatch_lines(
        ["*test_unmarked started */uv (builds the package*) without @pytest.mark.wheel*"]
    )
    result.stdout.fnmatch_lines(  # seen by the hook _spawn_site puts in every Python below
        ["*test_unmarked_grandchild started */uv (builds the package*) without *"]
    )
    assert "test_marked started" not in result.stdout.str()


@pytest.mark.slow  # a pytest or a stress run in a subprocess
def test_the_guard_can_be_turned_off(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_spawns=STARTS_UV)
    monkeypatch.setenv("PYTHONPATH", str(TOOLS.parent))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("STUNTSET_TIER_GUARD", "off")
    result = pytester.runpytest_subprocess("-p", "_tiers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


@pytest.mark.parametrize(
    ("executable", "argv", "tier"),
    [
        ("/opt/x/claude", [], "real_cli"),  # by resolved path, whatever its name
        ("/usr/bin/python3", ["python3", "-m", "pip", "install", "x"], "wheel"),
        ("/somewhere/bin/uv", ["uv", "sync"], "wheel"),
        ("/usr/bin/chromium", [], "browser"),
        ("/v/site-packages/playwright/driver/node", [], "browser"),
        ("/usr/local/bin/node", [], "node"),
        ("/usr/bin/python3", ["python3", "-c", "pass"], None),
        ("/tmp/bin/claude", [], None),  # a fake claude is the fast tier's own
        ("/usr/bin/git", [], None),
    ],
)
def test_what_each_process_belongs_to(executable: str, argv: list[str], tier: str | None) -> None:
    known = {"/opt/x/claude": "real_cli"}
    assert _tiers.tier_of(executable, argv, known) == tier


def test_every_tier_marker_is_a_make_target_and_excluded_from_the_fast_tier() -> None:
    makefile = (TOOLS.parents[1] / "Makefile").read_text()
    fast = next(line for line in makefile.splitlines() if line.startswith("FAST :="))
    for tier in _tiers.TIERS:
        assert f"not {tier}" in fast, tier
        assert f"-m {tier} " in makefile, f"no target runs the {tier} tier"


def test_the_durations_report_groups_by_tier_slowest_first(tmp_path: Path) -> None:
    tests = [
        {"nodeid": f"t.py::fast{i}", "tier": "fast", "seconds": i / 100} for i in range(20)
    ] + [{"nodeid": "t.py::real", "tier": "real_cli", "seconds": 3.5}]
    (tmp_path / "coverage.json").write_text(json.dumps(tests))
    out = subprocess.run(
        [sys.executable, str(TOOLS / "durations.py"), str(tmp_path), "--top", "3"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[0].startswith("== coverage run, tier fast: 20 tests, 1.9 s in all")
    assert [line.split()[-1] for line in out[1:4]] == [
        "t.py::fast19",
        "t.py::fast18",
        "t.py::fast17",
    ]
    assert out[4].startswith("== coverage run, tier real_cli: 1 tests")
    assert "1 over 2 s" in out[4]


@pytest.mark.slow  # a pytest or a stress run in a subprocess
def test_stress_reports_every_failed_round_and_never_retries(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    # fails on the second call only: a flake, which must be reported, not retried away
    flaky = (
        "import pathlib,sys; p=pathlib.Path(sys.argv[1]); n=int(p.read_text() or 0) "
        "if p.exists() else 0; p.write_text(str(n+1)); sys.exit(1 if n == 1 else 0)"
    )
    done = subprocess.run(
        [
            sys.executable,
            str(TOOLS / "stress.py"),
            "--rounds",
            "3",
            "--spinners",
            "1",
            "--",
            sys.executable,
            "-c",
            flaky,
            str(counter),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert "stress: 1 of 3 round(s) failed: [2]" in done.stdout
    assert counter.read_text() == "3"  # three rounds ran, none twice


def test_stress_refuses_a_missing_command() -> None:
    done = subprocess.run(
        [sys.executable, str(TOOLS / "stress.py"), "--rounds", "1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "a command after --" in done.stderr


def test_the_slow_list_is_ids_without_comments(tmp_path: Path) -> None:
    listed = tmp_path / "slow.txt"
    listed.write_text("# why\n\ntests/a.py::test_x[1]\n  tests/b.py::test_y  \n")
    assert _tiers.slow_list(listed) == {"tests/a.py::test_x[1]", "tests/b.py::test_y"}
    assert _tiers.slow_list(tmp_path / "missing.txt") == frozenset()


def test_every_listed_slow_test_still_exists() -> None:
    """A renamed or deleted test leaves a stale line: its file and function must be there."""
    root = TOOLS.parents[1]
    stale = []
    for nodeid in sorted(_tiers.slow_list()):
        path, _, rest = nodeid.partition("::")
        name = rest.split("[")[0].split("::")[-1]
        source = root / path
        if not source.is_file() or f"def {name}(" not in source.read_text():
            stale.append(nodeid)
    assert stale == [], f"tests/slow.txt names tests that are gone: {stale}"
