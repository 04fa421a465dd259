"""``stuntset eval``: the table, the reports, the exit status at the minimum, the progress
bar where asked."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from stuntset.cli import main

EXAMPLES = Path(__file__).parents[3] / "examples" / "evals"


def test_a_folder_runs_with_reports(tmp_path: Path) -> None:
    done = CliRunner().invoke(
        main,
        [
            "eval",
            str(EXAMPLES),
            "--runs",
            "8",
            "--json",
            str(tmp_path / "r.json"),
            "--html",
            str(tmp_path / "r.html"),
        ],
    )
    assert done.exit_code == 0, done.output
    assert "│ pdf_skill        │ scripted │ 7/8    │ 88%  │ scripted │ ok (≥ 50%) │" in done.output
    assert "Scripted results (on the doubles) test the graders and the wiring" in done.output
    assert "pdf_skill on scripted, run 6: skill_chosen: 'pdf' was never read" in done.output
    data = json.loads((tmp_path / "r.json").read_text())
    assert [(r["scenario"], r["runs"]) for r in data["results"]] == [
        ("notes_workflow", 8),
        ("pdf_skill", 8),
        ("prompt_injection", 8),
        ("skill_gating", 8),
    ]
    assert "<h1>stuntset eval</h1>" in (tmp_path / "r.html").read_text()


def test_below_the_minimum_exits_1() -> None:
    done = CliRunner().invoke(
        main, ["eval", str(EXAMPLES / "pdf_skill.toml"), "--runs", "8", "--min-pass-rate", "1"]
    )
    assert done.exit_code == 1
    assert "BELOW 100%" in done.output


def test_the_progress_bar_counts_every_run() -> None:
    done = CliRunner().invoke(
        main, ["eval", str(EXAMPLES / "pdf_skill.toml"), "--runs", "3", "--progress"]
    )
    assert done.exit_code == 0
    assert "3/3" in done.stderr


def test_a_behaviour_the_graders_judge_otherwise_exits_1_naming_the_run(tmp_path: Path) -> None:
    spec = tmp_path / "claims.toml"
    spec.write_text(
        'prompt = "p"\nruns = 1\n[[behaviour]]\npasses = true\n'
        'steps = [{ run = "curl x" }, { say = "done" }]\n[expect]\nforbid = ["curl"]\n'
    )
    done = CliRunner().invoke(main, ["eval", str(spec)])
    assert done.exit_code == 1, done.output
    assert (
        "claims on scripted, run 0: behaviour 0 declares passes = true, but the graders "
        "failed it" in done.output
    )
