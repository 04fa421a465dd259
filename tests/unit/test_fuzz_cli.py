"""Every ``stuntset`` command parser, fuzzed (issue #33): Hypothesis draws hostile path
arguments (FIFOs, folders, missing, unreadable, non-UTF-8, nested 100,000 deep, NUL bytes)
and numeric or path option values (out of range, nan, inf, not numbers) for each command;
each must answer with exit 0, 1 or 2 (2: one line on stderr), never a traceback, never a
hang. The draws run in a process of their own (tests/unit/_fuzz_cli_child.py), each bounded
by SIGALRM; ``FUZZ_EXAMPLES`` sets how many (deterministic: derandomized)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = Path(__file__).with_name("_fuzz_cli_child.py")


@pytest.mark.slow  # a subprocess per command, 120 hypothesis examples
def test_every_command_meets_hostile_values_with_0_1_or_one_line_2_and_never_hangs(
    tmp_path: Path,
) -> None:
    examples = os.environ.get("FUZZ_EXAMPLES", "120")
    done = subprocess.run(
        [sys.executable, str(CHILD)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "FUZZ_EXAMPLES": examples},
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    findings = [line for line in lines if "problem" in line]
    assert done.returncode == 0, done.stderr[-2000:]
    assert findings == []
    [summary] = [line for line in lines if "ran" in line]
    assert summary["ran"] >= int(examples) // 2  # most draws built a command line
