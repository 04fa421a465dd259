"""The README's examples run as written."""

from __future__ import annotations

from pathlib import Path

import pytest
from readme import README, first_example, script_file_example


def test_the_30_second_example_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_example=first_example())
    result = pytester.runpytest("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
    # each async test runs on asyncio and trio (anyio's default parametrization)
    result.assert_outcomes(passed=4)


def test_the_script_file_example_loads(tmp_path: Path) -> None:
    from stuntset.script import load_script

    path = tmp_path / "weather.toml"
    path.write_text(script_file_example())
    script = load_script(path)
    assert script.name == "weather"
    assert len(script.turns) == 2


def test_the_two_commands_are_on_the_first_screen() -> None:
    first_screen = README.read_text().splitlines()[:24]
    commands = [line.split("#")[0].strip() for line in first_screen if line.startswith("make ")]
    assert commands == ["make demo", "make test"]
