"""The ``stand_in`` fixture and marker, driven through pytester (one inner run, to keep it
fast): configuration, teardown verification and its messages."""

from __future__ import annotations

import pytest

# imported here so that pytester's in-process run shares these modules with this process
import stuntset.doubles.model._pytest  # noqa: F401

TESTS = """
import httpx2, pytest
from stuntset.script import Script, Text

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

def ask(stand_in, loopback=False):
    if loopback:
        return httpx2.post(stand_in.url("openai") + "/chat/completions", json=BODY)
    client = httpx2.Client(transport=stand_in.transport())
    return client.post("http://x/v1/chat/completions", json=BODY)

@pytest.mark.stand_in("multi_turn", turns=2)
def test_both_ways(stand_in):
    assert ask(stand_in).json()["choices"][0]["message"]["content"] == "Answer number 1."
    reply = ask(stand_in, loopback=True).json()
    assert reply["choices"][0]["message"]["content"] == "Answer number 2."
    assert [r.path for r in stand_in.requests] == [
        "/v1/chat/completions", "/v1/chat/completions"
    ]

def test_play(stand_in):
    stand_in.play(Script.of([Text("played")]))
    assert ask(stand_in, loopback=True).json()["choices"][0]["message"]["content"] == "played"

@pytest.mark.stand_in("multi_turn")
def test_leaves_turns(stand_in):
    ask(stand_in)

@pytest.mark.stand_in("multi_turn", allow_unused_turns=True)
def test_allowed(stand_in):
    ask(stand_in)

def test_no_script(stand_in):
    assert ask(stand_in).status_code == 500

@pytest.mark.stand_in(allow_unused_turns="yes")
def test_bad_option(stand_in):
    pass
"""


def test_the_fixture_configures_verifies_and_explains(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=5, errors=3)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaves_turns*",
            "*UnusedTurns: script 'multi_turn': 2 scripted turn(s) were never requested*",
            "*turn 1: [[]text, usage[]]*",
            "*pass allow_unused_turns=True*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_no_script*",
            "*ScriptExhausted: 1 request(s) reached the model double with no turn*",
        ]
    )
    result.stdout.fnmatch_lines(["*allow_unused_turns must be True/False or a list of turn names*"])
