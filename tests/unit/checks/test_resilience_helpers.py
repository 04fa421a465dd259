"""The pieces the resilience rules are made of: how long a reply asked the client to wait
(``retry-after-ms``, ``Retry-After`` in seconds or as an HTTP date, or unreadable), how a
failed attempt is named, and which rules a script exercises."""

from __future__ import annotations

import email.utils

import pytest

from stuntset.checks import resilience
from stuntset.script import AuthExpired, Exit, HttpError, Script, Stall, StreamCut, Text, Turn


@pytest.mark.parametrize(
    ("headers", "wait", "how"),
    [
        ({"retry-after-ms": "250"}, 0.25, "retry-after-ms asked 250 ms"),
        ({"retry-after-ms": "soon", "retry-after": "2"}, 2.0, "Retry-After asked 2.00 s"),
        ({"retry-after": "tomorrow"}, None, ""),
        ({}, None, ""),
    ],
)
def test_what_a_reply_asked_the_client_to_wait(
    headers: dict[str, str], wait: float | None, how: str
) -> None:
    assert resilience._asked(headers, 0.0) == (wait, how)


def test_a_retry_after_date_is_the_time_until_it() -> None:
    date = email.utils.formatdate(1_000_030.0, usegmt=True)
    assert resilience._asked({"retry-after": date}, 1_000_000.0) == (
        30.0,
        "Retry-After asked 30.00 s (an HTTP date)",
    )
    # a date already past asks for no wait
    assert resilience._asked({"retry-after": date}, 1_000_100.0)[0] == 0.0


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        ("status", "a 503"),
        ("no response", "no response"),
        ("stall", "a stalled stream"),
        ("cut", "a stream cut after 3 event(s)"),
    ],
)
def test_a_failed_attempt_is_named_by_how_it_failed(failure: str, said: str) -> None:
    attempt = resilience._Attempt(
        index=0, real=0.0, clock=0.0, method="POST", path="/v1/x", body=None, reply=None,
        status=503,
        failure=failure, frames=3,
    )  # fmt: skip
    assert resilience._what(attempt) == said


def test_the_rules_a_script_exercises() -> None:
    def rules(*steps: object, times: int = 1) -> list[str]:
        turn = Turn(steps=tuple(steps), times=times)  # type: ignore[arg-type]
        return resilience.rules_exercised_by(Script(turns=(turn,)))

    assert "non_retryable_retried" in rules(AuthExpired())
    assert "non_retryable_retried" in rules(HttpError(404))
    assert "retry_after_ignored" in rules(HttpError(503, retry_after=1.0))
    assert "no_backoff" in rules(HttpError(500))
    assert "no_backoff" in rules(Exit(reset=True))
    assert "no_backoff" not in rules(Exit())
    assert "retry_storm" in rules(StreamCut(after_events=1), times=3)
    assert "retry_storm" not in rules(StreamCut(after_events=1))
    assert "sigkill_without_sigterm" in rules(Stall())
    assert rules(Text("fine")) == ["left_running"]
