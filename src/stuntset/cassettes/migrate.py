"""``stuntset cassettes migrate``: rewrite cassettes in place in the current format.

A cassette is read (older versions through the registered migrations, one version step at a
time), then written back canonically: sorted keys, blocks shared with its folder
(``_blocks.jsonl``), scrubbed and scanned, atomically. A file already in the current canonical
form is left untouched. A folder named is walked for cassettes (found by their header; a
folder holding ``.stuntset-verify-skip`` is skipped), and afterwards each folder's store drops
the blocks none of its cassettes refers to.

Version 2 moved blocks out of each cassette into the folder's store: the step from 1 changes
only the header (a version-1 cassette's own block lines still load, and the rewrite moves
them out).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from stuntset.cassettes.blocks import (
    STORE_NAME,
    block_id,
    folder_references,
    gc_store,
    load_store,
    store_of,
)
from stuntset.cassettes.format import (
    VERSION,
    CassetteError,
    dumps_shared,
    is_cassette,
    loads_cassette,
    numbered_lines,
    read_regular,
    write_cassette,
)

__all__ = ["MIGRATIONS", "cassettes_under", "migrate_file", "unused_blocks"]


def _blocks_shared(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """1 → 2: nothing to change line by line (the rewrite moves block lines to the store)."""
    return lines


#: version N → a function turning the JSON lines of a version-N cassette into version N+1.
MIGRATIONS: dict[int, Callable[[list[dict[str, Any]]], list[dict[str, Any]]]] = {1: _blocks_shared}


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


def migrate_file(path: str | os.PathLike[str], *, write: bool = True) -> bool:
    """Rewrite ``path`` in the current canonical format, its blocks in its folder's store;
    ``True`` if it changed (``write=False``: if it would)."""
    file = Path(path)
    raw = read_regular(file)
    upgraded = _upgrade(raw, str(file))
    store = store_of(file)
    cassette = loads_cassette(upgraded, source=str(file), store=store)
    data, blocks = dumps_shared(cassette)
    if data == raw and _held(store, blocks):
        return False
    if write:
        write_cassette(file, cassette)
    return True


def _held(store: Path, blocks: dict[str, Any]) -> bool:
    """Whether the store holds each of ``blocks`` as it is, under its true id."""
    held = load_store(store)
    return all(k in held and held[k] == v and block_id(held[k]) == k for k, v in blocks.items())


_SKIP_DIRS = frozenset({".git", ".venv", ".tools", "node_modules", "__pycache__"})


def cassettes_under(root: str | os.PathLike[str]) -> list[Path]:
    """``root`` itself if it is no folder (the loader then says what is wrong with it), else
    every cassette in the tree (by header), sorted; ``CassetteError`` if there is none."""
    from stuntset.cassettes.verify import SKIP_MARKER

    top = Path(root)
    if not top.is_dir():
        return [top]
    found: list[Path] = []
    for folder, dirs, files in os.walk(top):
        if SKIP_MARKER in files:
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        found += [
            Path(folder) / name
            for name in sorted(files)
            if not (Path(folder) / name).is_symlink() and is_cassette(Path(folder) / name)
        ]
    if not found:
        raise CassetteError(f"{top}: no cassette in this folder (cassettes are found by header)")
    return found


def unused_blocks(folder: str | os.PathLike[str], *, drop: bool = True) -> list[str]:
    """The blocks of ``folder``'s store that none of its cassettes refers to, dropped from it
    (``drop=False``: only named)."""
    if drop:
        return gc_store(folder, is_cassette)
    return sorted(
        set(load_store(Path(folder) / STORE_NAME)) - folder_references(folder, is_cassette)
    )
