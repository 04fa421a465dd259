"""Reports: the JSON carries every number the table shows; the HTML page is self-contained
and escapes what the files hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stuntset.evals import arun_eval, load_eval, render_html, to_json, write_html, write_json
from stuntset.evals.report import table_rows

EXAMPLES = Path(__file__).parents[3] / "examples" / "evals"
pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


async def test_json_html_and_table_agree(tmp_path: Path) -> None:
    result = await arun_eval(load_eval(EXAMPLES / "pdf_skill.toml"), runs=8, seed=0)
    write_json(tmp_path / "r.json", [result], seed=0)
    data = json.loads((tmp_path / "r.json").read_text())
    assert data == to_json([result], seed=0)
    (entry,) = data["results"]
    assert (entry["passed"], entry["runs"], entry["meets_minimum"]) == (7, 8, True)
    # scripted: the rate is the weights', so there is no interval, and the report says so
    assert (entry["mode"], entry["ci95"]) == ("scripted", None)
    assert entry["measures"].startswith("the graders and the wiring, not the agent")
    assert entry["criteria"]["skill_chosen"] == {"passed": 7, "runs": 8}
    (failed,) = [r for r in entry["run_results"] if not r["passed"]]
    assert failed["reasons"][0].startswith("skill_chosen: 'pdf' was never read")
    assert table_rows([result]) == [
        ("pdf_skill", "scripted", "7/8", "88%", "scripted", "ok (≥ 50%)")
    ]
    write_html(tmp_path / "r.html", [result], seed=0)
    page = (tmp_path / "r.html").read_text()
    assert "<td>7/8</td><td>88%</td>" in page
    assert "Scripted results (on the doubles) test the graders and the wiring" in page
    assert "pdf_skill on scripted, run 6" in page
    assert "http" not in page  # nothing fetched


async def test_html_escapes_names() -> None:
    result = await arun_eval(load_eval(EXAMPLES / "pdf_skill.toml"), runs=1)
    result.scenario = "<script>alert(1)</script>"
    page = render_html([result], seed=0)
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


async def test_a_live_result_carries_its_interval() -> None:
    result = await arun_eval(load_eval(EXAMPLES / "pdf_skill.toml"), runs=8, seed=0)
    result.live = True  # as if the model had decided each run: the same 7 of 8
    (entry,) = to_json([result], seed=0)["results"]
    assert entry["mode"] == "live"
    assert entry["ci95"] == [pytest.approx(0.5291, abs=1e-4), pytest.approx(0.9776, abs=1e-4)]
    assert table_rows([result])[0][4] == "53%–98%"
    assert "Scripted results" not in render_html([result], seed=0)
