"""The committed list of intended differences between a real CLI and its fake.

``allowlist.toml`` (beside this module) holds one ``[[allowed]]`` table per difference::

    [[allowed]]
    scenario = "tool_use"        # a catalog scenario
    cli = "claude"               # claude | codex
    differs = "name: real 'Read'"  # text the first difference's explanation contains
    reason = "why the fake differs on purpose (or why it cannot match)"

A difference is allowed when an entry names its scenario and CLI and its explanation
contains ``differs``. Where the real binary's timing decides which of two events comes
first, ``differs`` is a list of the texts either order shows (one entry, one reason, one
verdict in the table). Every field is required and non-empty; a malformed file is a
``UsageError`` naming the entry.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from stuntset.errors import UsageError

__all__ = ["ALLOWLIST", "Allowed", "load_allowlist"]

#: The committed allowlist.
ALLOWLIST = Path(__file__).with_name("allowlist.toml")
_FIELDS = ("scenario", "cli", "differs", "reason")


@dataclass(frozen=True)
class Allowed:
    """One intended difference."""

    scenario: str
    cli: str
    differs: str | tuple[str, ...]
    reason: str

    @property
    def texts(self) -> tuple[str, ...]:
        return (self.differs,) if isinstance(self.differs, str) else self.differs

    def covers(self, scenario: str, cli: str, explanation: str) -> bool:
        return (
            self.scenario == scenario
            and self.cli == cli
            and any(text in explanation for text in self.texts)
        )


def _given(value: object) -> bool:
    """A non-empty text, or a tuple of them (``differs`` made from a list above)."""
    return isinstance(value, tuple) or (isinstance(value, str) and bool(value))


def load_allowlist(path: str | Path = ALLOWLIST) -> list[Allowed]:
    """The entries of the allowlist at ``path``."""
    where = Path(path)
    try:
        data = tomllib.loads(where.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{where}: cannot read the drift allowlist: {error}") from error
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{where}: not valid TOML: {error}") from error
    entries = data.get("allowed", [])
    if not isinstance(entries, list):
        raise UsageError(f"{where}: 'allowed' must be an array of tables ([[allowed]])")
    found: list[Allowed] = []
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise UsageError(f"{where}: allowed entry {number} is not a table")
        differs = entry.get("differs")
        if isinstance(differs, list) and differs and all(isinstance(d, str) and d for d in differs):
            entry = {**entry, "differs": tuple(differs)}  # the texts either order shows
        missing = [f for f in _FIELDS if not _given(entry.get(f))]
        if missing:
            raise UsageError(
                f"{where}: allowed entry {number} needs a non-empty {', '.join(missing)}"
            )
        extra = sorted(set(entry) - set(_FIELDS))
        if extra:
            raise UsageError(f"{where}: allowed entry {number} has unknown key(s) {extra}")
        found.append(Allowed(*(entry[f] for f in _FIELDS)))
    return found
