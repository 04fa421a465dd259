"""Where a secret may be: one cheap pass that every text ``find_secrets`` (or a credential
field) would report something in must match, so the full decode-and-scan runs only where it
does. Its pieces, each necessary for one way of finding a secret:

* every shape's literal (``sk-``, ``AKIA``, ``eyJ``, ``-----BEGIN``, ``://``, a prefix of
  ``PREFIXES``…), and case-insensitively ``bearer`` and ``basic``;
* case-insensitively, every gitleaks rule's keywords (a rule runs only near one), the words a
  keyword's value follows (``key``, ``secret``, ``token``, ``passw``, ``credential``,
  ``auth``) and ``signature`` (with them, every credential field's name: ``X-Amz-Signature``);
* a run of 24 base64 characters (a base64 run that is decoded and read, an AWS secret key on
  its own), a backslash (a JSON escape: a decoded reading), ``%`` and two hex digits
  (percent-encoding);
* each secret value (an environment variable's), a space in it also matched by ``+`` (a
  query's ``unquote_plus`` reading).

The pattern has no look-around and no anchor: a match in a text is a match in any text that
holds it (a frame's whole JSON, texts joined by ``find_many``'s separator). A scrubber with
shapes of its own (``extra_patterns``) gets no prefilter: its patterns may need anything.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable
from typing import Any

from stuntset.cassettes.secrets import PREFIXES, SHAPES, Shape

__all__ = ["LITERALS", "WORDS", "Candidates"]

#: Shape literals, case-sensitive (``SHAPES``: a shape's match holds one of them).
LITERALS: tuple[str, ...] = (
    "sk-",
    "k_live_",
    "k_test_",
    "AKIA",
    "ASIA",
    "github_pat_",
    "AIza",
    "hf_",
    "eyJ",
    "-----BEGIN",
    "://",
    ":AA",
    *(prefix for _, prefix, _, _ in PREFIXES),
)
#: Shape literals that are patterns: ``ghp_``…, ``xoxb-``….
_LITERAL_PATTERNS = (r"gh[pousr]_", r"xox[abposr]-")  # lower-case: looser
#: Words matched in any case: the scrubber's keywords, credential field names' parts, and the
#: shapes whose literal is written in any case.
WORDS: tuple[str, ...] = (
    "key",
    "secret",
    "token",
    "passw",
    "credential",
    "auth",
    "signature",
    "bearer",
    "basic",
)
_RUN = r"[a-z0-9+/_\-]{24}"
_ESCAPE = r"\\"
_PERCENT = r"%[0-9a-f]{2}"
#: Joins texts searched in one pass (no piece of the pattern matches across it).
_SEPARATOR = "\x00\n"


@functools.cache
def _rule_keywords() -> tuple[str, ...]:
    from stuntset.cassettes.secret_rules import load_rules

    rules, _ = load_rules()
    return tuple(sorted({k for rule in rules for k in rule.keywords}))


def _trie(words: Iterable[str]) -> str:
    """One regex for a set of literals, factored by their prefixes (the regex engine then
    tries one branch per next character, not every word at every position)."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        branches = [re.escape(char) + emit(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return emit(root)


@functools.cache
def _lowered_pattern() -> re.Pattern[str]:
    """The pattern's pieces that do not depend on a scrubber, for the lower-cased text (every
    literal lower-cased: looser, never stricter; a word with a character that another
    literal holds whole is dropped: the shorter one already matches there)."""
    words = {*(w.lower() for w in LITERALS), *WORDS, *_rule_keywords()}
    kept = sorted(w for w in words if not any(o != w and o in w for o in words))
    return re.compile("|".join([_trie(kept), *_LITERAL_PATTERNS, _RUN, _ESCAPE, _PERCENT]))


def _value(value: str) -> str:
    return "[ +]".join(re.escape(part) for part in value.split(" "))


@functools.lru_cache(maxsize=64)
def _values_pattern(values: tuple[str, ...]) -> re.Pattern[str] | None:
    return re.compile("|".join(_value(v) for v in values)) if values else None


def _lowered(text: str) -> str:
    """``text`` lower-cased, each character where it was (one whose lower case is longer, such
    as ``İ``, kept as it is)."""
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return lowered


class Candidates:
    """The prefilter of a scrubber: ``may_hold(text)`` is false only where neither
    ``find_secrets(text, values=values, shapes=shapes)`` nor a credential field named in it
    finds anything. ``shapes`` other than ``SHAPES`` turn it off (everything may hold one)."""

    def __init__(self, values: Iterable[str], shapes: Iterable[Shape] = SHAPES) -> None:
        self._off = tuple(shapes) != SHAPES
        self._lowered = _lowered_pattern()
        self._values = _values_pattern(tuple(sorted(set(values))))

    @property
    def off(self) -> bool:
        """Whether every text counts as a candidate (the scrubber has shapes of its own)."""
        return self._off

    def may_hold(self, text: str) -> bool:
        return (
            self._off
            or self._lowered.search(_lowered(text)) is not None
            or (self._values is not None and self._values.search(text) is not None)
        )

    def holding(self, texts: list[str]) -> set[int]:
        """The indexes of the ``texts`` that may hold a secret, in one pass over them all."""
        if self._off:
            return set(range(len(texts)))
        if not texts:
            return set()
        starts: list[int] = []
        offset = 0
        for text in texts:
            starts.append(offset)
            offset += len(text) + len(_SEPARATOR)
        joined = _SEPARATOR.join(texts)
        found = _texts_matching(self._lowered, _lowered(joined), starts)
        if self._values is not None:
            found |= _texts_matching(self._values, joined, starts)
        return found


def _texts_matching(pattern: re.Pattern[str], joined: str, starts: list[int]) -> set[int]:
    """Which of the texts starting at ``starts`` in ``joined`` hold a match of ``pattern``."""
    found: set[int] = set()
    at = 0
    while True:
        match = pattern.search(joined, at)
        if match is None:
            return found
        index = bisect.bisect_right(starts, match.start()) - 1
        found.add(index)
        # one match is enough for a text: go on from the next one
        if index + 1 >= len(starts):
            return found
        at = starts[index + 1]
