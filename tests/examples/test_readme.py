"""The README's examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parents[2] / "README.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_the_30_second_example_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_example=blocks("python")[0])
    result = pytester.runpytest("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
    # each async test runs on asyncio and trio (anyio's default parametrization)
    result.assert_outcomes(passed=4)


def test_the_script_file_example_loads(tmp_path: Path) -> None:
    from stuntset.script import load_script

    path = tmp_path / "weather.toml"
    path.write_text(blocks("toml")[0])
    script = load_script(path)
    assert script.name == "weather"
    assert len(script.turns) == 2


def test_the_two_commands_are_on_the_first_screen() -> None:
    first_screen = README.read_text().splitlines()[:24]
    commands = [line.split("#")[0].strip() for line in first_screen if line.startswith("make ")]
    assert commands == ["make demo", "make test"]
