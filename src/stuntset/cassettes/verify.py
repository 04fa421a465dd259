"""``stuntset cassettes verify``: every cassette (found by its header) and every JSONL file in
a tree must parse and hold nothing that looks like a secret."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import msgspec

from stuntset.cassettes.format import CassetteError, is_cassette, load_cassette
from stuntset.cassettes.scrub import Scrubber, scan_for_secrets

__all__ = ["Problem", "verify_tree"]

_SKIP_DIRS = frozenset(
    {
        ".git",
        ".venv",
        ".tools",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".hypothesis",
    }
)


class Problem(msgspec.Struct, frozen=True):
    path: str
    message: str


def _candidates(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(files):
            if name.endswith((".jsonl", ".cassette", ".json")):
                yield Path(folder) / name


def verify_tree(
    root: str | os.PathLike[str], *, scrubber: Scrubber | None = None
) -> tuple[int, list[Problem]]:
    """(files checked, problems). Cassettes must also parse; JSONL files are only scanned."""
    scrubber = scrubber or Scrubber()
    checked = 0
    problems: list[Problem] = []
    for path in _candidates(Path(root)):
        cassette = is_cassette(path)
        if not cassette and path.suffix != ".jsonl":
            continue
        checked += 1
        if cassette:
            try:
                load_cassette(path)
            except CassetteError as error:
                problems.append(Problem(str(path), str(error)))
        for finding in scan_for_secrets(path.read_bytes(), scrubber):
            problems.append(Problem(str(path), finding.describe()))
    return checked, problems
