"""The committed allowlist and its loader: structural entries and races, never text search."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stuntset import scenarios
from stuntset.drift.allowlist import KINDS, Allowed, Race, load_allowlist
from stuntset.drift.compare import differences
from stuntset.drift.runners import CLIS
from stuntset.errors import UsageError

CRASH = {"type": "run.crashed", "kind": "http", "retryable": True}
EXITED = {"type": "run.crashed", "kind": "exited", "retryable": False}
STARTED = {"type": "run.started"}
TEXT = {"type": "message.delta", "text": "a"}


def test_every_committed_entry_names_a_scenario_columns_and_a_kind_of_reason() -> None:
    entries = load_allowlist()
    assert entries
    for entry in entries:
        scenarios.get(entry.scenario)
        assert set(entry.columns) <= set(CLIS), entry
        assert entry.kind in KINDS, entry
    assert not any("catalog" in e.reason and "read_file" in e.reason for e in entries), (
        "the tool scenarios are played with the binaries' own tools"
    )


def test_an_entry_covers_its_exact_difference_only() -> None:
    entry = Allowed("codex", "stream_cut", 2, "kind", "http", "exited", "fake gap: x")
    (kind, retryable) = differences([STARTED, TEXT, CRASH], [STARTED, TEXT, EXITED])
    assert entry.covers("codex", "stream_cut", kind)
    assert not entry.covers("codex", "stream_cut", retryable)  # another field
    assert not entry.covers("claude", "stream_cut", kind)  # another column
    assert not entry.covers("codex", "stuck", kind)  # another scenario
    moved = differences([STARTED, CRASH], [STARTED, EXITED])[0]
    assert not entry.covers("codex", "stream_cut", moved)  # another step
    other = differences([STARTED, TEXT, CRASH], [STARTED, TEXT, {**EXITED, "kind": "protocol"}])[0]
    assert not entry.covers("codex", "stream_cut", other)  # another fake value


def test_a_whole_step_entry_covers_every_field_of_that_step_pair_and_lists_of_columns() -> None:
    real, fake = (
        ["run.crashed kind='http' retryable=True"],
        ["run.crashed kind='exited' retryable=False"],
    )
    entry = Allowed(("codex", "codex-exec"), "stream_cut", 1, "step", real, fake, "fake gap: x")
    found = differences([STARTED, CRASH], [STARTED, EXITED])
    assert len(found) == 2
    assert all(entry.covers(column, "stream_cut", d) for d in found for column in entry.columns)
    assert not entry.covers("claude", "stream_cut", found[0])
    protocol = differences([STARTED, CRASH], [STARTED, {**EXITED, "kind": "protocol"}])
    assert not entry.covers("codex", "stream_cut", protocol[0])


def test_a_rest_entry_needs_both_tails_exactly() -> None:
    entry = Allowed(
        "claude", "input_request", 1, "rest", ["run.completed"], ["run.killed"], "catalog: x"
    )
    assert entry.rest([STARTED, {"type": "run.completed"}], [STARTED, {"type": "run.killed"}])
    assert not entry.rest([STARTED, {"type": "run.completed"}], [STARTED, {"type": "usage"}])
    longer = [STARTED, {"type": "run.killed"}, {"type": "usage"}]
    assert not entry.rest([STARTED, {"type": "run.completed"}], longer)


def test_a_race_knows_its_outcomes_only() -> None:
    race = Race(
        "codex", "stuck", 1, (("run.killed",), ("message.delta text='T'", "run.killed")), "race: x"
    )
    assert race.outcome([STARTED, {"type": "run.killed"}]) == 0
    assert race.outcome([STARTED, {"type": "message.delta", "text": "T"}, {"type": "run.killed"}])
    assert race.outcome([STARTED, {"type": "run.completed"}]) is None  # not a known outcome
    assert race.outcome([STARTED]) is None


def _load(tmp_path: Path, text: str) -> list[Allowed | Race]:
    path = tmp_path / "allowlist.toml"
    path.write_text(text)
    return load_allowlist(path)


_ENTRY = "[[allowed]]\ncolumn='codex'\nscenario='a'\nstep=1\nfield='kind'\nreal='x'\nfake='y'\n"


def test_entries_and_races_load(tmp_path: Path) -> None:
    race = (
        "[[race]]\ncolumn=['claude','codex']\nscenario='b'\nstep=2\n"
        "outcomes=[['run.killed'], ['x', 'run.killed']]\nreason='race: r'\n"
    )
    entry, loaded = _load(tmp_path, _ENTRY + "reason='fake gap: g'\n" + race)
    assert entry == Allowed("codex", "a", 1, "kind", "x", "y", "fake gap: g")
    assert loaded == Race(
        ("claude", "codex"), "b", 2, (("run.killed",), ("x", "run.killed")), "race: r"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[allowed]]\nscenario = 'x'\n", "allowed entry 1 needs a non-empty column, step, field"),
        ("allowed = 3\n", "'allowed' must be an array of tables"),
        ("allowed = [3]\n", "allowed entry 1 is not a table"),
        (_ENTRY + "reason='race: x'\nwhy='e'\n", "allowed entry 1 has unknown key(s) ['why']"),
        ("[[allowed]\n", "not valid TOML"),
        ("[[allow]]\nx=1\n", "unknown table(s) ['allow']"),
        (_ENTRY + "reason='because'\n", "needs a reason starting with one of layer:"),
        (_ENTRY.replace("step=1", "step=-1") + "reason='race: x'\n", "needs a step"),
        (_ENTRY.replace("step=1", "step='1'") + "reason='race: x'\n", "needs a step"),
        (_ENTRY.replace("column='codex'", "column=[3]") + "reason='race: x'\n", "a column"),
        (
            _ENTRY.replace("field='kind'", "field='step'") + "reason='race: x'\n",
            "with field = 'step' needs real and fake as lists",
        ),
        (
            "[[race]]\ncolumn='c'\nscenario='s'\nstep=1\noutcomes=[['a']]\nreason='race: x'\n",
            "race entry 1 needs at least two different outcomes",
        ),
        (
            "[[race]]\ncolumn='c'\nscenario='s'\nstep=1\noutcomes=['a', 'b']\nreason='race: x'\n",
            "race entry 1 needs outcomes as a list of lists",
        ),
        (
            "[[race]]\ncolumn='c'\nscenario='s'\nstep=1\noutcomes=[]\nreason='race: x'\n",
            "race entry 1 needs a non-empty outcomes",
        ),
    ],
)
def test_a_malformed_allowlist_is_refused_naming_the_entry(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        _load(tmp_path, text)


def test_a_missing_allowlist_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read the drift allowlist"):
        load_allowlist(tmp_path / "nope.toml")
