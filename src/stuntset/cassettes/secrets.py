"""The one table of credential shapes, shared by the scrubber (before anything reaches disk) and
by the scanner (``verify``, and the last check before a cassette is written).

Every shape is matched in linear time, whatever the text: each pattern starts with a literal
(so the regex engine searches for it, not tries every position), refuses to start inside a
longer token (a fixed-width look-behind right after the literal: ``eyJ`` in the middle of
``eyJeyJeyJ…`` is not a start), and consumes its body possessively (``{8,}+``: no
backtracking into a run it cannot use). A long run is thus read once per pattern, not once
per position — the crafted 240 KB ``eyJ…`` text that took 30 s is scanned in milliseconds.

Besides shapes, the *values* of environment variables whose name ends in ``KEY``, ``TOKEN``,
``SECRET`` or ``PASSWORD`` are secrets wherever they appear (values shorter than
``MIN_ENV_VALUE`` are ignored: ``DEBUG_KEY=1`` must not scrub every ``1``).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import NamedTuple

__all__ = [
    "ENV_SUFFIXES",
    "MIN_ENV_VALUE",
    "SECRET_ENV",
    "SHAPES",
    "Hit",
    "Shape",
    "channel_hits",
    "env_secrets",
    "find_many",
    "find_secrets",
    "merge_hits",
    "placeholder",
    "secret_looking",
]

#: Characters a key body is made of: a shape never starts right after one of them.
_TOKEN = r"A-Za-z0-9_\-"


class Shape(NamedTuple):
    """A named credential shape: ``pattern`` finds it; ``check`` (optional) confirms a match
    (e.g. that a Basic credential decodes to ``user:password``)."""

    name: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None


def _start(literal: str, before: str = _TOKEN) -> str:
    """``literal``, not preceded by a token character (checked after it, so the literal leads)."""
    return f"{re.escape(literal)}(?<![{before}]{re.escape(literal)})"


def _basic_credential(match: str) -> bool:
    encoded = match.split()[-1]
    try:
        decoded = base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    text = decoded.decode("utf-8", "replace")
    return ":" in text and text.isprintable()


_OWN_SHAPES: tuple[Shape, ...] = (
    Shape("anthropic-key", re.compile(_start("sk-ant-") + r"[A-Za-z0-9_\-]{16,}+")),
    Shape(
        "openai-key",
        re.compile(_start("sk-") + r"(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}+"),
    ),
    Shape(
        "stripe-key", re.compile(r"[rs]k_(?<![A-Za-z0-9_\-][rs]k_)(?:live|test)_[A-Za-z0-9]{16,}+")
    ),
    Shape(
        "aws-key",
        re.compile(
            r"(?:AKIA|ASIA)(?<![A-Za-z0-9]AKIA)(?<![A-Za-z0-9]ASIA)[0-9A-Z]{16}(?![0-9A-Z])"
        ),
    ),
    Shape(
        "aws-secret-key",
        re.compile(r"(?i)secret_?access_?key[\"']?[ \t]*+[:=][ \t]*+[\"']?[a-z0-9/+]{40}"),
    ),
    Shape("github-token", re.compile(r"gh[pousr]_(?<![A-Za-z0-9_]gh[pousr]_)[A-Za-z0-9]{30,}+")),
    Shape("github-token", re.compile(_start("github_pat_") + r"[A-Za-z0-9_]{22,}+")),
    Shape("google-api-key", re.compile(_start("AIza") + r"[A-Za-z0-9_\-]{35}")),
    Shape("huggingface-token", re.compile(_start("hf_") + r"[A-Za-z0-9]{30,}+")),
    Shape(
        "slack-token", re.compile(r"xox[abposr]-(?<![A-Za-z0-9_\-]xox[abposr]-)[A-Za-z0-9\-]{10,}+")
    ),
    Shape(
        "jwt",
        re.compile(
            _start("eyJ") + r"[A-Za-z0-9_\-]{8,}+\.eyJ[A-Za-z0-9_\-]{8,}+\.[A-Za-z0-9_\-]{8,}+"
        ),
    ),
    Shape(
        "private-key",
        re.compile(
            # the body runs on (possessively) through base64, headers such as
            # "Proc-Type: 4,ENCRYPTED" and the END line: an unterminated key is redacted to
            # the first character no PEM holds, rather than left half in place
            r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----(?:[A-Za-z0-9+/=\s:,\-]|\\[nrt])*+"
        ),
    ),
    Shape(
        "bearer-token",
        re.compile(
            r"[Bb](?<![A-Za-z0-9]B)(?<![A-Za-z0-9]b)(?:earer|EARER)[ \t]++[A-Za-z0-9._~+/\-]{16,}+=*+"
        ),
    ),
    Shape(
        "basic-auth",
        re.compile(
            r"[Bb](?<![A-Za-z0-9]B)(?<![A-Za-z0-9]b)(?:asic|ASIC)[ \t]++[A-Za-z0-9+/]{8,}+={0,2}+"
        ),
        _basic_credential,
    ),
    Shape(
        "url-credentials",
        re.compile(r"://(?<=[a-z]://)[^\s/:@\"'<>]{1,256}+:[^\s/@\"'<>]{3,256}+@"),
    ),
)

#: Provider key prefixes the field-standard rules (``secret_rules``: gitleaks) miss or bind
#: to one exact length that real keys outgrow: (name, prefix, body characters, shortest
#: body). Each becomes a shape like those above. Add a provider here until gitleaks has it.
PREFIXES: tuple[tuple[str, str, str, int], ...] = (
    ("groq-key", "gsk_", "A-Za-z0-9", 20),
    ("xai-key", "xai-", "A-Za-z0-9", 20),
    ("replicate-token", "r8_", "A-Za-z0-9", 20),
    ("npm-token", "npm_", "A-Za-z0-9", 20),
    ("gitlab-token", "glpat-", "A-Za-z0-9_\\-", 20),
    ("sendgrid-key", "SG.", "A-Za-z0-9_.\\-", 16),
    ("google-oauth-token", "ya29.", "A-Za-z0-9_\\-", 20),
    ("pypi-token", "pypi-", "A-Za-z0-9_\\-", 40),
    ("digitalocean-token", "dop_v1_", "a-f0-9", 32),
    ("digitalocean-token", "doo_v1_", "a-f0-9", 32),
    ("langsmith-key", "lsv2_pt_", "A-Za-z0-9_", 20),
    ("langsmith-key", "lsv2_sk_", "A-Za-z0-9_", 20),
    ("tavily-key", "tvly-", "A-Za-z0-9_\\-", 20),
    ("vault-token", "hvs.", "A-Za-z0-9_\\-", 20),
    ("vault-token", "hvb.", "A-Za-z0-9_\\-", 20),
    ("discord-webhook", "discord.com/api/webhooks/", "A-Za-z0-9/_\\-", 20),
)

#: Ordered: where two shapes match at the same place, the first one names it.
SHAPES: tuple[Shape, ...] = (
    *_OWN_SHAPES,
    *(
        Shape(name, re.compile(_start(prefix) + f"[{body}]{{{least},}}+"))
        for name, prefix, body, least in PREFIXES
    ),
    Shape("telegram-bot-token", re.compile(r"(?<![0-9])[0-9]{6,12}:AA[A-Za-z0-9_\-]{30,}+")),
    # an AWS secret access key on its own: 40 characters of base64 with a / or + in them,
    # upper and lower case and a digit, not part of a longer run
    Shape(
        "aws-secret-key",
        re.compile(
            r"(?<![A-Za-z0-9+/])(?=[A-Za-z0-9+/]{0,39}[/+])(?=[A-Za-z0-9+/]{0,39}[0-9])"
            r"(?=[A-Za-z0-9+/]{0,39}[a-z])(?=[A-Za-z0-9+/]{0,39}[A-Z])[A-Za-z0-9+/]{40}"
            r"(?![A-Za-z0-9+/=])"
        ),
    ),
    Shape(
        "azure-storage-key",
        re.compile(r"(?i)AccountKey(?<![A-Za-z0-9]AccountKey)=[A-Za-z0-9+/]{20,}+={0,2}"),
    ),
)

#: Names of environment variables always treated as secret (besides the suffix rule).
SECRET_ENV = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
)
#: An environment variable whose name ends in one of these holds a secret.
ENV_SUFFIXES = ("KEY", "TOKEN", "SECRET", "PASSWORD")
#: Shorter environment values are not treated as secrets (they would match everywhere).
MIN_ENV_VALUE = 8


def env_secrets(
    env: Mapping[str, str] | None = None, names: Iterable[str] = SECRET_ENV
) -> list[str]:
    """The secret values of ``env`` (default: ``os.environ``): the named variables and every one
    whose name ends in KEY, TOKEN, SECRET or PASSWORD; longest first."""
    environment = os.environ if env is None else env
    wanted = set(names)
    values = {
        value
        for name, value in environment.items()
        if (name in wanted or name.upper().endswith(ENV_SUFFIXES)) and len(value) >= MIN_ENV_VALUE
    }
    return sorted(values, key=lambda v: (-len(v), v))


class Hit(NamedTuple):
    """A secret in a text: ``text[start:end]``, of shape ``kind``."""

    start: int
    end: int
    kind: str


def placeholder(kind: str) -> str:
    """What replaces a secret: ``<scrubbed:kind>`` (never shaped like a key)."""
    return f"<scrubbed:{kind}>"


#: A value right after a word naming a credential (``token=…``, ``"X-Api-Key": "…"``, ``the
#: Mistral key is …``): a secret when it is long and random enough (no prefix to go by). The
#: words are found with ``str.find`` in the lower-cased text (a case-insensitive regex tried
#: at every position costs 5× more); ``key`` and ``auth`` must end a word.
_KEYWORDS = ("key", "secret", "token", "passw", "credential", "auth")
_WORD_END = frozenset({"key", "auth"})
_KEYWORD_VALUE = re.compile(
    r"[A-Za-z0-9_.\-]{0,20}+[\"']?(?:[ \t]{0,4}+(?:=>|:=|[:=])|[ \t]++(?:(?:is|was)[ \t])?)"
    r"[ \t\"'=]{0,4}+([A-Za-z0-9_+/=.~\-]{20,200}+)(?![A-Za-z0-9_+/=.~\-])"
)
#: Shannon entropy (bits per character) a keyword's value must reach: a 32-digit hex key has
#: about 3.8, a word-like identifier much less.
KEYWORD_ENTROPY = 3.5


def _keyword_hits(text: str) -> list[tuple[int, int, str]]:
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    out: list[tuple[int, int, str]] = []
    for keyword in _KEYWORDS:
        at = lowered.find(keyword)
        while at >= 0:
            end = at + len(keyword)
            at = lowered.find(keyword, end)
            if keyword in _WORD_END and end < len(text) and text[end].isalpha():
                continue
            if keyword == "auth" and end > 4 and text[end - 5].isalpha():
                continue  # oauth: its token is found by its own name
            value = _KEYWORD_VALUE.match(text, end)
            if value is None:
                continue
            start, stop = value.span(1)
            while stop > start and text[stop - 1] == ".":  # a sentence's full stop
                stop -= 1
            if secret_looking(text[start:stop]):
                out.append((start, stop, "keyword-secret"))
    return out


def secret_looking(value: str) -> bool:
    """Whether a value found under a word naming a credential (a JSON key such as
    ``X-Api-Key`` or ``auth``, ``token=`` in text) is one: long, one word, letters and
    digits, random enough."""
    return (
        20 <= len(value) <= 4096
        and not any(c.isspace() for c in value)
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
        and not value.startswith("<scrubbed")
        and _entropy(value) >= KEYWORD_ENTROPY
    )


def _entropy(text: str) -> float:
    size = len(text)
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    return -sum(n / size * math.log2(n / size) for n in counts.values())


class _View(NamedTuple):
    """A decoded reading of a text: ``text``, and for each of its characters (and its end)
    the offset in the original where that character's encoding starts (``starts``); a
    whole-run reading (base64) maps every hit to its ``run``."""

    text: str
    starts: list[int]


_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|[nrtbf\"\\/])")
_PERCENT = re.compile(r"%[0-9a-fA-F]{2}")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{24,}+={0,2}+")


def _decoded_view(text: str, pattern: re.Pattern[str], decode: Callable[[str], str]) -> _View:
    out: list[str] = []
    starts: list[int] = []
    last = 0
    for match in pattern.finditer(text):
        out.append(text[last : match.start()])
        starts.extend(range(last, match.start()))
        piece = decode(match.group())
        out.append(piece)
        starts.extend([match.start()] * len(piece))
        last = match.end()
    out.append(text[last:])
    starts.extend(range(last, len(text) + 1))
    return _View("".join(out), starts)


def _unescape(escape: str) -> str:
    code = escape[1]
    if code == "u":
        return chr(int(escape[2:], 16))
    return _ESCAPES.get(code, code)


def _views(text: str) -> Iterator[_View]:
    """The decoded readings of ``text`` that differ from it: JSON string escapes undone (up
    to three levels: JSON in JSON in JSON), percent-encoding undone."""
    current = text
    base: list[int] | None = None
    for _ in range(3):
        if "\\" not in current or not _ESCAPE.search(current):
            break
        view = _decoded_view(current, _ESCAPE, _unescape)
        starts = view.starts if base is None else [base[i] for i in view.starts]
        yield _View(view.text, starts)
        current, base = view.text, starts
    if "%" in text and _PERCENT.search(text):
        yield _decoded_view(text, _PERCENT, lambda e: chr(int(e[1:], 16)))


def _base64_runs(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, decoded text) of each base64 run that decodes to printable UTF-8 text
    (also each ``/``-separated part of a run: a URL path's segment)."""
    for match in _BASE64.finditer(text):
        candidates = [(match.start(), match.group())]
        if "/" in match.group():
            offset = match.start()
            for part in match.group().split("/"):
                if len(part) >= 24:
                    candidates.append((offset, part))
                offset += len(part) + 1
        for start, candidate in candidates:
            decoded = _base64_text(candidate)
            if decoded is not None:
                yield start, start + len(candidate), decoded
                break


