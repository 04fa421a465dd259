"""Blocks shared by the cassettes of a folder: system prompts and tool schemas stored once.

A request-body value a cassette would otherwise repeat in every interaction — a system
prompt (Anthropic and Bedrock ``system``, Responses ``instructions``, Gemini
``systemInstruction``, the ``content`` of an OpenAI Chat, Responses or Ollama message whose
``role`` is ``system`` or ``developer``), the tool declarations of every wire (``tools``,
``functions``, ``toolConfig``), and any string of 1 KiB or more — is stored once, keyed by a
hash of its canonical JSON, and referenced as ``{"$block": id}``. The blocks of every
cassette in a folder live in one file beside them, ``_blocks.jsonl``::

    {"format":"stuntset-blocks","kind":"header","version":1}
    {"id":"b-0f3a…","kind":"block","value":"You are a careful assistant. …"}
    {"id":"b-9c11…","kind":"block","value":[{"function":{…},"type":"function"}]}

sorted by id, one block a line: a prompt that fifty tests share is one line in the repository,
and changing it changes that line (the new block replaces the old one once ``stuntset
cassettes migrate`` drops what no cassette uses).

Writers take the folder's lock (``flock`` on the folder) while they add their blocks *and*
rename their cassette into place,
and only ever add blocks; ``gc_store`` holds the same lock while it reads every cassette of
the folder, so it never drops a block a cassette being written refers to.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeAlias

import msgspec

from stuntset.cassettes._files import write_atomic
from stuntset.errors import CassetteError

__all__ = [
    "BLOCK_KEYS",
    "BLOCK_MIN_BYTES",
    "STORE_FORMAT",
    "STORE_NAME",
    "Block",
    "StoreHeader",
    "add_blocks",
    "block_id",
    "dumps_store",
    "extract",
    "folder_references",
    "gc_store",
    "load_store",
    "loads_store",
    "referenced",
    "resolve",
    "store_locked",
    "store_of",
]

STORE_NAME = "_blocks.jsonl"
STORE_FORMAT = "stuntset-blocks"
STORE_VERSION = 1
#: Request-body keys whose (large) values are stored once as blocks, wherever they appear.
BLOCK_KEYS = frozenset(
    {
        "system",
        "instructions",
        "systemInstruction",
        "system_instruction",
        "tools",
        "functions",
        "toolConfig",
        "tool_config",
    }
)
#: A message with one of these roles keeps its ``content`` as a block (OpenAI Chat,
#: Responses ``input`` items, Ollama).
SYSTEM_ROLES = frozenset({"system", "developer"})
#: Values whose canonical JSON is at least this long are stored as blocks.
BLOCK_MIN_BYTES = 1024
#: Values under a block key shorter than this stay inline (a one-word system prompt).
BLOCK_KEY_MIN_BYTES = 64


class Block(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag="block"):
    id: str
    value: Any


class StoreHeader(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag="header"):
    format: str
    version: int


_StoreLine: TypeAlias = StoreHeader | Block

_encoder = msgspec.json.Encoder(order="sorted")
_store_decoder = msgspec.json.Decoder(_StoreLine)


def block_id(value: Any) -> str:
    """The id of a block: a hash of its canonical JSON."""
    return "b-" + hashlib.sha256(_encoder.encode(value)).hexdigest()[:16]


def extract(value: Any, key: str | None, blocks: dict[str, Any]) -> Any:
    """``value`` with its blocks replaced by references (added to ``blocks``)."""
    # sizes are measured only where a block may start, not for every nested value
    if isinstance(value, str):
        size = len(value.encode())
        large = size >= BLOCK_MIN_BYTES or (key in BLOCK_KEYS and size >= BLOCK_KEY_MIN_BYTES)
    else:
        large = key in BLOCK_KEYS and len(_encoder.encode(value)) >= BLOCK_KEY_MIN_BYTES
    if large:
        block = block_id(value)
        blocks.setdefault(block, value)
        return {"$block": block}
    if isinstance(value, dict):
        system = value.get("role") in SYSTEM_ROLES
        return {
            k: extract(v, "system" if system and k == "content" else k, blocks)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [extract(v, None, blocks) for v in value]
    return value


def resolve(value: Any, lookup: Callable[[Any], Any]) -> Any:
    """``value`` with every ``{"$block": id}`` replaced by ``lookup(id)``."""
    if isinstance(value, dict):
        if set(value) == {"$block"}:
            return lookup(value["$block"])
        return {k: resolve(v, lookup) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, lookup) for v in value]
    return value


def store_of(cassette: str | os.PathLike[str]) -> Path:
    """The block store of the folder holding ``cassette``."""
    return Path(cassette).parent / STORE_NAME


def dumps_store(blocks: Mapping[str, Any]) -> bytes:
    """A store's bytes: its header, then one block a line, sorted by id."""
    lines = [_encoder.encode(StoreHeader(format=STORE_FORMAT, version=STORE_VERSION))]
    lines += [_encoder.encode(Block(id=k, value=blocks[k])) for k in sorted(blocks)]
    return b"\n".join(lines) + b"\n"


