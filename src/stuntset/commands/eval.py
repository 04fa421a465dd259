"""``stuntset eval``: scenario files N times on each target, a progress bar on a terminal,
a table of pass rates (with their intervals when live), and JSON / HTML reports. Exit 1 when a
scenario falls below its ``min_pass_rate`` (or ``--min-pass-rate``) or, offline, when the
graders disagree with a behaviour's declared ``passes``; 2 on bad input."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from stuntset.errors import UsageError
from stuntset.evals.runner import EvalResult, RunResult, arun_eval, specs_of
from stuntset.evals.spec import load_eval
from stuntset.evals.targets import make_target

__all__ = ["run_eval_command"]


def _writable(path: Path | None, flag: str) -> None:
    if path is not None and (path.is_dir() or not path.parent.is_dir()):
        raise UsageError(f"{flag} {path}: not a file in an existing directory")


def run_eval_command(
    paths: Sequence[Path],
    targets: Sequence[str],
    *,
    runs: int | None,
    seed: int,
    live: bool,
    json_path: Path | None,
    html_path: Path | None,
    min_pass_rate: float | None,
    progress: bool | None,
) -> int:
    """What the command does; returns the exit status."""
    import anyio
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    from rich.table import Table

    from stuntset.evals.report import scripted_note, table_rows, write_html, write_json

    if runs is not None and runs < 1:
        raise UsageError(f"--runs must be at least 1, got {runs}")
    if min_pass_rate is not None and not 0 <= min_pass_rate <= 1:
        raise UsageError(f"--min-pass-rate must be from 0 to 1, got {min_pass_rate}")
    _writable(json_path, "--json")
    _writable(html_path, "--html")
    specs = [load_eval(p) for p in specs_of(list(paths))]
    chosen = [make_target(t, live=live) for t in dict.fromkeys(targets or ("scripted",))]
    err = Console(stderr=True)
    show = err.is_terminal if progress is None else progress
    total = sum((runs or s.runs) for s in specs) * len(chosen)
    results: list[EvalResult] = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err,
        disable=not show,
    ) as bar:
        task = bar.add_task("eval", total=total)

        def advance(run: RunResult) -> None:
            bar.advance(task)

        for spec in specs:
            for target in chosen:
                bar.update(task, description=f"{spec.name} on {target.name}")
                result = anyio.run(
                    partial(
                        arun_eval, spec, target, runs=runs, seed=seed, live=live, progress=advance
                    )
                )
                if min_pass_rate is not None:
                    result.min_pass_rate = min_pass_rate
                results.append(result)
    table = Table("scenario", "target", "passed", "rate", "95% CI", "minimum")
    for row in table_rows(results):
        table.add_row(*row)
    Console(width=max(100, Console().width)).print(table)
    note = scripted_note(results)
    if note:
        print(note)
    for result in results:
        for run in result.runs:
            if not run.passed:
                print(
                    f"{result.scenario} on {result.target}, run {run.index}: "
                    f"{'; '.join(run.reasons())}"
                )
    disagreed = [(result, run) for result in results for run in result.disagreements]
    for result, run in disagreed:
        said = "passed" if run.passed else "failed"
        print(
            f"{result.scenario} on {result.target}, run {run.index}: behaviour {run.behaviour} "
            f"declares passes = {str(run.expected).lower()}, but the graders {said} it"
        )
    if json_path is not None:
        write_json(json_path, results, seed=seed)
    if html_path is not None:
        write_html(html_path, results, seed=seed)
    sys.stdout.flush()
    return 0 if all(r.meets_minimum for r in results) and not disagreed else 1
