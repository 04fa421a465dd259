"""The committed list of intended differences between a real CLI and its fake, described by
structure, never by text search.

``allowlist.toml`` (beside this module) holds two kinds of tables.

``[[allowed]]``, one difference (``compare.Difference``)::

    [[allowed]]
    column = "claude"            # a drift column (claude, claude-session, codex, codex-exec),
                                 # or a list of them where the same difference shows in each
    scenario = "crash_mid_turn"  # a catalog scenario
    step = 7                     # the step's index in the real stream
    field = "kind"               # the field that differs ...
    real = "http"                # ... and its exact value on each side
    fake = "exited"
    reason = "fake gap: ..."

``field = "step"`` names whole steps: ``real`` and ``fake`` are the lists of the steps each
side has there, spelt out (``normalize.spell``: ``run.crashed kind='http' retryable=True``);
it covers a run of steps one side lacks, and also every field of a step pair of one kind
that differs (a crash of another kind *and* retryability).

``field = "rest"`` says how the rest of the run differs: ``real`` and ``fake`` are the
lists of *all* the steps each side shows from ``step`` to its end (a CLI-side feature the
model API cannot say, after which the two runs go different ways).

``[[race]]``, where the real binary's timing decides what comes: the explicit set of
outcomes a side's stream may show from ``step`` on (each a list of spelt-out steps)::

    [[race]]
    column = "codex"
    scenario = "stuck"
    step = 1
    outcomes = [["run.killed"], ["message.delta text='Thinking'", "run.killed"]]
    reason = "race: ..."

Each side must show one of the outcomes there (the longest that fits); its span is then
compared as equal, so another known order is not a difference and an unknown one is.

Every entry must match something in every run that plays its cell: an entry that matched
nothing fails the run (``DriftReport.stale``). Every field is required; a malformed file is a
``UsageError`` naming the entry.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stuntset.errors import UsageError

from .compare import Difference
from .normalize import Step, spell

__all__ = ["ALLOWLIST", "KINDS", "Allowed", "Race", "load_allowlist"]

#: The committed allowlist.
ALLOWLIST = Path(__file__).with_name("allowlist.toml")
#: How each reason starts: the kind of difference it is.
KINDS = ("layer", "catalog", "fake gap", "race")
_ALLOWED = ("column", "scenario", "step", "field", "real", "fake", "reason")
_RACE = ("column", "scenario", "step", "outcomes", "reason")


def _freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


@dataclass(frozen=True)
class Allowed:
    """One intended difference (see the module docs)."""

    column: str | tuple[str, ...]
    scenario: str
    step: int
    field: str
    real: Any
    fake: Any
    reason: str

    @property
    def kind(self) -> str:
        return self.reason.split(":")[0]

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,) if isinstance(self.column, str) else self.column

    def rest(self, real: Sequence[Step], fake: Sequence[Step]) -> bool:
        """A ``field = "rest"`` entry: both sides show its steps from ``step`` to the end."""
        return (
            self.field == "rest"
            and tuple(spell(s) for s in real[self.step :]) == _freeze(self.real)
            and tuple(spell(s) for s in fake[self.step :]) == _freeze(self.fake)
        )

    def covers(self, column: str, scenario: str, difference: Difference) -> bool:
        if column not in self.columns or (scenario, difference.index) != (self.scenario, self.step):
            return False
        mine = (_freeze(self.real), _freeze(self.fake))
        if self.field == difference.field:
            return bool(mine == (_freeze(difference.real), _freeze(difference.fake)))
        if self.field != "step" or difference.real_step is None or difference.fake_step is None:
            return False
        return bool(mine == ((spell(difference.real_step),), (spell(difference.fake_step),)))


@dataclass(frozen=True)
class Race:
    """The outcomes a side may show from ``step`` on (see the module docs)."""

    column: str | tuple[str, ...]
    scenario: str
    step: int
    outcomes: tuple[tuple[str, ...], ...]
    reason: str

    @property
    def kind(self) -> str:
        return self.reason.split(":")[0]

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,) if isinstance(self.column, str) else self.column

    def outcome(self, steps: Sequence[Step]) -> int | None:
        """The index of the longest outcome ``steps`` show from ``step`` on, or ``None``."""
        spelt = tuple(spell(s) for s in steps[self.step :])
        fits = [(len(o), n) for n, o in enumerate(self.outcomes) if spelt[: len(o)] == o]
        return max(fits)[1] if fits else None


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _problem(entry: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    missing = [
        k for k in keys if k not in entry or entry[k] == "" or (k == "outcomes" and not entry[k])
    ]
    if missing:
        return f"needs a non-empty {', '.join(missing)}"
    extra = sorted(set(entry) - set(keys))
    if extra:
        return f"has unknown key(s) {extra}"
    column = entry["column"]
    if isinstance(column, list) and all(_text(c) for c in column):
        entry["column"] = tuple(column)
    elif not _text(column):
        return "needs a column that is a text or a list of texts"
    if not _text(entry["scenario"]) or not _text(entry["reason"]):
        return "needs scenario and reason as texts"
    if not isinstance(entry["step"], int) or isinstance(entry["step"], bool) or entry["step"] < 0:
        return "needs a step that is a whole number, 0 or more"
    if entry["reason"].split(":")[0] not in KINDS:
        return f"needs a reason starting with one of {', '.join(k + ':' for k in KINDS)}"
    return None


def _allowed(entry: dict[str, Any]) -> str | Allowed:
    problem = _problem(entry, _ALLOWED)
    if problem:
        return problem
    if entry["field"] in ("step", "rest") and not all(
        isinstance(side, list) and all(_text(s) for s in side)
        for side in (entry["real"], entry["fake"])
    ):
        return f"with field = {entry['field']!r} needs real and fake as lists of steps spelt out"
    return Allowed(*(entry[k] for k in _ALLOWED))


def _race(entry: dict[str, Any]) -> str | Race:
    problem = _problem(entry, _RACE)
    if problem:
        return problem
    outcomes = entry["outcomes"]
    if not all(isinstance(o, list) and all(_text(s) for s in o) for o in outcomes):
        return "needs outcomes as a list of lists of steps spelt out"
    if len(outcomes) < 2 or len({tuple(o) for o in outcomes}) != len(outcomes):
        return "needs at least two different outcomes (one outcome is no race)"
    frozen = tuple(tuple(o) for o in outcomes)
    return Race(entry["column"], entry["scenario"], entry["step"], frozen, entry["reason"])


def load_allowlist(path: str | Path = ALLOWLIST) -> list[Allowed | Race]:
    """The entries of the allowlist at ``path``: differences, then races."""
    where = Path(path)
    try:
        data = tomllib.loads(where.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{where}: cannot read the drift allowlist: {error}") from error
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"{where}: not valid TOML: {error}") from error
    unknown = sorted(set(data) - {"allowed", "race"})
    if unknown:
        raise UsageError(f"{where}: unknown table(s) {unknown} (only [[allowed]] and [[race]])")
    found: list[Allowed | Race] = []
    for table, make in (("allowed", _allowed), ("race", _race)):
        entries = data.get(table, [])
        if not isinstance(entries, list):
            raise UsageError(f"{where}: '{table}' must be an array of tables ([[{table}]])")
        for number, entry in enumerate(entries, 1):
            made = make(entry) if isinstance(entry, dict) else "is not a table"
            if isinstance(made, str):
                raise UsageError(f"{where}: {table} entry {number} {made}")
            found.append(made)
    return found
