"""Run a test command repeatedly with a busy loop on every core, to find what flakes under load.

``python tests/tools/stress.py --rounds 5 --max-seconds 1800 -- .venv/bin/pytest -n auto …``
(``make stress``). Starts one spinning process per core (``os.cpu_count()``, or ``--spinners``),
runs the command ``--rounds`` times one after another, stops early once ``--max-seconds`` have
passed, then ends the spinners it started, whatever happened. Every round's exit status, wall
time and load are printed; a round whose command failed is a flake (the suite is deterministic
when it passes alone) and the script exits 1 after printing which rounds failed and where their
output is kept. Nothing is retried.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPIN = "while True: pass"


def start_spinners(count: int) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]


def stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.kill()
    for process in processes:
        process.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-seconds", type=float, default=1800.0)
    parser.add_argument("--spinners", type=int, default=os.cpu_count() or 2)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.rounds < 1 or args.max_seconds <= 0 or args.spinners < 0:
        parser.error(
            "give --rounds >= 1, --max-seconds > 0, --spinners >= 0 and a command after --"
        )
    logs = Path(tempfile.mkdtemp(prefix="stuntset-stress-"))
    spinners = start_spinners(args.spinners)
    failed: list[int] = []
    started = time.monotonic()
    rounds = 0
    try:
        for number in range(1, args.rounds + 1):
            if time.monotonic() - started > args.max_seconds:
                print(f"stress: stopped after {rounds} round(s): --max-seconds reached", flush=True)
                break
            log = logs / f"round-{number}.log"
            began = time.monotonic()
            with log.open("wb") as out:
                status = subprocess.call(command, stdout=out, stderr=subprocess.STDOUT)
            rounds += 1
            load = os.getloadavg()[0]
            tail = log.read_bytes().decode(errors="replace").strip().splitlines()[-1:] or [""]
            print(
                f"stress: round {number}: exit {status} in {time.monotonic() - began:.1f} s at "
                f"load {load:.1f}: {tail[0]}",
                flush=True,
            )
            if status != 0:
                failed.append(number)
    finally:
        stop(spinners)
    if failed:
        print(f"stress: {len(failed)} of {rounds} round(s) failed: {failed}; output in {logs}")
        return 1
    print(f"stress: {rounds} round(s) passed with {args.spinners} busy loop(s); output in {logs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
