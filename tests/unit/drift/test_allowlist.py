"""The committed allowlist and its loader."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from stuntset import scenarios
from stuntset.drift.allowlist import Allowed, load_allowlist
from stuntset.drift.runners import CLIS
from stuntset.errors import UsageError


def test_every_committed_entry_names_a_scenario_a_cli_and_a_kind_of_reason() -> None:
    entries = load_allowlist()
    assert entries
    for entry in entries:
        scenarios.get(entry.scenario)
        assert entry.cli in CLIS
        assert entry.reason.split(":")[0] in ("layer", "catalog", "fake gap", "race"), entry
    pairs = [(e.scenario, e.cli) for e in entries]
    assert len(pairs) == len(set(pairs)), "one entry per scenario and CLI"


def test_an_entry_covers_its_scenario_cli_and_text_only() -> None:
    entry = Allowed("stuck", "claude", "real run.killed", "race: timing")
    assert entry.covers("stuck", "claude", "step 1: real run.killed; fake x")
    assert not entry.covers("stuck", "codex", "step 1: real run.killed; fake x")
    assert not entry.covers("slow", "claude", "step 1: real run.killed; fake x")
    assert not entry.covers("stuck", "claude", "step 1: real run.completed; fake x")


def test_an_entry_with_alternatives_covers_either_order_only() -> None:
    entry = Allowed("stream_cut", "claude", ("fake message.delta", "kind: real 'http'"), "layer: x")
    assert entry.covers("stream_cut", "claude", "step 1: real run.crashed; fake message.delta")
    assert entry.covers("stream_cut", "claude", "step 3 (run.crashed) kind: real 'http', fake 'x'")
    assert not entry.covers("stream_cut", "claude", "step 2: real message.completed; fake x")


def test_alternatives_load_from_a_list(tmp_path: Path) -> None:
    path = tmp_path / "allowlist.toml"
    path.write_text("[[allowed]]\nscenario='a'\ncli='b'\ndiffers=['c', 'd']\nreason='race: e'\n")
    (entry,) = load_allowlist(path)
    assert entry.texts == ("c", "d")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[allowed]]\nscenario = 'x'\n", "allowed entry 1 needs a non-empty cli, differs, reason"),
        ("allowed = 3\n", "'allowed' must be an array of tables"),
        ("allowed = [3]\n", "allowed entry 1 is not a table"),
        (
            "[[allowed]]\nscenario='a'\ncli='b'\ndiffers='c'\nreason='d'\nwhy='e'\n",
            "allowed entry 1 has unknown key(s) ['why']",
        ),
        ("[[allowed]\n", "not valid TOML"),
        (
            "[[allowed]]\nscenario='a'\ncli='b'\ndiffers=[]\nreason='d'\n",
            "allowed entry 1 needs a non-empty differs",
        ),
        (
            "[[allowed]]\nscenario='a'\ncli='b'\ndiffers=['c', 3]\nreason='d'\n",
            "allowed entry 1 needs a non-empty differs",
        ),
    ],
)
def test_a_malformed_allowlist_is_refused_naming_the_entry(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "allowlist.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=re.escape(message)):
        load_allowlist(path)


def test_a_missing_allowlist_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read the drift allowlist"):
        load_allowlist(tmp_path / "nope.toml")