def _base64_text(run: str) -> str | None:
    body = run.rstrip("=")
    body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body
    try:
        raw = base64.b64decode(
            (body + "=" * (-len(body) % 4)).replace("-", "+").replace("_", "/"), validate=True
        )
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return decoded if decoded.isprintable() else None


def _plain_hits(
    text: str, values: Iterable[str], shapes: Iterable[Shape], rules: bool
) -> list[tuple[int, int, int, str]]:
    """(start, -length, order, kind) of every secret verbatim in ``text``."""
    found: list[tuple[int, int, int, str]] = []
    for value in values:
        start = text.find(value)
        while start >= 0:
            found.append((start, -len(value), -1, "env-value"))
            start = text.find(value, start + len(value))
    order = 0
    for order, shape in enumerate(shapes):
        for match in shape.pattern.finditer(text):
            if match.end() > match.start() and (shape.check is None or shape.check(match.group())):
                found.append((match.start(), match.start() - match.end(), order, shape.name))
    if rules:
        from stuntset.cassettes.secret_rules import find_rule_hits

        for start, end, kind in find_rule_hits(text):
            found.append((start, start - end, order + 1, kind))
        for start, end, kind in _keyword_hits(text):
            found.append((start, start - end, order + 2, kind))
    return found


def find_secrets(
    text: str,
    *,
    values: Iterable[str] = (),
    shapes: Iterable[Shape] = SHAPES,
    rules: bool = True,
) -> list[Hit]:
    """Every secret in ``text``, in order, not overlapping: where two overlap they are one hit
    covering both (so redacting it leaves no tail of either), named by the one starting first
    (at the same start the longer, then an exact value before a shape, then the table's
    order, then the field-standard ``rules``, then a keyword's value).

    ``text`` is also read decoded — JSON string escapes undone (a service-account file's
    ``\\n``, a tool call's arguments streamed as JSON text), percent-encoding undone, and each
    base64 run that decodes to text — and what those readings hold is mapped back to where it
    is written (a base64 run as a whole)."""
    values = list(values)
    shapes = list(shapes)
    found = _plain_hits(text, values, shapes, rules)
    readings = [_View(text, list(range(len(text) + 1))), *_views(text)]
    for number, view in enumerate(readings):
        if number:
            for start, negative, order, kind in _plain_hits(view.text, values, shapes, rules):
                begin, end = view.starts[start], view.starts[start - negative]
                found.append((begin, begin - end, order, kind))
        for start, end, decoded in _base64_runs(view.text):
            kinds = {kind for *_, kind in _plain_hits(decoded, values, shapes, rules)}
            if kinds:
                begin, stop = view.starts[start], view.starts[end]
                found.append((begin, begin - stop, len(shapes) + 3, "base64-" + min(kinds)))
    return _merged(found)


