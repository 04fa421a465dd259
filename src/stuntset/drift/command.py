"""``stuntset drift``: the command's body (``cli.py`` only declares its options)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stuntset.errors import UsageError

from .runners import CLIS

__all__ = ["run"]


def run(
    clis: tuple[str, ...] | None,
    names: tuple[str, ...] | None,
    *,
    json_path: str | None = None,
    live: bool = False,
    echo: Callable[[str], Any] = print,
    claude_bin: str | None = None,
    codex_bin: str | None = None,
    gemini_bin: str | None = None,
) -> int:
    """The exit code: 0 all same or allowed, 1 a difference outside the allowlist (or a
    live shape difference). ``--live`` without a key is a ``UsageError`` (exit 2)."""
    if live:
        from .live import keys_for, live_drift

        keys_for(clis or CLIS)  # before anything runs: no key, one line, exit 2
        cells = live_drift(clis or CLIS, names)
        for cell in cells:
            echo(f"{cell.scenario}  {cell.cli}  live shape: {cell.label}")
        if not cells:
            print("--live: no chosen scenario can be asked of a live model", file=sys.stderr)
        return 1 if any(cell.status != "same" for cell in cells) else 0
    from .table import print_drift

    if json_path is not None and not Path(json_path).resolve().parent.is_dir():
        raise UsageError(f"--json {json_path}: its folder does not exist")
    if json_path is not None and os.path.exists(json_path) and not os.path.isfile(json_path):
        # a FIFO with no reader blocks the write forever; a folder or device is no report
        raise UsageError(f"--json {json_path}: not a regular file (give a file path to write)")

    return print_drift(
        clis,
        names,
        json_path=json_path,
        echo=echo,
        claude_bin=claude_bin,
        codex_bin=codex_bin,
        gemini_bin=gemini_bin,
    )
