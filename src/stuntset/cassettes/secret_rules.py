"""The field-standard credential rules: gitleaks' default configuration, vendored verbatim as
``rules/gitleaks.toml`` (MIT, ``rules/LICENSE-gitleaks``; where it came from in
``rules/SOURCE``, refreshed by ``tools/refresh_gitleaks.py``), read on first use.

Each rule is applied as gitleaks applies it: only where one of its ``keywords`` occurs
(case-insensitively), its ``regex`` (Go RE2 syntax, translated here to Python's), the secret
being the rule's ``secretGroup`` or else its first non-empty group, kept only if its Shannon
entropy reaches the rule's ``entropy`` and no allowlist (the global one's and the rule's
``regexes`` and ``stopwords``) lets it off. Rules that need a file path (``path``) do not
apply to cassette text.

Linear in the text: the keywords are found with one ``str.find`` pass each over the
lower-cased text, and a rule's regex runs only in windows around its keywords' occurrences
(merged where they overlap), so each character is read at most once per rule whose keyword is
near it. RE2 never backtracks; Python's engine may, but every gitleaks quantifier that could
is bounded or stops at a window's end.
"""

from __future__ import annotations

import functools
import math
import re
import tomllib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["RULES_FILE", "Rule", "find_rule_hits", "load_rules", "translate"]

RULES_FILE = Path(__file__).with_name("rules") / "gitleaks.toml"

#: How far before and after a keyword a match may start and end.
_BEFORE = 320
_AFTER = 1024
#: Private keys run to several kilobytes.
_AFTER_LONG = 16384


class Rule(NamedTuple):
    """One gitleaks rule, compiled."""

    id: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]
    entropy: float
    secret_group: int
    #: allowlist regexes, each with whether it reads the whole match (``regexTarget =
    #: "match"``) rather than the secret (gitleaks' default)
    allow: tuple[tuple[re.Pattern[str], bool], ...]
    stopwords: tuple[str, ...]
    after: int
    #: the match starts at a keyword (gitleaks' keyword-then-value template, its left
    #: widening dropped): tried at each keyword's place rather than searched for
    anchored: bool = False


def translate(go: str) -> str:
    """A Go RE2 pattern in Python's syntax: a flag group such as ``(?i)`` in the middle of a
    pattern (RE2: from there to the end of the enclosing group) becomes a scoped ``(?i:…)``;
    ``\\z`` becomes ``\\Z``; a ``[`` inside a character class is escaped (Python reads ``[[``
    as the start of a future nested set)."""
    out: list[str] = []
    # per open group: how many scoped flag groups were opened inside it (closed with it)
    opened: list[int] = [0]
    index = 0
    in_class = False
    while index < len(go):
        char = go[index]
        if char == "\\":
            pair = go[index : index + 2]
            out.append("\\Z" if pair == "\\z" else pair)
            index += 2
            continue
        if in_class:
            if char == "]" and not (out and out[-1] in ("[", "[^")):
                in_class = False
            elif char == "[":
                out.append("\\[")
                index += 1
                continue
            out.append(char)
            index += 1
            continue
        if char == "[":
            in_class = True
            if go.startswith("[^", index):
                out.append("[^")
                index += 2
            else:
                out.append("[")
                index += 1
            if index < len(go) and go[index] == "]":  # a literal ] first in a class
                out.append("\\]")
                index += 1
            continue
        flags = re.match(r"\(\?([a-zA-Z]+)\)", go[index:])
        if flags and (index > 0 or opened != [0]):
            out.append(f"(?{flags.group(1)}:")
            opened[-1] += 1
            index += flags.end()
            continue
        if char == "(":
            opened.append(0)
        elif char == ")":
            out.append(")" * opened.pop())
        out.append(char)
        index += 1
    out.append(")" * opened[0])
    return "".join(out)


#: gitleaks' template for a value after a keyword opens with a lazy run that only widens the
#: match to the left (``[\w.-]{0,50}?``): dropped, since the secret is a group after it; and
#: the runs between keyword and operator, and the value, are made possessive (see below). RE2 does not backtrack; Python's engine would, at every
#: position of a text dense with keywords (1.6 s for 240 KB of ``aws_secret_access_key=``).
_WIDENING = "[\\w.-]{0,50}?"
_LINEAR = (
    (_WIDENING, ""),
    ("(?:[ \\t\\w.-]{0,20})[\\s'\"]{0,3}", "(?:[ \\t\\w.-]{0,20}+)[\\s'\"]{0,3}+"),
    # the value: the terminator after it (quote, space, ``;``, backslash, end) is in neither
    # class, so a possessive run loses nothing and is read once
    (
        "([\\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,}={0,3})",
        "([\\w.=-]{10,150}+|[a-z0-9][a-z0-9+/]{11,}+={0,3}+)",
    ),
)


def _linear(go: str) -> str:
    for before, after in _LINEAR:
        go = go.replace(before, after)
    return go


