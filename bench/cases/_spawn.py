"""What the CLI-double cases share: spawning a process to its last expected line, and the two
anchors written beside it (a naive Python script printing 20 JSON lines, and the physical floor:
``python -I -S`` writing 20 pre-encoded lines)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from bench.runner import Result, Variant, ratio_line

__all__ = ["anchors", "cleanup", "spawn", "verdict"]


def spawn(argv: list[str], stdin: bytes, last: bytes) -> None:
    """Run ``argv`` with ``stdin`` until a stdout line contains ``last`` (20 lines at least)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(stdin)
    proc.stdin.close()
    lines = 0
    for line in proc.stdout:
        lines += 1
        if last in line:
            break
    proc.stdout.close()
    proc.wait()
    assert lines >= 20, lines


def anchors(directory: Path, line_type: str, last_type: str, last: bytes) -> list[Variant]:
    """The naive script and the ``-I -S`` floor, each printing 19 ``line_type`` lines and a
    ``last_type`` one, as variants ending at ``last``."""
    naive = directory / "naive.py"
    naive.write_text(
        "import json\n"
        "for i in range(19):\n"
        f"    print(json.dumps({{'type': {line_type!r}, 'i': i, 'text': 'hello world'}}))\n"
        f"print(json.dumps({{'type': {last_type!r}}}))\n"
    )
    lines = b"".join(json.dumps({"type": line_type, "i": i}).encode() + b"\n" for i in range(19))
    lines += json.dumps({"type": last_type}).encode() + b"\n"
    floor = directory / "floor.py"
    floor.write_text(f"import sys\nsys.stdout.buffer.write({lines!r})\n")
    python = sys.executable
    return [
        Variant("naive python", lambda: spawn([python, str(naive)], b"", last)),
        Variant("python -I -S floor", lambda: spawn([python, "-I", "-S", str(floor)], b"", last)),
    ]


def verdict(subject: str) -> Callable[[dict[str, Result]], tuple[bool, str]]:
    """No slower than the naive script; reported against the floor."""

    def judge(results: dict[str, Result]) -> tuple[bool, str]:
        ratios = ratio_line(results, subject)
        return ratios["naive python"] <= 1.0, (
            f"{ratios['naive python']:.2f}× naive, {ratios['python -I -S floor']:.2f}× floor"
        )

    return judge


def cleanup(uninstall: Callable[[], None], directory: Path) -> Callable[[], None]:
    def close() -> None:
        uninstall()
        for path in directory.rglob("*"):
            if path.is_file():
                path.unlink()

    return close