def _merged(found: list[tuple[int, int, int, str]]) -> list[Hit]:
    """(start, -length, order, kind) as hits in order, overlapping ones as one."""
    found.sort()
    hits: list[Hit] = []
    for start, negative_length, _, kind in found:
        end = start - negative_length
        if hits and start < hits[-1].end:  # overlapping: one hit covering both
            if end > hits[-1].end:
                hits[-1] = hits[-1]._replace(end=end)
            continue
        hits.append(Hit(start, end, kind))
    return hits


def channel_hits(
    channels: list[list[str]],
    find: Callable[[str], list[Hit]],
    holding: Callable[[list[str]], set[int]] | None = None,
) -> list[list[Hit]]:
    """The hits in each channel's joined text (its fragments, frame by frame): found in the
    joined text, and in each fragment alone — joined, a value's body can run into the next
    fragment's value and hide its prefix (``…gsk_abc`` then ``xai-…``) — a hit alone that
    reaches its fragment's end read on into the next ones. One pass for all joined texts and
    one for all fragments (``holding``: see ``find_many``)."""
    joined_texts = ["".join(parts) for parts in channels]
    found = find_many(joined_texts, find, holding)
    alone = iter(find_many([part for parts in channels for part in parts], find, holding))
    out: list[list[Hit]] = []
    for parts, text, hits in zip(channels, joined_texts, found, strict=True):
        extra: list[Hit] = []
        offset = 0
        for part in parts:
            for hit in next(alone):
                start, end = hit.start + offset, hit.end + offset
                if hit.end == len(part) and end < len(text):  # it may go on: read on
                    longer = find(text[start : start + _READ_ON])
                    if longer and longer[0].start == 0:
                        end = max(end, start + longer[0].end)
                extra.append(Hit(start, end, hit.kind))
            offset += len(part)
        out.append(merge_hits([*hits, *extra]) if extra else hits)
    return out


