"""The coverage gate `make test` runs after pytest: branch coverage in total and per file.

    python tests/tools/coverage_gate.py --total 95 --file 90 [--data .coverage] [--lowest 10]

Reads the combined data file pytest-cov left (the fake CLI processes' data included),
prints the lowest files, and exits 1 naming every file under ``--file`` and a total under
``--total``. The thresholds live in the Makefile (COV_TOTAL, COV_FILE).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import coverage


def percentages(data_file: str) -> tuple[float, dict[str, float]]:
    """Total and per-file branch-aware coverage (percent), as coverage's report counts it."""
    cov = coverage.Coverage(data_file=data_file)
    cov.load()
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "coverage.json"
        cov.json_report(outfile=str(out))
        report = json.loads(out.read_text())
    files = {name: info["summary"]["percent_covered"] for name, info in report["files"].items()}
    return report["totals"]["percent_covered"], files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--total", type=float, required=True, help="minimum total percent")
    parser.add_argument("--file", type=float, required=True, help="minimum percent per file")
    parser.add_argument("--data", default=".coverage", help="the combined data file")
    parser.add_argument("--lowest", type=int, default=10, help="how many lowest files to show")
    args = parser.parse_args(argv)
    if not Path(args.data).exists():
        print(f"coverage gate: no data file {args.data!r}: run pytest with --cov", file=sys.stderr)
        return 2
    total, files = percentages(args.data)
    lowest = sorted(files.items(), key=lambda item: item[1])[: args.lowest]
    print(f"coverage gate: the lowest {len(lowest)} files (branch coverage)")
    for name, percent in lowest:
        print(f"  {percent:6.2f}%  {name}")
    failures = [
        f"{name}: {percent:.2f}% < {args.file:g}%"
        for name, percent in sorted(files.items())
        if percent < args.file
    ]
    if total < args.total:
        failures.append(f"total: {total:.2f}% < {args.total:g}%")
    for failure in failures:
        print(f"coverage gate FAILED: {failure}", file=sys.stderr)
    if not failures:
        print(
            f"coverage gate passed: total {total:.2f}% ≥ {args.total:g}%, every file ≥ {args.file:g}%"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
