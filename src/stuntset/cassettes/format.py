"""The cassette format: canonical JSON Lines, reviewable and diff-friendly.

Line 1 is a self-describing header; every other line is either a *block* (a large value
stored once) or an *interaction* (one request and its response *as streamed*)::

    {"format":"stuntset-cassette","kind":"header","recorded_by":"stuntset 0.1.0","version":1,"wires":["openai-chat"]}
    {"id":"b-3f2a…","kind":"block","value":"You are a helpful assistant. …"}
    {"id":"i-1","kind":"interaction","request":{…,"body":{"system":{"$block":"b-3f2a…"},…}},"response":{"frames":[{"data":"…","event":null,"t":0.012},…],…},"session":null,"wire":"openai-chat"}

JSON is canonical (sorted keys, compact), so one change perturbs one line. Request-body
values under ``system``, ``tools`` and ``instructions``, and any string of 1 KiB or more,
are stored once as blocks and referenced as ``{"$block": id}``: changing the system prompt
changes one block line, not every interaction. A streamed response keeps each SSE event (or
each CLI stdout line) as its own frame with ``t``, its offset in seconds from the request.

Cassettes are recognised by their header, not by where they live. Writing is atomic (a
temporary file renamed on success) and refuses bytes that still look like a secret.
"""

from __future__ import annotations

import base64
import codecs
import functools
import hashlib
import json
import os
import re
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeAlias

import msgspec

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
VERSION = 1
#: Request-body keys whose (large) values are stored once as blocks.
BLOCK_KEYS = frozenset({"system", "tools", "instructions"})
#: Values whose canonical JSON is at least this long are stored as blocks.
BLOCK_MIN_BYTES = 1024


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


class Block(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", tag="block"):
    id: str
    value: Any


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


def _block_id(value: Any) -> str:
    return "b-" + hashlib.sha256(_encoder.encode(value)).hexdigest()[:16]


def _extract(value: Any, key: str | None, blocks: dict[str, Any]) -> Any:
    # sizes are measured only where a block may start, not for every nested value
    if isinstance(value, str):
        large = len(value.encode()) >= BLOCK_MIN_BYTES or (key in BLOCK_KEYS and len(value) >= 64)
    else:
        large = key in BLOCK_KEYS and len(_encoder.encode(value)) >= 64
    if large:
        block = _block_id(value)
        blocks.setdefault(block, value)
        return {"$block": block}
    if isinstance(value, dict):
        return {k: _extract(v, k, blocks) for k, v in value.items()}
    if isinstance(value, list):
        return [_extract(v, None, blocks) for v in value]
    return value


def _resolve(value: Any, blocks: dict[str, Any], where: str) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$block"}:
            block = value["$block"]
            if block not in blocks:
                raise CassetteError(
                    f"{where}: refers to block {block!r}, which no earlier line defines"
                )
            return blocks[block]
        return {k: _resolve(v, blocks, where) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, blocks, where) for v in value]
    return value


def dumps_cassette(cassette: Cassette) -> bytes:
    """The cassette as canonical JSON Lines (blocks before their first use)."""
    lines = [
        _encoder.encode(
            Header(
                format=FORMAT,
                version=VERSION,
                recorded_by=cassette.recorded_by,
                wires=cassette.wires,
            )
        )
    ]
    written: set[str] = set()
    for interaction in cassette.interactions:
        blocks: dict[str, Any] = {}
        body = _extract(interaction.request.body, None, blocks)
        for block, value in blocks.items():
            if block not in written:
                written.add(block)
                lines.append(_encoder.encode(Block(id=block, value=value)))
        stored = msgspec.structs.replace(
            interaction, request=msgspec.structs.replace(interaction.request, body=body)
        )
        lines.append(_encoder.encode(stored))
    return b"\n".join(lines) + b"\n"


def numbered_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of ``data`` with their 1-based numbers."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            yield number, line


def loads_cassette(data: bytes, *, source: str = "<bytes>") -> Cassette:
    """Parse a cassette; ``CassetteError`` names the file, line and field of any problem —
    whatever the bytes (binary, a BOM, nesting too deep for any parser, a status no server
    sends), never another exception."""
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
            body = _resolve(line.request.body, blocks, f"{where}: field 'request.body'")
        except RecursionError:
            raise CassetteError(f"{where}: field 'request.body': nested too deep") from None
        cassette.interactions.append(
            msgspec.structs.replace(line, request=msgspec.structs.replace(line.request, body=body))
        )
    if not header_seen:
        raise CassetteError(f"{source}: empty file, not a cassette")
    return cassette


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
    if header.version < VERSION:
        raise CassetteError(
            f"{where}: field 'version': version {header.version} is older than {VERSION}; "
            f"run `stuntset cassettes migrate {where.rsplit(':', 1)[0]}`"
        )


def read_regular(path: str | os.PathLike[str], what: str = "cassette") -> bytes:
    """The bytes of a regular file; ``CassetteError`` naming it for anything else (missing, a
    dangling link, a folder, a FIFO — which would block a read forever —, unreadable)."""
    file = Path(path)
    try:
        mode = file.stat().st_mode
    except FileNotFoundError:
        kind = "a dangling symbolic link" if file.is_symlink() else f"no such {what}"
        raise CassetteError(f"{file}: {kind}") from None
    except OSError as error:
        raise CassetteError(f"{file}: cannot read it: {error.strerror or error}") from None
    if not stat.S_ISREG(mode):
        raise CassetteError(f"{file}: not a regular file ({_file_kind(mode)}), not a {what}")
    try:
        return file.read_bytes()
    except OSError as error:
        raise CassetteError(f"{file}: cannot read it: {error.strerror or error}") from None


def _file_kind(mode: int) -> str:
    kinds = [
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ]
    return next((name for test, name in kinds if test(mode)), "not a plain file")


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
    return loads_cassette(read_regular(path), source=str(Path(path)))


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
    path: str | os.PathLike[str], cassette: Cassette, *, scrubber: Scrubber | None = None
) -> Path:
    """Scrub, scan and write atomically. ``SecretFound`` (nothing written) if the bytes still
    hold anything that looks like a secret."""
    scrubber = scrubber or Scrubber()
    with collector_paused():
        data = dumps_cassette(scrub_cassette(cassette, scrubber))
        # the scrub joined and redacted each stream's channels: the scan reads each frame alone
        findings = scan_for_secrets(data, scrubber, join_streams=False)
    target = Path(path)
    if findings:
        listed = "; ".join(f.describe() for f in findings[:5])
        raise SecretFound(
            f"{target}: refused to write: {len(findings)} thing(s) still look like secrets "
            f"after scrubbing ({listed}). Extend the Scrubber (extra_values / extra_patterns)."
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    # not mkstemp (always 0600): a new file whose mode the umask decides, like any other
    temp = str(target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp"))
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
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
