"""Keeping secrets out of cassettes: scrubbing before anything reaches disk, and a last-line
scan of the bytes that refuses to write whatever still looks like a secret.

The scan is independent of the scrubbing code path on purpose: a filter bug (vcrpy #961 and
#983 leaked keys when cassettes were rewritten) cannot leak past it. Placeholders look like
``<scrubbed:openai-key>``, never like a key, so secret scanners do not flag them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, unquote_plus, urlencode

import msgspec

from stuntset.cassettes.candidates import Candidates
from stuntset.cassettes.decoded import (
    NOT_JSON,
    Fragment,
    channels,
    decode_json,
    encode_json,
    joined,
    redact_fragments,
    set_at,
    strings,
)
from stuntset.cassettes.secrets import (
    MIN_ENV_VALUE,
    SECRET_ENV,
    SHAPES,
    Hit,
    Shape,
    channel_hits,
    env_secrets,
    find_many,
    find_secrets,
    placeholder,
    redact,
    secret_looking,
)

__all__ = [
    "ALLOWED_HEADERS",
    "DENIED_HEADERS",
    "Finding",
    "Scrubber",
    "scan_for_secrets",
]

#: Headers kept in a cassette (everything else is dropped on save).
ALLOWED_HEADERS = frozenset(
    {
        "content-type",
        "accept",
        "anthropic-version",
        "anthropic-beta",
        "openai-beta",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "x-stainless-retry-count",
        "request-id",
        "x-request-id",
        # Bedrock names its error in a header (botocore reads the code there, not the body)
        "x-amzn-errortype",
        "x-amzn-requestid",
    }
)
#: Never kept, even if a user allow-lists them.
DENIED_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "x-goog-api-key",
        # AWS SigV4: the signature, its date and body hash, and an STS session token
        "x-amz-security-token",
        "x-amz-date",
        "x-amz-content-sha256",
    }
)
#: JSON/query fields and CLI options whose values are credentials wherever they appear.
SECRET_FIELDS = frozenset(
    {
        "api_key",
        "apikey",
        "key",
        "token",
        "access_token",
        "refresh_token",
        "id_token",
        "session_token",
        "client_secret",
        "password",
        "secret",
        "secret_access_key",
        "aws_secret_access_key",
        "aws_session_token",
        "x_amz_security_token",
        "x_amz_signature",
        "x_amz_credential",
        "private_key",
    }
)
#: The fields that name a credential even in a response stream or a file ``verify`` reads
#: (``key`` and ``token`` also name ordinary data there: a logprob's ``token``).
STRICT_SECRET_FIELDS = SECRET_FIELDS - {"key", "token"}


def _field(name: str) -> str:
    """A field or option name in one spelling: ``--API-Key`` → ``api_key``, ``SecretAccessKey``
    → ``secretaccesskey`` (also listed without underscores)."""
    return name.lstrip("-").lower().replace("-", "_")


_FIELD_NAMES = SECRET_FIELDS | {name.replace("_", "") for name in SECRET_FIELDS}
_STRICT_NAMES = STRICT_SECRET_FIELDS | {name.replace("_", "") for name in STRICT_SECRET_FIELDS}


@functools.lru_cache(maxsize=4096)
def is_secret_field(name: str, *, strict: bool = False) -> bool:
    """Whether a JSON field, query parameter or CLI option of this name holds a credential."""
    return _field(name) in (_STRICT_NAMES if strict else _FIELD_NAMES)


_KEYWORD_FIELD = re.compile(
    r"api_?key|access_?key|secret|token|passw(?:or)?d|credential|private_?key"
    r"|(?<![a-z0-9])(?:key|auth)(?![a-z])"
)


@functools.lru_cache(maxsize=4096)
def _keyword_field(name: str) -> bool:
    """A field whose name holds a word naming a credential (``X-Api-Key``, ``auth``,
    ``next_token``): its value is a secret when it looks like one (``secret_looking``)."""
    return _KEYWORD_FIELD.search(_field(name)) is not None


def _hides_secret(name: str, value: Any, *, strict: bool) -> bool:
    """Whether the value of field ``name`` is a credential to replace."""
    if not isinstance(value, str) or not value or _is_placeholder(value):
        return False
    if is_secret_field(name, strict=strict):
        return True
    return _keyword_field(name) and secret_looking(value)


def _secret_option(arg: str) -> bool:
    """A CLI option naming a credential: ``--token``, ``--api-key``, ``--db-password``…"""
    if not arg.startswith("-") or arg == "-" or arg == "--":
        return False
    name = _field(arg.partition("=")[0])
    return is_secret_field(name) or name.endswith(("_key", "_token", "_secret", "_password"))


class Finding(msgspec.Struct, frozen=True):
    """Something that looks like a secret: where (1-based line, and column, or ``where`` in
    the line's JSON when it is not verbatim in the bytes) and what kind."""

    line: int
    column: int
    kind: str
    excerpt: str
    where: str = ""

    def describe(self) -> str:
        place = f"line {self.line}, " + (self.where if self.where else f"column {self.column}")
        return f"{place}: looks like a {self.kind} ({self.excerpt})"


def _is_placeholder(text: str) -> bool:
    return text.startswith("<scrubbed:") and text.endswith(">")


class Scrubber:
    """Removes credentials from what a cassette will hold. Extend it per project::

    scrubber = Scrubber(extra_values=[my_token], extra_patterns={"acme-key": r"acme_[0-9a-f]{32}"})
    scrubber.allow_header("x-acme-trace")

    Shapes come from the one table (``stuntset.cassettes.secrets.SHAPES``); secret values are
    those of ``extra_values`` and of the environment (``env``, default ``os.environ``): the
    variables ``env_names`` and every one whose name ends in KEY, TOKEN, SECRET or PASSWORD.

    Texts are first read by a cheap prefilter (``stuntset.cassettes.candidates``): the full
    decode-and-scan runs only on those that may hold a secret. ``prefilter=False`` runs it on
    every text (what the prefilter is checked against; it finds the same).
    """

    def __init__(
        self,
        *,
        extra_values: Iterable[str] = (),
        extra_patterns: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        env_names: Iterable[str] = SECRET_ENV,
        prefilter: bool = True,
    ) -> None:
        values = {
            *env_secrets(env, env_names),
            *(v for v in extra_values if len(v) >= MIN_ENV_VALUE),
        }
        self._values = sorted(values, key=lambda v: (-len(v), v))
        self._shapes = SHAPES + tuple(
            Shape(name, re.compile(pattern)) for name, pattern in (extra_patterns or {}).items()
        )
        self._allowed = set(ALLOWED_HEADERS)
        self._candidates = Candidates(self._values, self._shapes) if prefilter else None

    def allow_header(self, name: str) -> None:
        """Keep ``name`` in cassettes (denied headers stay denied)."""
        self._allowed.add(name.lower())

    def find(self, text: str) -> list[Hit]:
        """Every secret in ``text`` (by shape or by value), in order."""
        if self._candidates is not None and not self._candidates.may_hold(text):
            return []
        return self._find(text)

    def _find(self, text: str) -> list[Hit]:
        return find_secrets(text, values=self._values, shapes=self._shapes)

    def find_each(self, texts: list[str]) -> list[list[Hit]]:
        """``find`` of each of ``texts``, in one pass over those that may hold a secret."""
        return find_many(texts, self._find, self._holding)

    def channel_hits(self, channels: list[list[str]]) -> list[list[Hit]]:
        """The hits in each channel (``stuntset.cassettes.secrets.channel_hits``)."""
        return channel_hits(channels, self._find, self._holding)

    @property
    def _holding(self) -> Callable[[list[str]], set[int]] | None:
        return None if self._candidates is None else self._candidates.holding

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """Only allow-listed headers, their values scrubbed."""
        return {
            key.lower(): self.text(value)
            for key, value in headers.items()
            if key.lower() in self._allowed and key.lower() not in DENIED_HEADERS
        }

    def text(self, value: str) -> str:
        """``value`` with every secret replaced by a placeholder; a JSON document (a CLI's
        stdin line) is scrubbed as JSON, so escapes hide nothing."""
        document = decode_json(value)
        if document is not NOT_JSON:
            clean = self.value(document)
            return value if clean == document else encode_json(clean)
        return redact(value, self.find(value))

    def value(self, data: Any, *, strict: bool = False) -> Any:
        """A JSON value with secret fields and secret-looking strings (keys too) replaced
        (``strict``: only the fields that always name a credential, for response data). All
        its strings are searched in one pass."""
        found: dict[str, str] = {}
        plain: list[str] = []
        fields = False  # a credential field to replace
        stack: list[Any] = [data]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                if item not in found:
                    found[item] = item
                    if decode_json(item) is NOT_JSON:
                        plain.append(item)
                    else:  # a JSON document in a string (a CLI's stdin line): read through
                        found[item] = self.text(item)
            elif isinstance(item, dict):
                fields = fields or any(
                    _hides_secret(key, value, strict=strict) for key, value in item.items()
                )
                stack.extend(item)
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        for text, hits in zip(plain, self.find_each(plain), strict=True):
            if hits:
                found[text] = redact(text, hits)
        changed = {text: clean for text, clean in found.items() if clean != text}
        if not changed and not fields:
            return data  # nothing to replace: the very same value
        return self._rebuilt(data, changed, strict)

    def _rebuilt(self, data: Any, clean: dict[str, str], strict: bool) -> Any:
        if isinstance(data, str):
            return clean.get(data, data)
        if isinstance(data, list):
            return [self._rebuilt(item, clean, strict) for item in data]
        if isinstance(data, dict):
            return {
                clean.get(key, key): (
                    placeholder(key.lower())
                    if is_secret_field(key, strict=strict)
                    else placeholder("keyword-secret")
                )
                if _hides_secret(key, item, strict=strict)
                else self._rebuilt(item, clean, strict)
                for key, item in data.items()
            }
        return data

    def query(self, query: str) -> str:
        """A query string with credential parameters (``?api_key=``, ``?token=``, ``?key=``…)
        and secret-looking values replaced; unchanged when there is nothing to replace."""
        if not query:
            return query
        pairs = parse_qsl(query, keep_blank_values=True)
        clean = [
            (
                self.text(name),
                placeholder(name.lower())
                if is_secret_field(name) and value and not _is_placeholder(value)
                else self.text(value),
            )
            for name, value in pairs
        ]
        if clean == pairs and not self.find(unquote_plus(query)):
            return query
        return urlencode(clean, safe="<>:", quote_via=quote)

    def path(self, path: str) -> str:
        """A URL path with secret-looking segments replaced (read percent-decoded)."""
        decoded = unquote(path)
        hits = self.find(decoded)
        return redact(decoded, hits) if hits else path

    def argv(self, argv: list[Any]) -> list[Any]:
        """CLI arguments: the value of a credential option (``--token X``, ``--api-key=X``)
        replaced, and every argument scrubbed as text."""
        out: list[Any] = []
        secret_next = False
        for arg in argv:
            if not isinstance(arg, str):
                out.append(arg)
                secret_next = False
                continue
            if secret_next and not arg.startswith("-"):
                out.append(arg if _is_placeholder(arg) else placeholder("cli-option"))
                secret_next = False
                continue
            secret_next = False
            if _secret_option(arg):
                name, equals, value = arg.partition("=")
                if equals:
                    out.append(
                        arg
                        if not value or _is_placeholder(value)
                        else f"{name}={placeholder('cli-option')}"
                    )
                    continue
                secret_next = True
            out.append(self.text(arg))
        return out

    def stream(self, datas: list[str]) -> list[str]:
        """A stream's frames (SSE ``data``, CLI stdout or stderr lines) with every secret
        replaced, also one split across frames: each channel (the same place in every frame)
        is joined first and what it holds is redacted in every frame holding part of it (the
        placeholder where it starts); then each frame is scrubbed on its own (as JSON, or as
        text if it is none). Frames stay valid JSON. All channels, then all frames, are
        searched in one pass each."""
        decoded: list[Any] = []
        for data in datas:
            document = decode_json(data)
            plain = document is NOT_JSON or isinstance(document, str)
            decoded.append((data,) if plain else document)
        grouped = channels(decoded)
        changed: set[int] = set()
        for fragments, hits in zip(
            grouped, self.channel_hits([[f.text for f in g] for g in grouped]), strict=True
        ):
            for position, text in redact_fragments(fragments, hits).items():
                fragment = fragments[position]
                changed.add(fragment.frame)
                if fragment.path is None:
                    decoded[fragment.frame] = (text,)
                else:
                    set_at(decoded[fragment.frame], fragment.path, text)
        texts = [d[0] for d in decoded if isinstance(d, tuple)]
        clean_texts = iter(
            redact(text, hits) for text, hits in zip(texts, self.find_each(texts), strict=True)
        )
        documents = [d for d in decoded if not isinstance(d, tuple)]
        clean_documents = iter(self.value(documents, strict=True))
        out: list[str] = []
        for number, (data, document) in enumerate(zip(datas, decoded, strict=True)):
            if isinstance(document, tuple):
                out.append(next(clean_texts))
                continue
            clean = next(clean_documents)
            same = number not in changed and (clean is document or clean == document)
            out.append(data if same else encode_json(clean))
        return out

    def patterns(self) -> list[tuple[str, re.Pattern[str]]]:
        return [(shape.name, shape.pattern) for shape in self._shapes]

    def values(self) -> list[str]:
        return list(self._values)


def scan_for_secrets(
    data: bytes, scrubber: Scrubber | None = None, *, join_streams: bool = True
) -> list[Finding]:
    """Everything in ``data`` that looks like a secret (by shape, by an env var's value, or
    as the value of a credential field), read as decoded text: each JSON line's strings
    unescaped, and each recorded stream (response frames, CLI stdin and stderr lines) joined,
    so a key split across frames is found. Linear in the size of ``data``.

    ``join_streams=False`` reads each frame's strings alone: for bytes whose streams
    ``Scrubber.stream`` has just redacted channel by channel (``write_cassette``), so the
    channels are joined and searched once per write, not twice."""
    scrubber = scrubber or Scrubber()
    text = data.decode("utf-8", errors="replace")
    findings: list[Finding] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            findings += _scan_line(number, line, scrubber, join_streams)
    return findings


def _scan_line(number: int, line: str, scrubber: Scrubber, join_streams: bool) -> list[Finding]:
    seen: set[str] = set()
    found: list[Finding] = []

    def add(secret: str, kind: str, where: str) -> None:
        if secret in seen:
            return
        seen.add(secret)
        column = line.find(secret)
        found.append(Finding(number, column + 1, kind, _mask(secret), "" if column >= 0 else where))

    document = decode_json(line)
    if document is NOT_JSON:
        for hit in scrubber.find(line):
            add(line[hit.start : hit.end], hit.kind, "")
        return _ordered(found)
    streams = _streams(document)
    # the frames' own text is read through the streams below, each string once
    in_streams = {id(text) for _, _, datas in streams for text in datas}
    paths: list[tuple[str | int, ...]] = []
    texts: list[str] = []
    for path, value, _is_key in strings(document):
        for text in _readings(value, nested=id(value) not in in_streams):
            paths.append(path)
            texts.append(text)
    for path, text, hits in zip(paths, texts, scrubber.find_each(texts), strict=True):
        for hit in hits:
            add(text[hit.start : hit.end], hit.kind, f"field {_dotted(path)}")
    for path, key, value in _fields(document):
        if (
            is_secret_field(key, strict=True)
            and len(value) >= MIN_ENV_VALUE
            and not _is_placeholder(value)
        ) or (_keyword_field(key) and secret_looking(value)):
            add(value, f"{key} field", f"field {_dotted((*path, key))}")
    if not join_streams:
        places: list[str] = []
        texts = []
        for name, stream, _ in streams:
            for index, frame in enumerate(stream):
                where = f"{name.removesuffix('s')} {index}"
                if isinstance(frame, tuple):
                    places.append(where)
                    texts.append(frame[0])
                    continue
                for path, text, is_key in strings(frame):
                    if path and not is_key:
                        places.append(where)
                        texts.append(text)
        for where, text, hits in zip(places, texts, scrubber.find_each(texts), strict=True):
            for hit in hits:
                add(text[hit.start : hit.end], hit.kind, where)
        return _ordered(found)
    grouped = [(name, f) for name, stream, _ in streams for f in channels(stream, singletons=True)]
    channel_texts = [joined(fragments) for _, fragments in grouped]
    for (name, fragments), text, hits in zip(
        grouped,
        channel_texts,
        scrubber.channel_hits([[f.text for f in g] for _, g in grouped]),
        strict=True,
    ):
        for hit in hits:
            inside = [f.frame for f in _holding(fragments, hit)]
            where = (
                f"{name} {inside[0]}–{inside[-1]} (split across them)"
                if inside[-1] > inside[0]
                else f"{name.removesuffix('s')} {inside[0]}"
            )
            add(text[hit.start : hit.end], hit.kind, where)
    return _ordered(found)


def _readings(value: str, *, nested: bool = True) -> list[str]:
    """A string as it may be read: itself, percent-decoded (a query, a path), and (``nested``)
    the strings of the JSON document it holds (a tool call's arguments), unescaped."""
    out = [value]
    if "%" in value:
        out.append(unquote_plus(value))
    if nested:
        document = decode_json(value)
        if document is not NOT_JSON and not isinstance(document, str):
            out += [text for _, text, _ in strings(document)]
    return out


def _ordered(found: list[Finding]) -> list[Finding]:
    return sorted(found, key=lambda f: (f.column <= 0, f.column, f.where))


def _dotted(path: tuple[str | int, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "$"


def _fields(document: Any) -> list[tuple[tuple[str | int, ...], str, str]]:
    """Every (object path, key, string value) of a JSON value."""
    out: list[tuple[tuple[str | int, ...], str, str]] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), document)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if isinstance(value, str):
                    out.append((path, key, value))
                else:
                    stack.append(((*path, key), value))
        elif isinstance(item, list):
            stack.extend(((*path, index), value) for index, value in enumerate(item))
    return out


def _streams(document: Any) -> list[tuple[str, list[Any], list[str]]]:
    """The streams of a recorded interaction line — its response frames, and a CLI run's
    stdin and stderr lines —, each as (name, frames decoded: a frame that is not JSON as a
    1-tuple of its text, the frames' raw texts)."""
    if not isinstance(document, dict) or document.get("kind") != "interaction":
        return []
    out: list[tuple[str, list[Any], list[str]]] = []
    request, response = document.get("request"), document.get("response")
    sources = [
        ("frames", response.get("frames") if isinstance(response, dict) else None),
        ("stdin lines", _get(request, "body", "stdin")),
        ("stderr lines", _get(response, "body", "stderr")),
    ]
    for name, frames in sources:
        if not isinstance(frames, list):
            continue
        datas = [
            f["data"] for f in frames if isinstance(f, dict) and isinstance(f.get("data"), str)
        ]
        stream: list[Any] = []
        for data in datas:
            inner = decode_json(data)
            stream.append((data,) if inner is NOT_JSON or isinstance(inner, str) else inner)
        out.append((name, stream, datas))
    return out


def _get(value: Any, *keys: str) -> Any:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _holding(fragments: list[Fragment], hit: Hit) -> list[Fragment]:
    out: list[Fragment] = []
    offset = 0
    for fragment in fragments:
        end = offset + len(fragment.text)
        if offset < hit.end and end > hit.start:
            out.append(fragment)
        offset = end
    return out


def _mask(secret: str) -> str:
    return secret[:6] + "…" if len(secret) > 6 else "…"