def loads_store(data: bytes, *, source: str) -> dict[str, tuple[int, Any]]:
    """id → (line, value) of a store's blocks; ``CassetteError`` naming file and line for
    anything else."""
    from stuntset.cassettes._files import numbered_lines

    if data.startswith(b"\xef\xbb\xbf"):
        raise CassetteError(f"{source}:1: starts with a UTF-8 byte-order mark; save it without BOM")
    blocks: dict[str, tuple[int, Any]] = {}
    header = False
    for number, raw in numbered_lines(data):
        where = f"{source}:{number}"
        try:
            line = _store_decoder.decode(raw)
        except msgspec.ValidationError as error:
            raise CassetteError(f"{where}: {error}") from None
        except msgspec.DecodeError as error:
            raise CassetteError(f"{where}: not valid JSON: {error}") from None
        except RecursionError:
            raise CassetteError(f"{where}: not a block line: nested too deep") from None
        if isinstance(line, StoreHeader):
            if header:
                raise CassetteError(f"{where}: a second header line")
            if line.format != STORE_FORMAT:
                raise CassetteError(
                    f"{where}: field 'format': {line.format!r} is not {STORE_FORMAT!r}"
                )
            if line.version > STORE_VERSION:
                raise CassetteError(
                    f"{where}: field 'version': version {line.version} was written by a newer "
                    f"stuntset (this one reads up to {STORE_VERSION}); upgrade stuntset"
                )
            header = True
            continue
        if not header:
            raise CassetteError(f"{where}: the first line must be the block store's header")
        if line.id in blocks:
            raise CassetteError(
                f"{where}: field 'id': duplicate block id {line.id!r} "
                f"(first on line {blocks[line.id][0]})"
            )
        blocks[line.id] = (number, line.value)
    if not header:
        raise CassetteError(f"{source}: empty file, not a block store")
    return blocks


#: store path → (a hash of its bytes, its blocks): a folder's store is parsed once per change
#: (a hash, not the file's inode and mtime: a rename can reuse both within a clock tick).
_cache: dict[Path, tuple[bytes, dict[str, Any]]] = {}


def load_store(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The blocks of store ``path`` (none when there is no such file)."""
    from stuntset.cassettes._files import read_regular

    store = Path(path)
    if not store.exists() and not store.is_symlink():
        return {}
    data = read_regular(store, "block store")
    digest = hashlib.blake2b(data, digest_size=16).digest()
    cached = _cache.get(store)
    if cached is not None and cached[0] == digest:
        return cached[1]
    parsed = loads_store(data, source=str(store))
    blocks = {k: value for k, (_, value) in parsed.items()}
    _cache[store] = (digest, blocks)
    return blocks


@contextlib.contextmanager
def store_locked(folder: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the lock of ``folder``'s block store: ``flock`` on the folder itself (no lock file
    left behind; each holder opens the folder anew, so threads exclude each other too)."""
    place = Path(folder)
    place.mkdir(parents=True, exist_ok=True)
    fd = os.open(place, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def add_blocks(folder: str | os.PathLike[str], blocks: Mapping[str, Any]) -> None:
    """Add ``blocks`` to ``folder``'s store (the caller holds ``store_locked(folder)``). An
    entry whose value no longer hashes to its id (edited by hand) is put right."""
    if not blocks:
        return
    store = Path(folder) / STORE_NAME
    held = load_store(store)
    missing = {k: v for k, v in blocks.items() if k not in held or held[k] != v}
    if missing:
        write_atomic(store, dumps_store({**held, **missing}))


_REFERENCE = re.compile(rb'"\$block"\s*:\s*"([^"\\]{1,200})"')


def referenced(data: bytes) -> set[str]:
    """The block ids a cassette's bytes refer to (read as text: a file that does not parse
    still keeps what it names)."""
    return {match.decode() for match in _REFERENCE.findall(data)}


def _cassettes_in(folder: Path, is_cassette: Callable[[Path], bool]) -> Iterator[Path]:
    for entry in sorted(folder.iterdir()):
        if entry.name != STORE_NAME and not entry.is_symlink() and is_cassette(entry):
            yield entry


def folder_references(
    folder: str | os.PathLike[str], is_cassette: Callable[[Path], bool]
) -> set[str]:
    """Every block id a cassette of ``folder`` refers to (``is_cassette``: the format's test of
    a file, passed in since the format imports this module)."""
    used: set[str] = set()
    for cassette in _cassettes_in(Path(folder), is_cassette):
        used |= referenced(cassette.read_bytes())
    return used


def gc_store(folder: str | os.PathLike[str], is_cassette: Callable[[Path], bool]) -> list[str]:
    """Drop the blocks no cassette of ``folder`` refers to; the ids dropped (sorted). The
    store is removed when nothing is left in it."""
    store = Path(folder) / STORE_NAME
    if not store.is_file():
        return []
    with store_locked(folder):
        held = load_store(store)
        used = folder_references(folder, is_cassette)
        unused = sorted(set(held) - used)
        if unused:
            kept = {k: v for k, v in held.items() if k in used}
            if kept:
                write_atomic(store, dumps_store(kept))
            else:
                store.unlink()
        return unused
