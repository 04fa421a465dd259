"""The cassette format: canonical JSON Lines, reviewable and diff-friendly.

Line 1 is a self-describing header; every other line is an *interaction* (one request and
its response *as streamed*)::

    {"format":"stuntset-cassette","kind":"header","recorded_by":"stuntset 0.1.0","version":2,"wires":["openai-chat"]}
    {"id":"i-1","kind":"interaction","request":{…,"body":{"messages":[{"content":{"$block":"b-3f2a…"},"role":"system"},…]}},"response":{"frames":[{"data":"…","event":null,"t":0.012},…],…},"session":null,"wire":"openai-chat"}

JSON is canonical (sorted keys, compact), so one change perturbs one line. System prompts and
tool declarations (and any string of 1 KiB or more) are *blocks*: stored once in the folder's
``_blocks.jsonl``, shared by every cassette beside it, and referenced as ``{"$block": id}``
(``stuntset.cassettes.blocks``). A cassette may also hold block lines of its own (``{"id":
"b-…","kind":"block","value":…}``, before their first use): version 1 always did, and
``dumps_cassette`` writes a self-contained cassette so. A streamed response keeps each SSE
event (or each CLI stdout line) as its own frame with ``t``, its offset in seconds from the
request.

Cassettes are recognised by their header, not by where they live. Writing is atomic (a
temporary file renamed on success) and refuses bytes that still look like a secret.
"""

from __future__ import annotations

import base64
import codecs
import functools
import json
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeAlias

import msgspec

from stuntset.cassettes._files import _file_kind, numbered_lines, read_regular, write_atomic
from stuntset.cassettes.blocks import (
    STORE_NAME,
    Block,
    add_blocks,
    extract,
    load_store,
    resolve,
    store_locked,
    store_of,
)
from stuntset.cassettes.decoded import collector_paused
from stuntset.cassettes.scrub import Scrubber, scan_for_secrets
from stuntset.errors import CassetteError, SecretFound
from stuntset.wires import WIRES, map_json, wire_of_path

__all__ = [
    "ENDPOINTS",
    "FORMAT",
    "VERSION",
    "Block",
    "Cassette",
    "CassetteError",
    "Frame",
    "Header",
    "Interaction",
    "RecordedRequest",
    "RecordedResponse",
    "SecretFound",
    "check_target",
    "dumps_cassette",
    "dumps_shared",
    "endpoint_of",
    "is_cassette",
    "load_cassette",
    "loads_cassette",
    "numbered_lines",
    "read_regular",
    "reading",
    "scrub_cassette",
    "short_json",
    "wire_of",
    "write_cassette",
]

FORMAT = "stuntset-cassette"
#: 2: blocks shared by the folder (``_blocks.jsonl``); 1: blocks in each cassette.
VERSION = 2
#: The oldest version read as it is (older ones go through ``stuntset cassettes migrate``).
OLDEST_READ = 1


#: API endpoints (base-URL prefixes such as ``/v1`` stripped) → the wire they belong to: the
#: model wires' (``stuntset.wires``), then the other OpenAI-style endpoints, as plain ``http``.
ENDPOINTS: dict[str, str] = {
    **{wire.endpoint: wire.name for wire in WIRES if wire.endpoint},
    "/models": "http",
    "/embeddings": "http",
    "/completions": "http",
}


