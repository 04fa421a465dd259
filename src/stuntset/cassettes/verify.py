"""``stuntset cassettes verify``: every cassette and every JSONL file in a tree must parse and
hold nothing that looks like a secret. It trusts nothing it reads:

* a file is read only if it is a regular file (a FIFO named ``*.jsonl`` would block a read
  forever; a dangling link has nothing to read): anything else in a tree is skipped, saying
  so, and named on the command line it is an error;
* a cassette — named ``*.cassette``, named on the command line, or whose first line mentions
  the cassette format — is validated as the loader reads it (a truncated header, a BOM, a
  version written as a string are errors naming file and line); any other ``*.jsonl`` file
  must be UTF-8 JSON on every line;
* a folder's block store (``_blocks.jsonl``: the system prompts and tool schemas its
  cassettes share) is validated — each block must hold what its id says, or a hand edit has
  made it lie — and scanned like any file, also when only one of its cassettes is named; a
  block no cassette refers to is a note (``stuntset cassettes migrate`` drops it);
* every file read is scanned as decoded text (``scan_for_secrets``), in linear time.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import msgspec

from stuntset.cassettes.blocks import (
    STORE_FORMAT,
    STORE_NAME,
    block_id,
    folder_references,
    loads_store,
    store_of,
)
from stuntset.cassettes.decoded import collector_paused
from stuntset.cassettes.format import (
    FORMAT,
    Cassette,
    CassetteError,
    is_cassette,
    loads_cassette,
    numbered_lines,
    read_regular,
)
from stuntset.cassettes.scrub import Scrubber, scan_for_secrets

__all__ = ["NOTES", "SKIP_MARKER", "Problem", "verify_tree"]

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
_SUFFIXES = (".jsonl", ".cassette", ".json")


class Problem(msgspec.Struct, frozen=True):
    """What is wrong with a file: ``invalid`` (it does not parse: exit 2), ``secret`` (it holds
    something that looks like one: exit 1), ``skipped`` (not a regular file: a note) or
    ``unused`` (a shared block no cassette refers to: a note)."""

    path: str
    message: str
    kind: Literal["invalid", "secret", "skipped", "unused"] = "secret"
    line: int | None = None

    def describe(self) -> str:
        place = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{place}: {self.message}"


#: The kinds of problem that are notes, not failures.
NOTES = frozenset({"skipped", "unused"})

#: A folder holding a file of this name is not verified (e.g. a corpus of hostile inputs).
SKIP_MARKER = ".stuntset-verify-skip"


def _candidates(root: Path) -> Iterator[tuple[Path, bool]]:
    """(path, named on the command line) of every file to look at; a folder marked with
    ``SKIP_MARKER`` as (folder, False)."""
    if not root.is_dir():
        yield root, True
        return
    for folder, dirs, files in os.walk(root):
        if SKIP_MARKER in files:
            dirs[:] = []
            yield Path(folder), False
            continue
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(files):
            if name.endswith(_SUFFIXES):
                yield Path(folder) / name, False


_PLACE = re.compile(r"(\d+): (.*)", re.DOTALL)


def _invalid(path: Path, error: CassetteError) -> Problem:
    message = str(error)
    prefix = f"{path}:"
    if message.startswith(prefix):
        rest = message[len(prefix) :].lstrip()
        place = _PLACE.fullmatch(rest)
        if place:
            return Problem(str(path), place.group(2), "invalid", int(place.group(1)))
        return Problem(str(path), rest, "invalid")
    return Problem(str(path), message, "invalid")


def _looks_like_cassette(path: Path, data: bytes, named: bool) -> bool:
    """Named on the command line or ``*.cassette``, or mentioning the format on its first
    line (a tree's other JSONL files are records of something else: checked as JSONL)."""
    if named or path.suffix == ".cassette":
        return True
    first = next(numbered_lines(data), (0, b""))[1]
    return FORMAT.encode() in first


def _jsonl_problem(path: Path, data: bytes) -> Problem | None:
    """The first line of a JSONL file that is not UTF-8 JSON, if any."""
    if data.startswith(b"\xef\xbb\xbf"):
        return Problem(
            str(path), "starts with a UTF-8 byte-order mark; save it without BOM", "invalid", 1
        )
    for number, raw in numbered_lines(data):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            return Problem(
                str(path), f"not UTF-8 text (byte {bad.start + 1} of the line)", "invalid", number
            )
        try:
            msgspec.json.decode(raw)
        except msgspec.DecodeError as error:
            return Problem(str(path), f"not valid JSON: {error}", "invalid", number)
        except RecursionError:
            return Problem(str(path), "not valid JSON: nested too deep", "invalid", number)
    return None


def _skipped(path: Path, named: bool) -> Problem | None:
    """A note (a tree's entry) or an error (named on the command line) for a path that is not
    a regular file; ``None`` for a regular file."""
    if not named and path.is_dir():
        marker = path / SKIP_MARKER
        try:
            reason = marker.read_bytes()[:4096].strip()
        except OSError:
            reason = b""
        if not reason:  # a stray empty file must not make the gate pass having checked nothing
            return Problem(
                str(marker),
                "empty: write in it why the folder is not verified, or delete it",
                "invalid",
            )
        return Problem(str(path), f"skipped: the folder holds {SKIP_MARKER}", "skipped")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        what = "a dangling symbolic link" if path.is_symlink() else "no such file"
    except OSError as error:
        what = f"cannot look at it ({error.strerror or error})"
    else:
        if stat.S_ISREG(mode):
            return None
        what = "not a regular file"
    if named:
        return Problem(str(path), f"{what}: nothing to verify", "invalid")
    return Problem(str(path), f"skipped: {what}", "skipped")


def _check_replayable(cassette: Cassette) -> None:
    """What ``show`` and replay check of a CLI interaction (argv, stdin, stderr), so that
    verify never passes one that they refuse."""
    from stuntset.cassettes.cli_replay import timeline

    for interaction in cassette.interactions:
        if interaction.wire.endswith("-cli"):
            line = cassette.lines.get(interaction.id)
            timeline(interaction, source=f"{cassette.source}:{line}" if line else cassette.source)


def verify_tree(
    root: str | os.PathLike[str], *, scrubber: Scrubber | None = None
) -> tuple[int, list[Problem]]:
    """(files checked, problems) for a file or a tree. See the module's doc for the rules."""
    scrubber = scrubber or Scrubber()
    checked = 0
    problems: list[Problem] = []
    stores: set[Path] = set()  # the stores of the cassettes met, the stores read
    read: set[Path] = set()
    for path, named in _candidates(Path(root)):
        skipped = _skipped(path, named)
        if skipped is not None:
            problems.append(skipped)
            continue
        try:
            data = read_regular(path)
        except CassetteError as error:
            problems.append(_invalid(path, error))
            continue
        if _looks_like_store(path, data):
            read.add(path.resolve())
            checked += 1
            with collector_paused():
                problems += _verify_store(path, data, scrubber)
            continue
        cassette = _looks_like_cassette(path, data, named)
        if not cassette and path.suffix != ".jsonl":
            continue  # a .json file that is not a cassette: not ours to judge
        checked += 1
        if cassette:
            stores.add(store_of(path))
        with collector_paused():
            problems += _verify_file(path, data, cassette, scrubber)
    for store in sorted(stores):
        if store.resolve() in read or not store.is_file():
            continue
        checked += 1  # a cassette named alone: its blocks are part of it
        try:
            data = read_regular(store, "block store")
        except CassetteError as error:
            problems.append(_invalid(store, error))
            continue
        with collector_paused():
            problems += _verify_store(store, data, scrubber)
    return checked, problems


def _looks_like_store(path: Path, data: bytes) -> bool:
    """Named ``_blocks.jsonl``, or mentioning the store format on its first line."""
    first = next(numbered_lines(data), (0, b""))[1]
    return path.name == STORE_NAME or (
        STORE_FORMAT.encode() in first and FORMAT.encode() not in first
    )


def _verify_store(path: Path, data: bytes, scrubber: Scrubber) -> list[Problem]:
    """What is wrong with a folder's block store: it does not parse, a block's id is not its
    content's (edited by hand), it holds a secret; and the blocks nothing uses (notes)."""
    problems: list[Problem] = []
    try:
        blocks = loads_store(data, source=str(path))
    except CassetteError as error:
        problems.append(_invalid(path, error))
        blocks = {}
    folder = path.parent
    for block, (line, value) in blocks.items():
        if block_id(value) != block:
            problems.append(
                Problem(
                    str(path),
                    f"block {block!r} does not hold what its id says (edited by hand?): "
                    f"run `stuntset cassettes migrate {folder}` to store it under its own id",
                    "invalid",
                    line,
                )
            )
    used = folder_references(folder, is_cassette) if blocks else set()
    for block, (line, _) in blocks.items():
        if block not in used:
            problems.append(
                Problem(
                    str(path),
                    f"block {block!r}: no cassette of {folder} refers to it "
                    f"(`stuntset cassettes migrate {folder}` drops it)",
                    "unused",
                    line,
                )
            )
    for finding in scan_for_secrets(data, scrubber):
        problems.append(Problem(str(path), finding.describe()))
    return problems


def _verify_file(path: Path, data: bytes, cassette: bool, scrubber: Scrubber) -> list[Problem]:
    """What is wrong with one file read: it does not parse, or it holds a secret."""
    problems: list[Problem] = []
    if cassette:
        try:
            _check_replayable(loads_cassette(data, source=str(path), store=store_of(path)))
        except CassetteError as error:
            problems.append(_invalid(path, error))
    else:
        broken = _jsonl_problem(path, data)
        if broken is not None:
            problems.append(broken)
    for finding in scan_for_secrets(data, scrubber):
        problems.append(Problem(str(path), finding.describe()))
    return problems
