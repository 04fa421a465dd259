"""The Rich rendering of ``stuntset`` commands shows names from files as written: a script
name, turn name or match string that looks like Rich markup is text, never markup."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from stuntset.cli import main


def test_markup_in_a_script_is_shown_as_written(tmp_path: Path) -> None:
    script = tmp_path / "markup.toml"
    script.write_text(
        'name = "[/x] [bold]loud"\n[[turns]]\nname = "[red]"\nmatch = { contains = "[/]" }\n'
        'steps = [{ text = "hi", chunks = 2 }]\n'
    )
    result = CliRunner().invoke(main, ["script", "check", str(script)])
    assert result.exit_code == 0, result.output
    assert "[/x] [bold]loud: 1 turn(s)" in result.output
    assert "0 [red]" in result.output
    assert "contains='[/]'" in result.output
