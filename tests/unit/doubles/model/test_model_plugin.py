"""The ``stand_in`` fixture and marker, driven through pytester: configuration, teardown
verification and its messages."""

from __future__ import annotations

import pytest

# imported here so that pytester's in-process runs share these modules with this process
import stuntset.doubles.model._pytest  # noqa: F401

HEADER = """
import httpx2, pytest
from stuntset.script import Script, Text

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

def ask(stand_in, loopback=False):
    if loopback:
        return httpx2.post(stand_in.url("openai") + "/chat/completions", json=BODY)
    client = httpx2.Client(transport=stand_in.transport())
    return client.post("http://x/v1/chat/completions", json=BODY)
"""


def test_marker_scenario_transport_and_loopback(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
@pytest.mark.stand_in("multi_turn", turns=2)
def test_both_ways(stand_in):
    assert ask(stand_in).json()["choices"][0]["message"]["content"] == "Answer number 1."
    assert ask(stand_in, loopback=True).json()["choices"][0]["message"]["content"] == "Answer number 2."
    assert [r.path for r in stand_in.requests] == ["/v1/chat/completions", "/openai/v1/chat/completions"]

def test_play(stand_in):
    stand_in.play(Script.of([Text("played")]))
    assert ask(stand_in, loopback=True).json()["choices"][0]["message"]["content"] == "played"
"""
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)


def test_unused_turns_fail_at_teardown_with_the_opt_out_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
@pytest.mark.stand_in("multi_turn")
def test_leaves_turns(stand_in):
    ask(stand_in)

@pytest.mark.stand_in("multi_turn", allow_unused_turns=True)
def test_allowed(stand_in):
    ask(stand_in)
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*UnusedTurns: script 'multi_turn': 2 scripted turn(s) were never requested*",
            "*turn 1: [[]text, usage[]]*",
            "*pass allow_unused_turns=True*",
        ]
    )


def test_an_unanswered_request_fails_at_teardown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
def test_no_script(stand_in):
    assert ask(stand_in).status_code == 500
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*ScriptExhausted: 1 request(s) reached the model double*"])


def test_bad_marker_options_are_usage_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        HEADER
        + """
@pytest.mark.stand_in(allow_unused_turns="yes")
def test_bad(stand_in):
    pass
"""
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*allow_unused_turns must be True/False or a list of turn names*"])
