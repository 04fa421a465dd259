"""``stuntset cassettes migrate``: rewrite cassettes in place in the current format.

A cassette is read (older versions through the registered migrations, one version step at a
time), then written back canonically: sorted keys, blocks shared, scrubbed and scanned,
atomically. A file already in the current canonical form is left untouched. Version 1 is the
first format, so no migration is registered yet; the first format change adds one here
(``MIGRATIONS[1] = upgrade_1_to_2``), and this command is how users apply it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stuntset.cassettes.format import (
    VERSION,
    CassetteError,
    dumps_cassette,
    loads_cassette,
    write_cassette,
)

__all__ = ["MIGRATIONS", "migrate_file"]

#: version N → a function turning the JSON lines of a version-N cassette into version N+1.
MIGRATIONS: dict[int, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]] = {}


def _upgrade(data: bytes, source: str) -> bytes:
    lines = [json.loads(line) for line in data.splitlines() if line.strip()]
    if not lines or lines[0].get("kind") != "header":
        return data  # let the loader say what is wrong, with the line
    version = lines[0].get("version")
    if not isinstance(version, int):
        return data
    while version < VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise CassetteError(f"{source}:1: field 'version': no migration from version {version}")
        lines = step(lines)
        version += 1
        lines[0]["version"] = version
    return b"".join(
        json.dumps(line, sort_keys=True, separators=(",", ":")).encode() + b"\n" for line in lines
    )


def migrate_file(path: str | os.PathLike[str]) -> bool:
    """Rewrite ``path`` in the current canonical format; ``True`` if it changed."""
    file = Path(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise CassetteError(f"{file}: no such cassette") from None
    try:
        upgraded = _upgrade(raw, str(file))
    except json.JSONDecodeError as error:
        raise CassetteError(f"{file}:{error.lineno}: not valid JSON: {error.msg}") from None
    cassette = loads_cassette(upgraded, source=str(file))
    if dumps_cassette(cassette) == raw:
        return False
    write_cassette(file, cassette)
    return True
