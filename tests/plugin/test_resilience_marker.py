"""The resilience marker and fixture through pytester: a test whose client breaks a rule
fails after its body naming the rule and its evidence; options and the outcome reach it."""

from __future__ import annotations

import pytest

QUIET = ("-p", "no:hypothesispytest", "-p", "no:respx", "-p", "no:cacheprovider")

TESTS = """
import httpx2, pytest
from stuntset.script import RateLimit, Script, StreamCut, Text, Turn

LIMITED = Script.of(Turn(steps=(RateLimit(retry_after=1.0, retry_after_ms=None),)), [Text("ok")])
HI = [{"role": "user", "content": "hi"}]
CUT = Script.of([Text("half an answer"), StreamCut(after_events=2)])

def impatient(stand_in, clock, wait):
    with httpx2.Client(transport=stand_in.transport()) as client:
        for _ in range(2):
            reply = client.post("http://x/v1/chat/completions", json={"model": "m", "messages": HI})
            if reply.status_code < 400:
                return
            clock.advance(wait)

@pytest.mark.resilience
@pytest.mark.stand_in(LIMITED)
def test_impatient(stand_in, stuntset_clock):
    impatient(stand_in, stuntset_clock, 0.01)

@pytest.mark.resilience
@pytest.mark.stand_in(LIMITED)
def test_patient(stand_in, stuntset_clock):
    impatient(stand_in, stuntset_clock, 1.0)

@pytest.mark.resilience(ignore=["retry_after_ignored"])
@pytest.mark.stand_in(LIMITED)
def test_impatient_but_ignored(stand_in, stuntset_clock):
    impatient(stand_in, stuntset_clock, 0.01)

@pytest.mark.stand_in(CUT)
def test_cut_taken_as_complete(stand_in, resilience):
    with httpx2.Client(transport=stand_in.transport()) as client:
        body = {"model": "m", "messages": HI, "stream": True}
        with client.stream("POST", "http://x/v1/chat/completions", json=body) as reply:
            try:
                reply.read()
            except httpx2.RemoteProtocolError:
                pass
    resilience.outcome = "completed"

@pytest.mark.resilience("oops")
def test_misused():
    pass
"""


def test_the_marker_and_fixture_fail_a_test_whose_client_broke_a_rule(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(TESTS)
    result = pytester.runpytest(*QUIET)
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*ResilienceFailure: the client broke 1 resilience rule(s):*",
            "*retry_after_ignored: retried 0.01 s after a 429, Retry-After asked 1.00 s "
            "(request #0, retried as #1)*",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*cut_stream_swallowed: request #0's stream was cut after 2 event(s)*"]
    )
    result.stdout.fnmatch_lines(["*resilience takes only the keyword options*'oops'*"])
    failed = {r.head_line for r in result.reprec.getreports("pytest_runtest_logreport") if r.failed}  # type: ignore[attr-defined]
    assert failed == {"test_impatient", "test_cut_taken_as_complete", "test_misused"}