#: How far a hit at a fragment's end is read on into the next fragments.
_READ_ON = 16384


def merge_hits(hits: Iterable[Hit]) -> list[Hit]:
    """Hits of one text found apart, in order, overlapping ones as one (named by the one
    starting first, at the same start the longer)."""
    return _merged([(h.start, h.start - h.end, 0, h.kind) for h in hits])


def redact(text: str, hits: list[Hit]) -> str:
    """``text`` with every hit replaced by its placeholder."""
    if not hits:
        return text
    out: list[str] = []
    last = 0
    for hit in hits:
        out.append(text[last : hit.start])
        out.append(placeholder(hit.kind))
        last = hit.end
    out.append(text[last:])
    return "".join(out)


_SEPARATOR = "\x00\n"


def find_many(
    texts: list[str],
    find: Callable[[str], list[Hit]],
    holding: Callable[[list[str]], set[int]] | None = None,
) -> list[list[Hit]]:
    """``find`` applied to each of ``texts``, in one pass over them all: a regex pass per shape,
    not per shape and per string, whatever the number of strings. They are joined by NUL and
    newline, which no shape's body crosses (a hit is clipped to its own text all the same).

    ``holding`` (a prefilter: ``Candidates.holding``) names the texts that may hold a secret;
    ``find`` reads only those, the others have none."""
    if not texts:
        return []
    # a stream repeats most of its strings frame after frame (an id, a model, an object
    # type): each distinct text is searched once (``find`` is a pure function of its text)
    distinct = dict.fromkeys(texts)
    if len(distinct) < len(texts):
        unique = list(distinct)
        by_text = dict(zip(unique, find_many(unique, find, holding), strict=True))
        return [list(by_text[text]) for text in texts]
    if holding is not None:
        candidates = holding(texts)
        if len(candidates) < len(texts):
            out: list[list[Hit]] = [[] for _ in texts]
            if not candidates:
                return out
            chosen = sorted(candidates)
            # each chosen text keeps what was around it: the separator, or the joined
            # text's start or end (a rule's ``$`` must not match where it did not)
            found = _joined_hits(
                [texts[i] for i in chosen],
                find,
                lead=chosen[0] > 0,
                trail=chosen[-1] < len(texts) - 1,
            )
            for index, hits in zip(chosen, found, strict=True):
                out[index] = hits
            return out
    return _joined_hits(texts, find)


def _joined_hits(
    texts: list[str], find: Callable[[str], list[Hit]], *, lead: bool = False, trail: bool = False
) -> list[list[Hit]]:
    """``find`` of ``texts`` joined by the separator (``lead``, ``trail``: one before the first,
    after the last), each hit clipped to its text."""
    base_offset = len(_SEPARATOR) if lead else 0
    starts: list[int] = []
    offset = base_offset
    for text in texts:
        starts.append(offset)
        offset += len(text) + len(_SEPARATOR)
    joined = _SEPARATOR.join(texts)
    if lead:
        joined = _SEPARATOR + joined
    if trail:
        joined += _SEPARATOR
    found: list[list[Hit]] = [[] for _ in texts]
    for hit in find(joined):
        index = bisect.bisect_right(starts, hit.start) - 1
        if index < 0:
            continue  # in the leading separator
        base = starts[index]
        end = min(hit.end, base + len(texts[index]))
        if end > hit.start:
            found[index].append(Hit(hit.start - base, end - base, hit.kind))
    return found
