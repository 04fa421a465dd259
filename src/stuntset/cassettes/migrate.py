"""``stuntset cassettes migrate``: rewrite cassettes in place in the current format.

A cassette is read (older versions through the registered migrations, one version step at a
time), then written back canonically: sorted keys, blocks shared, scrubbed and scanned,
atomically. A file already in the current canonical form is left untouched. Version 1 is the
first format, so no migration is registered yet; the first format change adds one here
(``MIGRATIONS[1] = upgrade_1_to_2``), and this command is how users apply it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from stuntset.cassettes.format import (
    VERSION,
    CassetteError,
    dumps_cassette,
    loads_cassette,
    numbered_lines,
    read_regular,
    write_cassette,
)

__all__ = ["MIGRATIONS", "migrate_file"]

#: version N → a function turning the JSON lines of a version-N cassette into version N+1.
MIGRATIONS: dict[int, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]] = {}


def _upgrade(data: bytes, source: str) -> bytes:
    """``data`` upgraded to the current version through ``MIGRATIONS`` (unchanged when its
    header is already current, or is no header: the loader then says what is wrong)."""
    numbered = list(numbered_lines(data))
    if not numbered:
        return data
    first_number, first = numbered[0]
    header = _decode(first, f"{source}:{first_number}")
    if not isinstance(header, dict) or header.get("kind") != "header":
        return data
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version >= VERSION:
        return data
    lines = [header] + [_decode(raw, f"{source}:{number}") for number, raw in numbered[1:]]
    while version < VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise CassetteError(
                f"{source}:{first_number}: field 'version': no migration from version {version}"
            )
        lines = step(lines)
        version += 1
        lines[0]["version"] = version
    return b"".join(_encoder.encode(line) + b"\n" for line in lines)


_encoder = msgspec.json.Encoder(order="sorted")


def _decode(raw: bytes, where: str) -> Any:
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError as error:
        raise CassetteError(f"{where}: not valid JSON: {error}") from None
    except RecursionError:
        raise CassetteError(f"{where}: not valid JSON: nested too deep") from None


def migrate_file(path: str | os.PathLike[str]) -> bool:
    """Rewrite ``path`` in the current canonical format; ``True`` if it changed."""
    file = Path(path)
    raw = read_regular(file)
    upgraded = _upgrade(raw, str(file))
    cassette = loads_cassette(upgraded, source=str(file))
    if dumps_cassette(cassette) == raw:
        return False
    write_cassette(file, cassette)
    return True
