"""The setup the matrix and drift share: columns and scenarios checked before anything
plays, and a working folder removed afterwards unless given."""

from __future__ import annotations

from pathlib import Path

import pytest

from stuntset import scenarios
from stuntset.checks._grid import columns, scenario_names, work_root
from stuntset.errors import UnknownScenario, UsageError


def test_columns_default_to_all_and_name_the_unknown() -> None:
    assert columns(None, ("a", "b"), "CLI") == ["a", "b"]
    assert columns(["b"], ("a", "b"), "CLI") == ["b"]
    with pytest.raises(UsageError, match=r"unknown CLI\(s\) \['c'\]; known: a, b"):
        columns(["b", "c"], ("a", "b"), "CLI")


def test_scenarios_default_to_the_catalog_and_must_exist() -> None:
    assert scenario_names(None) == scenarios.names()
    with pytest.raises(UnknownScenario, match="nope"):
        scenario_names(["happy_path", "nope"])


def test_the_work_root_is_removed_unless_given(tmp_path: Path) -> None:
    with work_root(None, "stuntset-grid-") as root:
        (root / "x").write_text("x")
    assert not root.exists()
    with work_root(tmp_path, "unused-") as given:
        (given / "kept").write_text("k")
    assert (tmp_path / "kept").exists()
