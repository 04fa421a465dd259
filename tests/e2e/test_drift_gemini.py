"""``stuntset drift --cli gemini`` over the whole catalog with the real ``@google/gemini-cli``
that the Node tier installs (``tests/node``: ``make node``; or ``$STUNTSET_GEMINI_BIN``),
over the model double's Gemini wire, offline, against the fake ``gemini``: any difference
outside the committed allowlist fails, gemini's own tools are what is compared, and the
README table's gemini columns are the ones this run generates.

The real CLI starts in 3–8 s a run on a loaded 2-core machine (a retry adds its 5 s backoff):
the run takes a minute or two."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pytest
from _drift_readme import only, readme_drift_table
from click.testing import CliRunner

from stuntset import scenarios
from stuntset.cli import main
from stuntset.drift import DriftReport
from stuntset.drift.gemini_cli import REFUSED_QUESTION
from stuntset.drift.report import readme_table
from stuntset.drift.runners import real_binary

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(
        real_binary("gemini") is None and not os.environ.get("STUNTSET_GEMINI_BIN"),
        reason="needs node and @google/gemini-cli (make node, or STUNTSET_GEMINI_BIN)",
    ),
    pytest.mark.real_time,
    pytest.mark.timeout(900),
]


@dataclass
class Run:
    report: DriftReport
    json: dict[str, object]
    stdout: str
    exit_code: int


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    path = tmp_path_factory.mktemp("drift") / "drift.json"
    result = CliRunner().invoke(
        main, ["drift", "--cli", "gemini", "--json", str(path)], env={"COLUMNS": "30"}
    )
    text = path.read_text()
    return Run(DriftReport.from_json(text), json.loads(text), result.stdout, result.exit_code)


def test_no_difference_outside_the_allowlist(run: Run) -> None:
    broken = [f"{c.scenario}: {c.label}" for c in run.report.cells if c.status != "same"]
    assert not [line for line in broken if "allowed" not in line], "\n".join(broken)
    assert not run.report.failed
    assert not run.report.stale
    assert run.exit_code == 0, run.stdout


def test_the_whole_catalog_is_played_and_almost_all_of_it_agrees(run: Run) -> None:
    cells = {c.scenario: c for c in run.report.cells}
    assert set(cells) == set(scenarios.names())
    assert all(c.cli == "gemini" for c in run.report.cells)
    same = sorted(name for name, cell in cells.items() if cell.status == "same")
    assert len(same) >= 16, sorted(set(cells) - set(same))
    happy = cells["happy_path"]
    assert [s["type"] for s in happy.real_steps][-2:] == ["run.completed", "result"]
    assert happy.real_steps[-1] == {"type": "result", "status": "success", "usage": True}
    assert happy.requests == 1  # the real gemini asked the double once
    assert cells["rate_limited"].requests == 2  # and retried the 429
    assert cells["spawn_missing"].real == "crashed: spawn_failed"
    assert all(c.real != "no terminal" and c.fake != "no terminal" for c in cells.values())


def test_the_tool_scenarios_compare_gemini_s_own_tools(run: Run) -> None:
    """read_file with its ``file_path``, run_shell_command, list_directory and ask_user (which
    the headless CLI has not registered), run by the real CLI in a laid-out directory."""
    cells = {c.scenario: c for c in run.report.cells}

    def calls(name: str) -> list[tuple[object, ...]]:
        steps = cells[name].real_steps
        assert cells[name].status == "same", cells[name].label
        return [
            (s["name"], s["input"]) if s["type"] == "tool.started" else (s["output"], s["is_error"])
            for s in steps
            if s["type"] in ("tool.started", "tool.completed")
        ]

    assert calls("tool_use") == [("read_file", {"file_path": "a.txt"}), ("", False)]
    assert calls("needs_approval") == [
        ("run_shell_command", {"command": "rm -rf build/"}),
        ("", False),
    ]
    assert calls("crash_mid_turn")[:2] == [
        ("run_shell_command", {"command": "make"}),
        ("building...", False),
    ]
    assert calls("auth_expired_mid_run") == [("list_directory", {"dir_path": "."}), (None, False)]
    asked = calls("input_request")
    assert asked[0][0] == "ask_user"
    assert asked[1] == (REFUSED_QUESTION, True)
    assert all("list_files" not in str(c.real_steps) for c in run.report.cells)


def test_the_report_names_the_real_gemini_and_its_version(run: Run) -> None:
    binaries = run.json["binaries"]
    assert isinstance(binaries, dict)
    assert set(binaries) == {"gemini"}
    assert binaries["gemini"].endswith(" (0.61.0)")
    assert f"real gemini: {binaries['gemini']}" in run.stdout
    for name in scenarios.names():
        assert f"│ {name} " in run.stdout, name


def test_the_readme_shows_this_table(run: Run) -> None:
    table = only(readme_table(run.report), ["gemini"])
    assert only(readme_drift_table(), ["gemini"]) == table, (
        f"README.md's drift table is stale in its gemini columns; this run's:\n{table}"
    )
