"""An eval's results as JSON (for machines and trends), as one self-contained HTML page (for
people: rates with their intervals drawn, every failed run's reasons), and as a terminal
table."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stuntset.evals.runner import EvalResult

__all__ = ["render_html", "table_rows", "to_json", "write_html", "write_json"]

REPORT_VERSION = 2


def _spread(result: EvalResult) -> str:
    """The interval as shown, or why there is none."""
    if result.interval is None:
        return "scripted"
    low, high = result.interval
    return f"{low:.0%}–{high:.0%}"


def _result_json(result: EvalResult) -> dict[str, Any]:
    interval = result.interval
    return {
        "scenario": result.scenario,
        "source": result.source,
        "target": result.target,
        "mode": "live" if result.live else "scripted",
        "measures": result.measures,
        "runs": len(result.runs),
        "passed": result.passed,
        "pass_rate": result.rate,
        "ci95": None if interval is None else list(interval),
        "disagreements": [r.index for r in result.disagreements],
        "min_pass_rate": result.min_pass_rate,
        "meets_minimum": result.meets_minimum,
        "criteria": {
            c: {"passed": result.criterion_passes(c), "runs": len(result.runs)}
            for c in result.criteria
        },
        "run_results": [
            {
                "run": r.index,
                "behaviour": r.behaviour,
                "passed": r.passed,
                "expected": r.expected,
                "seconds": round(r.seconds, 3),
                "reasons": r.reasons(),
            }
            for r in result.runs
        ],
    }


def to_json(results: Sequence[EvalResult], *, seed: int) -> dict[str, Any]:
    """The report as a JSON-ready dict."""
    return {
        "version": REPORT_VERSION,
        "seed": seed,
        "results": [_result_json(r) for r in results],
    }


def write_json(path: Path, results: Sequence[EvalResult], *, seed: int) -> None:
    path.write_text(json.dumps(to_json(results, seed=seed), indent=2) + "\n")


def table_rows(results: Sequence[EvalResult]) -> list[tuple[str, ...]]:
    """Scenario, target, passed/runs, rate, 95% interval (``scripted`` offline: there is
    none), and the minimum's verdict."""
    rows: list[tuple[str, ...]] = []
    for r in results:
        verdict = (
            ""
            if r.min_pass_rate is None
            else (
                f"ok (≥ {r.min_pass_rate:.0%})"
                if r.meets_minimum
                else f"BELOW {r.min_pass_rate:.0%}"
            )
        )
        rows.append(
            (
                r.scenario,
                r.target,
                f"{r.passed}/{len(r.runs)}",
                f"{r.rate:.0%}",
                _spread(r),
                verdict,
            )
        )
    return rows


_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1d1d1f}
table{border-collapse:collapse;margin:1rem 0}td,th{padding:.3rem .7rem;border-bottom:1px solid #ddd;text-align:left}
.bar{position:relative;width:200px;height:12px;background:#eee;border-radius:3px}
.rate{position:absolute;top:0;left:0;height:12px;background:#3a7;border-radius:3px}
.ci{position:absolute;top:5px;height:2px;background:#000}
.below{color:#b00;font-weight:600}details{margin:.3rem 0}code{font-size:90%}
"""


def render_html(results: Sequence[EvalResult], *, seed: int) -> str:
    """One self-contained page (no script, nothing fetched)."""
    e = html.escape
    rows = []
    for r in results:
        verdict = ""
        if r.min_pass_rate is not None:
            verdict = (
                f"≥ {r.min_pass_rate:.0%}"
                if r.meets_minimum
                else f'<span class="below">below {r.min_pass_rate:.0%}</span>'
            )
        criteria = ", ".join(f"{e(c)} {r.criterion_passes(c)}/{len(r.runs)}" for c in r.criteria)
        if r.interval is None:
            spread = f'<td title="{e(r.measures)}">scripted</td>'
        else:
            low, high = r.interval
            spread = (
                f'<td><div class="bar" title="95% CI {low:.0%}–{high:.0%}">'
                f'<div class="rate" style="width:{r.rate * 100:.1f}%"></div>'
                f'<div class="ci" style="left:{low * 100:.1f}%;width:{(high - low) * 100:.1f}%">'
                f"</div></div>{low:.0%}–{high:.0%}</td>"
            )
        rows.append(
            f"<tr><td>{e(r.scenario)}</td><td>{e(r.target)}</td>"
            f"<td>{r.passed}/{len(r.runs)}</td><td>{r.rate:.0%}</td>"
            f"{spread}<td>{verdict}</td><td>{criteria}</td></tr>"
        )
    failures = []
    for r in results:
        for run in r.runs:
            if not run.passed:
                reasons = "".join(f"<li><code>{e(x)}</code></li>" for x in run.reasons())
                failures.append(
                    f"<details><summary>{e(r.scenario)} on {e(r.target)}, run {run.index} "
                    f"(behaviour {run.behaviour})</summary><ul>{reasons}</ul></details>"
                )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>stuntset eval</title><style>{_STYLE}</style></head><body>"
        f"<h1>stuntset eval</h1><p>seed {seed}; 95% Wilson intervals for live runs. "
        f"{_scripted_note(results)}</p>"
        "<table><thead><tr><th>scenario</th><th>target</th><th>passed</th><th>rate</th>"
        "<th>95% CI</th><th>minimum</th><th>criteria</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table><h2>Failed runs</h2>"
        + ("".join(failures) or "<p>none</p>")
        + "</body></html>\n"
    )


def scripted_note(results: Sequence[EvalResult]) -> str:
    """What to say of the scripted results, if any (empty when every result ran live)."""
    return _scripted_note(results)


def _scripted_note(results: Sequence[EvalResult]) -> str:
    if all(r.live for r in results):
        return ""
    return (
        "Scripted results (on the doubles) test the graders and the wiring, not the agent: "
        "their behaviours are drawn by weight, so the rate follows the weights. Run --live to "
        "measure the agent."
    )


def write_html(path: Path, results: Sequence[EvalResult], *, seed: int) -> None:
    path.write_text(render_html(results, seed=seed))
