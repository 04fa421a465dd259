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
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

__all__ = [
    "ENV_SUFFIXES",
    "MIN_ENV_VALUE",
    "SECRET_ENV",
    "SHAPES",
    "Hit",
    "Shape",
    "env_secrets",
    "find_many",
    "find_secrets",
    "placeholder",
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


#: Ordered: where two shapes match at the same place, the first one names it.
SHAPES: tuple[Shape, ...] = (
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
            r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----[A-Za-z0-9+/=\s:,\-]*+"
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


def find_secrets(
    text: str, *, values: Iterable[str] = (), shapes: Iterable[Shape] = SHAPES
) -> list[Hit]:
    """Every secret in ``text``, in order, not overlapping: where two overlap they are one hit
    covering both (so redacting it leaves no tail of either), named by the one starting first
    (at the same start the longer, then an exact value before a shape, then the table's
    order)."""
    found: list[tuple[int, int, int, str]] = []
    for value in values:
        start = text.find(value)
        while start >= 0:
            found.append((start, -len(value), -1, "env-value"))
            start = text.find(value, start + len(value))
    for order, shape in enumerate(shapes):
        for match in shape.pattern.finditer(text):
            if match.end() > match.start() and (shape.check is None or shape.check(match.group())):
                found.append((match.start(), match.start() - match.end(), order, shape.name))
    if not found:
        return []
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


def find_many(texts: list[str], find: Callable[[str], list[Hit]]) -> list[list[Hit]]:
    """``find`` applied to each of ``texts``, in one pass over them all: a regex pass per shape,
    not per shape and per string, whatever the number of strings. They are joined by NUL and
    newline, which no shape's body crosses (a hit is clipped to its own text all the same)."""
    if not texts:
        return []
    starts: list[int] = []
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text) + len(_SEPARATOR)
    out: list[list[Hit]] = [[] for _ in texts]
    for hit in find(_SEPARATOR.join(texts)):
        index = bisect.bisect_right(starts, hit.start) - 1
        base = starts[index]
        end = min(hit.end, base + len(texts[index]))
        if end > hit.start:
            out[index].append(Hit(hit.start - base, end - base, hit.kind))
    return out