def short_json(value: Any, width: int = 120) -> str:
    """``value`` as canonical JSON for a message, cut to ``width`` characters."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


def endpoint_of(path: str) -> str:
    """The API endpoint of a request path (``/v1/chat/completions`` → ``/chat/completions``);
    the path itself when it is none of them."""
    return next((endpoint for endpoint in ENDPOINTS if path.endswith(endpoint)), path)


def wire_of(path: str) -> str:
    """The wire a request path belongs to (``http`` when it is none of the model APIs)."""
    wire = wire_of_path(path)
    return "http" if wire is None else wire.name


class Header(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag="header"):
    format: str
    version: int
    recorded_by: str = "stuntset"
    wires: list[str] = msgspec.field(default_factory=list)


class Frame(msgspec.Struct, frozen=True, kw_only=True):
    """One SSE event (``event`` + ``data``) or one CLI stdout line (``data``), received ``t``
    seconds after the request went out. ``data`` is text on every framing: an NDJSON stream
    keeps a line a frame; a binary event stream (Bedrock's) keeps one whole message, prelude
    to CRC, as base64, with ``encoding`` ``"base64"`` (the wire's
    ``StreamFraming.data_encoding``) and its event type in ``event``. ``encoding`` is absent
    (``None``: text) in every frame written before it existed, which read as they did."""

    t: float
    data: str
    event: str | None = None
    encoding: Literal["base64"] | None = None

    def raw(self) -> bytes:
        """The bytes of a binary frame (``encoding`` ``"base64"``), as they were received."""
        return base64.b64decode(self.data)


class RecordedRequest(msgspec.Struct, frozen=True, kw_only=True):
    method: str
    path: str
    query: str = ""
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    body: Any = None


class RecordedResponse(msgspec.Struct, frozen=True, kw_only=True):
    """``frames`` for a streamed response, ``body`` for a whole one."""

    status: int
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    frames: list[Frame] | None = None
    body: Any = None


class Interaction(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag="interaction"):
    id: str
    wire: str
    request: RecordedRequest
    response: RecordedResponse
    session: str | None = None


_Line: TypeAlias = Header | Block | Interaction


class Cassette(msgspec.Struct, kw_only=True):
    """A recording: interactions in the order they happened."""

    interactions: list[Interaction] = msgspec.field(default_factory=list)
    recorded_by: str = "stuntset"
    source: str = "<memory>"
    #: The line of each interaction (by id) in the file it was loaded from.
    lines: dict[str, int] = msgspec.field(default_factory=dict)

    @property
    def wires(self) -> list[str]:
        return sorted({i.wire for i in self.interactions})

    def where(self, interaction: Interaction) -> str:
        """``file:line`` of an interaction (the file alone when it was not loaded from one)."""
        line = self.lines.get(interaction.id)
        return f"{self.source}:{line}" if line else self.source


#: What interpreting a recording's content can raise when it is not shaped like its wire.
_SHAPE_ERRORS = (TypeError, AttributeError, ValueError, KeyError, IndexError, RecursionError)


@contextmanager
def reading(cassette: Cassette, interaction: Interaction) -> Iterator[None]:
    """Interpreting one interaction's content (``show``, ``to-script``, ``diff``): content
    that loads but is not shaped like its wire — a delta that is a number, an argv that is a
    string — becomes a ``CassetteError`` naming file, line and interaction, not a traceback."""
    try:
        yield
    except CassetteError:
        raise
    except _SHAPE_ERRORS as error:
        raise CassetteError(
            f"{cassette.where(interaction)}: interaction {interaction.id!r}: its content is not "
            f"what a {interaction.wire} recording holds ({type(error).__name__}: {error})"
        ) from None


_encoder = msgspec.json.Encoder(order="sorted")
_line_decoder = msgspec.json.Decoder(_Line)


def _encoded(cassette: Cassette) -> Iterator[tuple[bytes, dict[str, Any]]]:
    """Each line of a cassette without block lines (the header first), with the blocks it
    refers to that no earlier line did."""
    header = Header(
        format=FORMAT, version=VERSION, recorded_by=cassette.recorded_by, wires=cassette.wires
    )
    yield _encoder.encode(header), {}
    seen: set[str] = set()
    for interaction in cassette.interactions:
        blocks: dict[str, Any] = {}
        body = extract(interaction.request.body, None, blocks)
        stored = msgspec.structs.replace(
            interaction, request=msgspec.structs.replace(interaction.request, body=body)
        )
        yield _encoder.encode(stored), {k: v for k, v in blocks.items() if k not in seen}
        seen |= blocks.keys()


def dumps_cassette(cassette: Cassette) -> bytes:
    """The cassette as canonical JSON Lines, self-contained: each block on a line of its own
    before its first use (``write_cassette`` shares them with the folder instead)."""
    lines: list[bytes] = []
    for line, blocks in _encoded(cassette):
        lines += [_encoder.encode(Block(id=k, value=v)) for k, v in blocks.items()]
        lines.append(line)
    return b"\n".join(lines) + b"\n"


def dumps_shared(cassette: Cassette) -> tuple[bytes, dict[str, Any]]:
    """The cassette as canonical JSON Lines that refer to blocks it does not hold, and those
    blocks (id → value): what ``write_cassette`` writes to the file and to the folder's
    ``_blocks.jsonl``."""
    lines: list[bytes] = []
    shared: dict[str, Any] = {}
    for line, blocks in _encoded(cassette):
        lines.append(line)
        shared |= blocks
    return b"\n".join(lines) + b"\n", shared


def loads_cassette(
    data: bytes,
    *,
    source: str = "<bytes>",
    store: str | os.PathLike[str] | Mapping[str, Any] | None = None,
) -> Cassette:
    """Parse a cassette; ``CassetteError`` names the file, line and field of any problem —
    whatever the bytes (binary, a BOM, nesting too deep for any parser, a status no server
    sends), never another exception. A block no line of ``data`` defines is looked up in
    ``store``: a folder's ``_blocks.jsonl`` (read only when needed) or blocks by id."""
    if data.startswith(codecs.BOM_UTF8):
        raise CassetteError(
            f"{source}:1: starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM"
        )
    cassette = Cassette(source=source)
    blocks: dict[str, Any] = {}
    ids: dict[str, int] = {}
    header_seen = False
    truncated = not data.endswith(b"\n")
    for number, raw in numbered_lines(data):
        where = f"{source}:{number}"
        line = _decode_line(raw, where, truncated and number == _last(data))
        if not header_seen:
            if not isinstance(line, Header):
                raise CassetteError(f"{where}: the first line must be the cassette header")
            _check_header(line, where)
            header_seen = True
            cassette.recorded_by = line.recorded_by
            continue
        if isinstance(line, Header):
            raise CassetteError(f"{where}: a second header line")
        if isinstance(line, Block):
            blocks[line.id] = line.value
            continue
        if line.id in ids:
            raise CassetteError(
                f"{where}: field 'id': duplicate interaction id {line.id!r} (first on line {ids[line.id]})"
            )
        ids[line.id] = number
        cassette.lines[line.id] = number
        _check_status(line, where)
        _check_frames(line, where)
        try:
            body = resolve(line.request.body, _lookup(blocks, store, where))
        except RecursionError:
            raise CassetteError(f"{where}: field 'request.body': nested too deep") from None
        cassette.interactions.append(
            msgspec.structs.replace(line, request=msgspec.structs.replace(line.request, body=body))
        )
    if not header_seen:
        raise CassetteError(f"{source}: empty file, not a cassette")
    return cassette


def _lookup(
    blocks: dict[str, Any],
    store: str | os.PathLike[str] | Mapping[str, Any] | None,
    where: str,
) -> Callable[[Any], Any]:
    """id → value: the cassette's own block lines first, then the folder's store."""

    def lookup(block: Any) -> Any:
        if not isinstance(block, str):
            raise CassetteError(
                f"{where}: field 'request.body': refers to block {short_json(block)}, "
                "which is not a block id"
            )
        if block in blocks:
            return blocks[block]
        shared = {} if store is None else store if isinstance(store, Mapping) else load_store(store)
        if block in shared:
            return shared[block]
        which = (
            "which no earlier line defines"
            if store is None or isinstance(store, Mapping)
            else f"which neither an earlier line nor {store} defines (is it committed?)"
        )
        raise CassetteError(f"{where}: field 'request.body': refers to block {block!r}, {which}")

    return lookup


def _decode_line(raw: bytes, where: str, last_and_cut: bool) -> _Line:
    try:
        return _line_decoder.decode(raw)
    except msgspec.ValidationError as error:
        raise CassetteError(f"{where}: {error}") from None
    except msgspec.DecodeError as error:
        hint = " (the file ends mid-line: truncated?)" if last_and_cut else ""
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            raise CassetteError(
                f"{where}: not UTF-8 text (byte {bad.start + 1} of the line){hint}"
            ) from None
        raise CassetteError(f"{where}: not valid JSON: {error}{hint}") from None
    except RecursionError:
        raise CassetteError(f"{where}: not a cassette line: nested too deep") from None


#: HTTP statuses a server can send; a CLI run's status is its exit code (negative: a signal).
_HTTP_STATUS = range(100, 600)
_EXIT_STATUS = range(-64, 256)


def _check_status(interaction: Interaction, where: str) -> None:
    status = interaction.response.status
    cli = interaction.wire.endswith("-cli")
    if status not in (_EXIT_STATUS if cli else _HTTP_STATUS):
        allowed = "an exit code (-64 to 255)" if cli else "an HTTP status (100 to 599)"
        shown = str(status) if abs(status) < 10**15 else f"a {len(str(abs(status)))}-digit number"
        raise CassetteError(f"{where}: field 'response.status': {shown} is not {allowed}")


#: A ``\\uD800``-``\\uDFFF`` escape: JSON that Python decodes to a lone surrogate, which no
#: UTF-8 output (show, to-script, a replayed stream) can then write.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _check_frames(interaction: Interaction, where: str) -> None:
    """Refuse a frame whose JSON data decodes to a lone surrogate (``"\\ud800"``): it passed
    the line's decoder (an escaped escape) and then crashed every command that writes it."""
    for index, frame in enumerate(interaction.response.frames or ()):
        if not _SURROGATE_ESCAPE.search(frame.data):
            continue
        try:
            decoded = json.loads(frame.data)
        except (ValueError, RecursionError):
            continue  # not JSON: shown as text, which holds no surrogate
        try:
            json.dumps(decoded, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise CassetteError(
                f"{where}: field 'response.frames[{index}].data': its JSON holds a lone "
                "surrogate escape (\\ud800-\\udfff without its pair), which is not text"
            ) from None
        except RecursionError:
            continue


def _last(data: bytes) -> int:
    return data.count(b"\n") + 1


def _check_header(header: Header, where: str) -> None:
    if header.format != FORMAT:
        raise CassetteError(f"{where}: field 'format': {header.format!r} is not {FORMAT!r}")
    if header.version > VERSION:
        raise CassetteError(
            f"{where}: field 'version': version {header.version} was written by a newer stuntset "
            f"(this one reads up to {VERSION}); upgrade stuntset"
        )
    if header.version < OLDEST_READ:
        raise CassetteError(
            f"{where}: field 'version': version {header.version} is older than {OLDEST_READ}; "
            f"run `stuntset cassettes migrate {where.rsplit(':', 1)[0]}`"
        )


def check_target(path: str | os.PathLike[str]) -> Path:
    """``path`` if a cassette can be written there (before anything is recorded); else
    ``CassetteError`` naming it: an existing folder, FIFO or device, or a parent that is a
    file."""
    target = Path(path)
    if target.is_symlink() and not target.exists():
        raise CassetteError(f"{target}: a dangling symbolic link, not a place to write a cassette")
    if target.exists() and not target.is_file():
        kind = _file_kind(target.stat().st_mode)
        raise CassetteError(f"{target}: not a regular file ({kind}), cannot write a cassette there")
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                raise CassetteError(f"{target}: {parent} is not a folder")
            break
    return target


def load_cassette(path: str | os.PathLike[str]) -> Cassette:
    """The cassette at ``path``, its blocks resolved (its own, then its folder's)."""
    return loads_cassette(read_regular(path), source=str(Path(path)), store=store_of(path))


def is_cassette(path: str | os.PathLike[str]) -> bool:
    """True if the regular file starts with a stuntset cassette header (discovery by content)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as file:
            first = file.readline(4096)
    except OSError:
        return False
    try:
        line = _line_decoder.decode(first)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return False
    return isinstance(line, Header) and line.format == FORMAT


def write_cassette(
    path: str | os.PathLike[str],
    cassette: Cassette,
    *,
    scrubber: Scrubber | None = None,
    shared_blocks: bool = True,
) -> Path:
    """Scrub, scan and write atomically. ``SecretFound`` (nothing written) if the bytes — the
    cassette's and its blocks' — still hold anything that looks like a secret. Blocks go to
    the folder's ``_blocks.jsonl`` (``shared_blocks=False``: into the cassette itself), added
    under the folder's lock, which is held until the cassette is in place."""
    if Path(path).name == STORE_NAME:
        raise CassetteError(
            f"{path}: {STORE_NAME} is the name of the folder's block store; name the cassette "
            "otherwise"
        )
    scrubber = scrubber or Scrubber()
    with collector_paused():
        scrubbed = scrub_cassette(cassette, scrubber)
        if shared_blocks:
            data, blocks = dumps_shared(scrubbed)
        else:
            data, blocks = dumps_cassette(scrubbed), {}
        block_lines = b"".join(
            _encoder.encode(Block(id=k, value=v)) + b"\n" for k, v in blocks.items()
        )
        # the scrub joined and redacted each stream's channels: the scan reads each frame alone
        findings = scan_for_secrets(data + block_lines, scrubber, join_streams=False)
    target = Path(path)
    if findings:
        listed = "; ".join(f.describe() for f in findings[:5])
        raise SecretFound(
            f"{target}: refused to write: {len(findings)} thing(s) still look like secrets "
            f"after scrubbing ({listed}). Extend the Scrubber (extra_values / extra_patterns)."
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    if not blocks:
        write_atomic(target, data)
        return target
    with store_locked(target.parent):
        add_blocks(target.parent, blocks)
        write_atomic(target, data)
    return target


def scrub_cassette(cassette: Cassette, scrubber: Scrubber) -> Cassette:
    """The cassette as it will be written: every interaction scrubbed (``write_cassette``
    then scans the bytes and refuses any that still look like a secret)."""
    return Cassette(
        interactions=[_scrubbed(i, scrubber) for i in cassette.interactions],
        recorded_by=cassette.recorded_by,
        source=cassette.source,
    )


def _scrubbed(interaction: Interaction, scrubber: Scrubber) -> Interaction:
    """Everything an interaction holds, scrubbed: path, query, headers, bodies, a CLI run's
    argv, stdin and stderr lines, and the response frames as one stream (a key split across
    frames is redacted in each frame that holds part of it)."""
    request = interaction.request
    response = interaction.response
    frames = response.frames
    if frames is not None:
        texts = iter(scrubber.stream([f.data for f in frames if f.encoding is None]))
        clean = functools.partial(scrubber.value, strict=True)
        datas = [next(texts) if f.encoding is None else map_json(f.data, clean) for f in frames]
        frames = [
            f if f.data == data else msgspec.structs.replace(f, data=data)
            for f, data in zip(frames, datas, strict=True)
        ]
    # a stream's lines are redacted as a stream *before* each line is scrubbed alone (the
    # other order leaves the tail of a key split across lines, such as a PEM's body)
    body = scrubber.value(_scrub_lines(request.body, "stdin", scrubber))
    if isinstance(body, dict) and isinstance(body.get("argv"), list):
        body["argv"] = scrubber.argv(body["argv"])
    return msgspec.structs.replace(
        interaction,
        request=msgspec.structs.replace(
            request,
            path=scrubber.path(request.path),
            query=scrubber.query(request.query),
            headers=scrubber.headers(request.headers),
            body=body,
        ),
        response=msgspec.structs.replace(
            response,
            headers=scrubber.headers(response.headers),
            frames=frames,
            body=scrubber.value(_scrub_lines(response.body, "stderr", scrubber), strict=True),
        ),
    )


def _scrub_lines(body: Any, key: str, scrubber: Scrubber) -> Any:
    """A CLI run's recorded lines (``[{"t", "data"}…]`` under ``key``) scrubbed as a stream."""
    if not isinstance(body, dict) or not isinstance(body.get(key), list):
        return body
    lines = body[key]
    if not all(isinstance(line, dict) and isinstance(line.get("data"), str) for line in lines):
        return body
    datas = scrubber.stream([line["data"] for line in lines])
    return {**body, key: [{**line, "data": data} for line, data in zip(lines, datas, strict=True)]}
