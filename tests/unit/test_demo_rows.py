"""The demo's bottom interface: every section it names loads, and a bad entry says which."""

from __future__ import annotations

import pytest

from stuntset import _demo_rows
from stuntset._demo_rows import SECTIONS, DemoRow, load_section, load_sections


def test_every_section_entry_loads_as_a_function() -> None:
    sections = load_sections()
    assert len(sections) == len(SECTIONS) == 5
    assert [section.__name__ for section in sections] == [
        "model_rows",
        "claude_rows",
        "codex_rows",
        "daemon_rows",
        "cassette_rows",
    ]


def test_an_entry_naming_no_function_is_refused_with_its_name() -> None:
    with pytest.raises(LookupError) as caught:
        load_section("stuntset._demo_rows:nope")
    assert str(caught.value) == (
        "demo section 'stuntset._demo_rows:nope': stuntset._demo_rows has no function 'nope'"
    )


def test_the_demo_collects_the_rows_of_the_sections_it_is_given() -> None:
    from stuntset._demo import DemoRow as TopDemoRow

    assert TopDemoRow is DemoRow  # the demo command re-exports the bottom type
    assert _demo_rows.load_sections(("stuntset._demo:agent_rows",))[0].__name__ == "agent_rows"
