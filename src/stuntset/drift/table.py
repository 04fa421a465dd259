"""``stuntset drift``'s output: the scenario × CLI table (whole scenario names, whatever the
terminal's width), the first difference of each row that differs, and the exit code."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from stuntset.checks.matrix import _sdk_logs_held

from .allowlist import Race
from .report import DriftReport, drift

__all__ = ["print_drift"]


def print_drift(
    clis: Iterable[str] | None = None,
    scenarios: Iterable[str] | None = None,
    *,
    json_path: str | Path | None = None,
    markdown: bool = False,
    echo: Callable[[str], Any] = print,
    **options: Any,
) -> int:
    """Run ``drift`` and print its table (or Markdown); write the JSON report to
    ``json_path``. 1 if a difference is not in the allowlist (or a side could not be
    played), else 0."""
    with _sdk_logs_held() as held:
        report = drift(clis, scenarios, **options)
    if json_path is not None:
        Path(json_path).write_text(report.to_json() + "\n", encoding="utf-8")
    for program, binary in report.binaries.items():
        echo(f"real {program}: {binary}")
    for program, why in report.missing.items():
        echo(f"real {program}: not available, its column not played: {why}")
    if markdown:
        echo(report.markdown())
    else:
        _print_table(report)
    for entry in report.stale:
        what = "race" if isinstance(entry, Race) else f"difference in {entry.field!r}"
        print(
            f"allowlist: the {what} at step {entry.step} of {entry.scenario} on "
            f"{entry.column} matched nothing this run (the run fails): remove or correct the "
            f"entry",
            file=sys.stderr,
        )
    if held:
        print(
            f"{len(held)} log line(s) from the client SDKs held back (the table shows each "
            f"run's outcome)",
            file=sys.stderr,
        )
    return 1 if report.failed else 0


def _print_table(report: DriftReport) -> None:
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    table = report.table()
    clis = list(dict.fromkeys(cell.cli for cell in report.cells))
    view = Table(title=f"real vs fake ({report.seconds:.0f} s)")
    view.add_column("scenario", no_wrap=True, min_width=max(map(len, table), default=8))
    for cli in clis:
        view.add_column(cli, overflow="fold")
    for scenario, row in table.items():
        view.add_row(scenario, *(row[cli].label if cli in row else "" for cli in clis))
    console = Console(highlight=False)
    if not console.is_terminal:
        wide = console.options.update(width=10_000)
        console.width = max(console.width, Measurement.get(console, wide, view).maximum)
    console.print(view)
