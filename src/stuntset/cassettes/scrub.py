"""Keeping secrets out of cassettes: scrubbing before anything reaches disk, and a last-line
scan of the bytes that refuses to write whatever still looks like a secret.

The scan is independent of the scrubbing code path on purpose: a filter bug (vcrpy #961 and
#983 leaked keys when cassettes were rewritten) cannot leak past it. Placeholders look like
``<scrubbed:openai-key>``, never like a key, so secret scanners do not flag them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

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
    }
)
#: JSON/query fields whose values are credentials wherever they appear.
SECRET_FIELDS = frozenset(
    {
        "api_key",
        "apikey",
        "key",
        "token",
        "access_token",
        "refresh_token",
        "client_secret",
        "password",
        "secret",
    }
)

#: Shapes of secrets: (name, pattern). Ordered: specific before generic.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{16,}")),
    ("openai-key", re.compile(r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("aws-key", re.compile(r"AKIA[0-9A-Z]{16}")),
    ("github-token", re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}")),
    ("slack-token", re.compile(r"xox[abprs]-[A-Za-z0-9\-]{10,}")),
    ("jwt", re.compile(r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("bearer-token", re.compile(r"(?i)bearer\s+[A-Za-z0-9._~+/\-]{16,}=*")),
)

#: Environment variables whose *values* are replaced wherever they appear.
SECRET_ENV = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
)


class Finding(msgspec.Struct, frozen=True):
    """Something that looks like a secret: where (1-based line, column) and what kind."""

    line: int
    column: int
    kind: str
    excerpt: str

    def describe(self) -> str:
        return f"line {self.line}, column {self.column}: looks like a {self.kind} ({self.excerpt})"


def _placeholder(kind: str) -> str:
    return f"<scrubbed:{kind}>"


class Scrubber:
    """Removes credentials from what a cassette will hold. Extend it per project::

    scrubber = Scrubber(extra_values=[my_token], extra_patterns={"acme-key": r"acme_[0-9a-f]{32}"})
    scrubber.allow_header("x-acme-trace")
    """

    def __init__(
        self,
        *,
        extra_values: Iterable[str] = (),
        extra_patterns: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        env_names: Iterable[str] = SECRET_ENV,
    ) -> None:
        environment = os.environ if env is None else env
        values = [environment.get(name, "") for name in env_names]
        self._values = sorted(
            {v for v in [*values, *extra_values] if len(v) >= 8}, key=len, reverse=True
        )
        self._patterns = list(PATTERNS) + [
            (name, re.compile(pattern)) for name, pattern in (extra_patterns or {}).items()
        ]
        self._allowed = set(ALLOWED_HEADERS)

    def allow_header(self, name: str) -> None:
        """Keep ``name`` in cassettes (denied headers stay denied)."""
        self._allowed.add(name.lower())

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """Only allow-listed headers, their values scrubbed."""
        return {
            key.lower(): self.text(value)
            for key, value in headers.items()
            if key.lower() in self._allowed and key.lower() not in DENIED_HEADERS
        }

    def text(self, value: str) -> str:
        for secret in self._values:
            value = value.replace(secret, _placeholder("env-value"))
        for name, pattern in self._patterns:
            value = pattern.sub(_placeholder(name), value)
        return value

    def value(self, data: Any) -> Any:
        """A JSON value with secret fields and secret-looking strings replaced."""
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, list):
            return [self.value(item) for item in data]
        if isinstance(data, dict):
            return {
                key: _placeholder(key.lower())
                if key.lower() in SECRET_FIELDS and isinstance(item, str) and item
                else self.value(item)
                for key, item in data.items()
            }
        return data

    def patterns(self) -> list[tuple[str, re.Pattern[str]]]:
        return list(self._patterns)

    def values(self) -> list[str]:
        return list(self._values)


def scan_for_secrets(data: bytes, scrubber: Scrubber | None = None) -> list[Finding]:
    """Everything in ``data`` that looks like a secret (by shape, or by an env var's value)."""
    scrubber = scrubber or Scrubber()
    text = data.decode("utf-8", errors="replace")
    findings: dict[tuple[int, int], Finding] = {}  # one finding per place, the most specific
    for number, line in enumerate(text.splitlines(), start=1):
        for secret in scrubber.values():
            start = line.find(secret)
            if start >= 0:
                findings.setdefault(
                    (number, start), Finding(number, start + 1, "env-value", _mask(secret))
                )
        for name, pattern in scrubber.patterns():
            for match in pattern.finditer(line):
                place = (number, match.start())
                findings.setdefault(
                    place, Finding(number, match.start() + 1, name, _mask(match.group()))
                )
    return [findings[place] for place in sorted(findings)]


def _mask(secret: str) -> str:
    return secret[:6] + "…" if len(secret) > 6 else "…"
