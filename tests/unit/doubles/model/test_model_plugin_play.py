"""``stand_in.play(script)`` replacing the marker's script does what its docstring and the
README say: old unused turns dropped, journal and URL kept, teardown checks the new script."""

from __future__ import annotations

import pytest

import stuntset.doubles.model._pytest  # noqa: F401 - one module identity with the inner run

TESTS = """
import httpx2, pytest
from stuntset.script import Script, Text

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

def ask(url):
    return httpx2.post(url + "/chat/completions", json=BODY).json()["choices"][0]["message"]

@pytest.mark.stand_in("multi_turn", turns=3)
def test_play_replaces_the_marker_script(stand_in):
    url = stand_in.url("openai")
    assert ask(url)["content"] == "Answer number 1."
    assert stand_in.play(Script.of([Text("played")])).url("openai") == url
    assert ask(url)["content"] == "played"
    assert len(stand_in.requests) == 2

@pytest.mark.stand_in("happy_path")
def test_the_new_script_is_checked_at_teardown(stand_in):
    stand_in.play(Script.of([Text("never asked")]))
"""


def test_play_replaces_the_marker_script(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_the_new_script_is_checked_at_teardown*",
            "*UnusedTurns*1 scripted turn(s) were never requested*",
        ]
    )
