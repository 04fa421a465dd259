"""The README's code blocks, for the tests here and for the wheel smoke (tests/wheel/smoke.py),
which runs the same examples against the installed wheel."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).parents[2] / "README.md"


def blocks(language: str, readme: Path = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", readme.read_text(), flags=re.DOTALL)


def first_example(readme: Path = README) -> str:
    """ "A test in 30 seconds": a test module as written."""
    return blocks("python", readme)[0]


def session_log_example(readme: Path = README) -> str:
    """The session log's test module (plugin fixtures and ``check_event_log``)."""
    [example] = [block for block in blocks("python", readme) if "check_event_log" in block]
    return example


def script_file_example(readme: Path = README) -> str:
    """The script file (``weather.toml``) that ``stuntset script check`` validates."""
    return blocks("toml", readme)[0]
