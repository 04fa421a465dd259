"""``stuntset drift`` over the whole catalog with the real binaries shipped in the extras'
wheels (the bundled ``claude``, ``codex`` from openai-codex-cli-bin), over the model double,
against the fakes: any difference outside the committed allowlist fails, and the README's
table is the one this run generates."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from stuntset import scenarios
from stuntset.cli import main
from stuntset.drift import DriftReport, drift
from stuntset.drift.report import readme_table
from stuntset.drift.runners import CLIS, real_binary
from stuntset.drift.table import print_drift

README = Path(__file__).parents[2] / "README.md"
_MARKERS = re.compile(r"<!-- drift-table -->\n(.*?)<!-- /drift-table -->", re.S)

pytestmark = [
    pytest.mark.skipif(
        any(real_binary(cli) is None for cli in CLIS),
        reason="the real claude/codex binaries come with the claude and codex extras",
    ),
    pytest.mark.real_time,
    pytest.mark.timeout(900),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> DriftReport:
    return drift(workdir=tmp_path_factory.mktemp("drift"), jobs=4)


def test_no_difference_outside_the_allowlist(report: DriftReport) -> None:
    broken = [
        f"{c.scenario} on {c.cli}: {c.label}"
        for c in report.cells
        if c.status in ("differs", "error")
    ]
    assert not broken, "\n".join(broken)
    assert not report.failed


def test_the_whole_catalog_is_played_on_both_real_binaries(report: DriftReport) -> None:
    assert {(c.scenario, c.cli) for c in report.cells} == {
        (name, cli) for name in scenarios.names() for cli in CLIS
    }
    # not vacuous: the plain scenarios agree, and every real run reached the model double
    # (its outcome is known) or, for spawn_missing, failed to spawn
    for cli in CLIS:
        happy = next(c for c in report.cells if c.scenario == "happy_path" and c.cli == cli)
        assert happy.status == "same"
        assert happy.real_steps == happy.fake_steps
        assert [s["type"] for s in happy.real_steps][-1] == "run.completed"
    assert all(c.real != "no terminal" and c.fake != "no terminal" for c in report.cells)


def test_the_json_report(report: DriftReport, tmp_path: Path) -> None:
    data = json.loads(report.to_json())
    assert data["failed"] is False
    assert len(data["cells"]) == len(scenarios.names()) * len(CLIS)
    assert {"scenario", "cli", "status", "real", "fake", "difference", "reason"} <= set(
        data["cells"][0]
    )


def test_the_readme_shows_this_table(report: DriftReport) -> None:
    found = _MARKERS.search(README.read_text(encoding="utf-8"))
    assert found is not None, "README.md has no <!-- drift-table --> block"
    table = readme_table(report)
    assert found.group(1) == table, f"README.md's drift table is stale; this run's:\n{table}"


def test_a_difference_outside_the_allowlist_fails_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "allowlist.toml"
    empty.write_text("# nothing is allowed\n")
    code = print_drift(["codex"], ["tool_use"], allowlist=empty, workdir=tmp_path / "w")
    out = capsys.readouterr().out
    assert code == 1
    assert "DIFFERS step 3: real message.delta text='The file says: hello from a.txt'" in out
    assert "fake tool.started name='read_file'" in out


def test_the_command_writes_its_json_report(tmp_path: Path) -> None:
    report = tmp_path / "drift.json"
    argv = ["drift", "--cli", "codex", "--scenario", "happy_path", "--json", str(report)]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    assert "happy_path" in result.output
    assert "same" in result.output
    (cell,) = json.loads(report.read_text())["cells"]
    assert (cell["scenario"], cell["cli"], cell["status"]) == ("happy_path", "codex", "same")
    assert cell["real_steps"] == cell["fake_steps"]
    assert cell["requests"] == 1  # the real codex asked the model double once