def _entropy(text: str) -> float:
    if not text:
        return 0.0
    counts = Counter(text)
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def _allowlist(
    entries: Iterable[dict[str, Any]],
) -> tuple[list[tuple[re.Pattern[str], bool]], list[str]]:
    regexes: list[tuple[re.Pattern[str], bool]] = []
    stopwords: list[str] = []
    for entry in entries:
        if entry.get("paths") or entry.get("regexTarget") == "line":
            continue  # about file paths or whole lines: nothing a cassette's text has
        whole = entry.get("regexTarget") == "match"
        regexes += [(re.compile(translate(r)), whole) for r in entry.get("regexes", [])]
        stopwords += [w.lower() for w in entry.get("stopwords", [])]
    return regexes, stopwords


@functools.cache
def load_rules(path: Path = RULES_FILE) -> tuple[tuple[Rule, ...], tuple[re.Pattern[str], ...]]:
    """(rules, the global allowlist's regexes) of a gitleaks configuration file."""
    config = tomllib.loads(path.read_text(encoding="utf-8"))
    global_allow, _ = _allowlist([config.get("allowlist", {})])
    rules: list[Rule] = []
    for entry in config.get("rules", []):
        if "regex" not in entry or "path" in entry:
            continue
        allow, stopwords = _allowlist(entry.get("allowlists", []))
        source = translate(_linear(entry["regex"]))
        rules.append(
            Rule(
                id=entry["id"],
                pattern=re.compile(source),
                keywords=tuple(k.lower() for k in entry.get("keywords", [])),
                entropy=float(entry.get("entropy", 0.0)),
                secret_group=int(entry.get("secretGroup", 0)),
                allow=tuple(allow),
                stopwords=tuple(stopwords),
                after=_AFTER_LONG if "PRIVATE" in source else _AFTER,
                anchored=entry["regex"].removeprefix("(?i)").startswith(_WIDENING),
            )
        )
    return tuple(rules), tuple(pattern for pattern, _ in global_allow)


def _windows(lowered: str, keywords: Iterable[str], after: int) -> list[tuple[int, int]]:
    """Merged [start, end) windows around the keywords' occurrences in ``lowered``. Within a
    window only its last occurrence matters, so each search starts where a new one would
    widen it: a run dense with a keyword costs one ``find`` per ``after`` characters."""
    size = len(lowered)
    spans: list[tuple[int, int]] = []
    for keyword in keywords:
        width = len(keyword)
        at = lowered.find(keyword)
        while at >= 0:
            low, high = max(0, at - _BEFORE), min(size, at + width + after)
            while high < size:  # an occurrence this late widens the window
                at = lowered.rfind(keyword, high - after - width + 1, high + width - 1)
                if at < 0:
                    break
                high = min(size, at + width + after)
            spans.append((low, high))
            at = lowered.find(keyword, high) if high < size else -1
    merged: list[tuple[int, int]] = []
    for low, high in sorted(spans):
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def _occurrences(lowered: str, keyword: str) -> list[int]:
    places: list[int] = []
    at = lowered.find(keyword)
    while at >= 0:
        places.append(at)
        at = lowered.find(keyword, at + 1)
    return places


def _secret_span(match: re.Match[str], group: int) -> tuple[int, int]:
    if group:
        return match.span(group)
    for number in range(1, (match.re.groups or 0) + 1):
        if match.group(number):
            return match.span(number)
    return match.span()


def find_rule_hits(text: str, path: Path = RULES_FILE) -> list[tuple[int, int, str]]:
    """(start, end, rule id) of every secret the rules find in ``text``, unordered."""
    rules, global_allow = load_rules(path)
    lowered = text.lower()
    if len(lowered) != len(text):  # a character whose lower case is longer: keep offsets
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    found: list[tuple[int, int, str]] = []
    # a keyword with a character the text lacks cannot occur: not searched for (a text of
    # few characters, such as a crafted run, skips most of them)
    characters = set(lowered)
    for rule in rules:
        keywords = [k for k in rule.keywords if characters.issuperset(k)]
        if not keywords:
            continue
        if rule.anchored:
            starts = sorted({at for k in keywords for at in _occurrences(lowered, k)})
            matches: Iterable[re.Match[str] | None] = (
                rule.pattern.match(text, start)  # its runs are bounded or possessive
                for start in starts
            )
        else:
            matches = (
                match
                for low, high in _windows(lowered, keywords, rule.after)
                for match in rule.pattern.finditer(text, low, high)
            )
        for match in matches:
            if match is None:
                continue
            start, end = _secret_span(match, rule.secret_group)
            while end > start and text[end - 1] == ".":  # a sentence's full stop
                end -= 1
            secret = text[start:end]
            if end <= start or _entropy(secret) < rule.entropy:
                continue
            if any(a.search(secret) for a in global_allow) or any(
                a.search(match.group() if whole else secret) for a, whole in rule.allow
            ):
                continue
            if rule.stopwords and any(w in secret.lower() for w in rule.stopwords):
                continue
            found.append((start, end, rule.id))
    return found
