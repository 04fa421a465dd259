"""The slowest tests of each tier, from the files ``--tier-durations`` wrote (tests/_tiers.py).

``python tests/tools/durations.py build/test-results [--top 15]``: one table per tier, slowest
first, so that growth is seen at the end of every CI run. Prints; never fails a build.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path


def report(folder: Path, top: int) -> str:
    runs = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not runs:
        return f"durations: no results in {folder}"
    lines = []
    for run in runs:
        tests = json.loads(run.read_text())
        by_tier: dict[str, list[dict[str, object]]] = {}
        for test in tests:
            by_tier.setdefault(str(test["tier"]), []).append(test)
        for tier, members in sorted(by_tier.items()):
            seconds = sorted((float(str(t["seconds"])) for t in members), reverse=True)
            lines.append(
                f"== {run.stem} run, tier {tier}: {len(members)} tests, "
                f"{sum(seconds):.1f} s in all, median {statistics.median(seconds) * 1000:.0f} ms, "
                f"{sum(1 for s in seconds if s > 2)} over 2 s; slowest {min(top, len(members))}:"
            )
            members.sort(key=lambda t: float(str(t["seconds"])), reverse=True)
            lines += [f"  {float(str(t['seconds'])):7.2f} s  {t['nodeid']}" for t in members[:top]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    print(report(args.folder, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
