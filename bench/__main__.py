"""``python -m bench [CASE ...]``: run the benchmarks side by side with their anchors."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from bench.cases import CASES
from bench.runner import measure, ratio_line, report, write_json


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    parser.add_argument("--rounds", type=int, default=None, help="measured rounds per case")
    parser.add_argument("--json", type=Path, default=Path("bench/results/latest.json"))
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)
    makers = dict(CASES)
    if args.list:
        for name in makers:
            print(name)
        return 0
    unknown = [name for name in args.cases if name not in makers]
    if unknown:
        print(f"error: unknown case(s) {unknown}; known: {', '.join(makers)}", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    missed = 0
    for name in args.cases or list(makers):
        case = makers[name]()
        print(f"… {case.name}: {case.title}", file=sys.stderr, flush=True)
        results = measure(case, rounds=args.rounds)
        subject = case.variants[0].name if case.variants else next(iter(results))
        # a custom case's rows are different measures, not contenders: no ratios between them
        ratios = {} if case.custom is not None else ratio_line(results, subject)
        ok, detail = case.verdict(results) if case.verdict else (None, "reported")
        missed += ok is False
        rows.append(
            {
                "case": case.name,
                "title": case.title,
                "unit": case.unit,
                "budget": case.budget,
                "verdict": detail if ok is None else ("ok " if ok else "MISSED ") + detail,
                "ok": ok,
                "ratios": ratios,
                "notes": case.notes,
                "variants": [
                    {"name": r.variant, "median": r.median, "p95": r.p95, "n": len(r.samples)}
                    for r in results.values()
                ],
            }
        )
    report(rows)
    write_json(rows, args.json)
    print(f"wrote {args.json}; {missed} budget(s) missed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
