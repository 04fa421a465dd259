"""The resilience rules, each over a client that breaks it and one that does not (hand-rolled
clients waiting on the FakeClock: the times in the messages are exact)."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from _retry_clients import RetryClient

from stuntset.checks.resilience import RULES, check_resilience, resilience_verdicts
from stuntset.clock import FakeClock
from stuntset.errors import ResilienceFailure, UsageError
from stuntset.script import HttpError, RateLimit, Script, Stall, StreamCut, Text, Turn


def rules(*doubles: Any, **options: Any) -> list[str]:
    return [v.rule for v in resilience_verdicts(*doubles, **options)]


def messages(*doubles: Any, **options: Any) -> list[str]:
    return [str(v) for v in resilience_verdicts(*doubles, **options)]


def fails_then_answers(fault: Any, times: int = 1) -> Script:
    return Script.of(Turn(steps=(fault,), times=times), [Text("done")])


def real_gap(message: str, expected: str) -> float:
    """The gap ``message`` measured where ``expected`` has ``{gap}``, after checking the rest
    of it word for word. A client that did not wait on the test's clock is timed in real time
    (the module's docs), which a loaded machine can stretch past ``0.00 s``."""
    before, _, after = expected.partition("{gap}")
    found = re.fullmatch(re.escape(before) + r"(\d+\.\d\d)" + re.escape(after), message)
    assert found is not None, f"{message!r} is not {expected!r}"
    return float(found.group(1))


# --- retry_after_ignored -------------------------------------------------------------------


def test_a_retry_sooner_than_retry_after_is_flagged(
    stand_in: Any, stuntset_clock: FakeClock
) -> None:
    stand_in.play(fails_then_answers(RateLimit(retry_after=1.0, retry_after_ms=None)))
    RetryClient(stand_in.transport(), stuntset_clock, wait=lambda r, n: 0.01).call()
    assert messages(stand_in) == [
        "retry_after_ignored: retried 0.01 s after a 429, Retry-After asked 1.00 s "
        "(request #0, retried as #1)"
    ]
    with pytest.raises(ResilienceFailure, match="ignore=\\['retry_after_ignored'\\]") as caught:
        check_resilience(stand_in)
    assert [v.rule for v in caught.value.verdicts] == ["retry_after_ignored"]


def test_retry_after_ms_is_read_too_and_waiting_it_passes(
    stand_in: Any, stuntset_clock: FakeClock
) -> None:
    stand_in.play(fails_then_answers(RateLimit(retry_after_ms=250)))
    RetryClient(stand_in.transport(), stuntset_clock, wait=lambda r, n: 0.0).call()
    (message,) = messages(stand_in)
    expected = (
        "retry_after_ignored: retried {gap} s after a 429, retry-after-ms asked 250 ms "
        "(request #0, retried as #1)"
    )
    assert real_gap(message, expected) < 0.25
    stand_in.play(fails_then_answers(RateLimit(retry_after_ms=250)))
    stand_in.double.journal.clear()
    RetryClient(stand_in.transport(), stuntset_clock).call()
    check_resilience(stand_in)


# --- no_backoff ----------------------------------------------------------------------------


def test_an_immediate_retry_after_a_500_is_no_backoff(
    stand_in: Any, stuntset_clock: FakeClock
) -> None:
    stand_in.play(fails_then_answers(HttpError(status=500)))
    RetryClient(stand_in.transport(), stuntset_clock, wait=lambda r, n: 0.0).call()
    # the client did not wait on the test's clock: 0.00 s on a quiet machine, 0.01 s seen
    # under load (a fresh-clone CI run with a busy loop); the verdict is the same
    (message,) = messages(stand_in)
    expected = (
        "no_backoff: retried {gap} s after a 500 with no Retry-After (request #0, retried as "
        "#1); at least 0.10 s expected (min_backoff=)"
    )
    assert real_gap(message, expected) < 0.10


def test_a_constant_delay_is_no_backoff_and_a_doubling_one_passes(
    stand_in: Any, stuntset_clock: FakeClock
) -> None:
    stand_in.play(fails_then_answers(HttpError(status=503), times=3))
    RetryClient(stand_in.transport(), stuntset_clock, attempts=4, wait=lambda r, n: 0.2).call()
    assert messages(stand_in) == [
        "no_backoff: request #0's 3 retries waited 0.20 s, 0.20 s, 0.20 s: the delay never grew"
    ]
    stand_in.double.journal.clear()
    stand_in.play(fails_then_answers(HttpError(status=503), times=3))
    RetryClient(stand_in.transport(), stuntset_clock, attempts=4).call()
    assert rules(stand_in) == []


# --- retry_storm ---------------------------------------------------------------------------


def test_more_attempts_than_max_attempts_is_a_storm(
    stand_in: Any, stuntset_clock: FakeClock
) -> None:
    stand_in.play(fails_then_answers(RateLimit(), times=6))
    RetryClient(stand_in.transport(), stuntset_clock, attempts=7).call()
    assert messages(stand_in) == [
        "retry_storm: request #0 was sent 7 times (#0..#6) in 0.01 s; at most 5 attempts "
        "expected (max_attempts=)"
    ]
    assert rules(stand_in, max_attempts=7) == []


def test_three_attempts_are_not_a_storm(stand_in: Any, stuntset_clock: FakeClock) -> None:
    stand_in.play(fails_then_answers(RateLimit(), times=2))
    RetryClient(stand_in.transport(), stuntset_clock).call()
    check_resilience(stand_in)


# --- non_retryable_retried -----------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404])
def test_the_same_request_after_a_client_error_is_flagged(
    stand_in: Any, stuntset_clock: FakeClock, status: int
) -> None:
    stand_in.play(fails_then_answers(HttpError(status=status)))
    RetryClient(stand_in.transport(), stuntset_clock, retry_on={status}).call()
    assert messages(stand_in) == [
        f"non_retryable_retried: request #1 sent #0 again 0.50 s after a {status} (a client "
        f"error that repeats); fix the request instead of retrying it"
    ]


def test_a_client_that_gives_up_on_a_401_passes(stand_in: Any, stuntset_clock: FakeClock) -> None:
    stand_in.play(Script.of([HttpError(status=401)]))
    client = RetryClient(stand_in.transport(), stuntset_clock)
    client.call()
    assert client.outcome == "error"
    check_resilience(stand_in, outcome="error")


# --- changed_body_on_retry -----------------------------------------------------------------


def test_a_retry_with_another_body_is_flagged(stand_in: Any, stuntset_clock: FakeClock) -> None:
    stand_in.play(fails_then_answers(RateLimit()))
    RetryClient(stand_in.transport(), stuntset_clock, change_body=True).call()
    assert messages(stand_in) == [
        "changed_body_on_retry: request #1 retried #0 (after a 429) with a different body: "
        "max_tokens: null -> 99"
    ]


# --- stalled_stream_held -------------------------------------------------------------------


def test_a_read_timeout_past_the_bound_is_flagged_and_one_within_passes(
    stand_in: Any, stuntset_clock: FakeClock
) -> None:
    stand_in.play(Script.of([Text("partial"), Stall()], [Text("done")]))
    RetryClient(stand_in.transport(), stuntset_clock, stream=True, read_timeout=1200).call()
    assert messages(stand_in) == [
        "stalled_stream_held: request #0's stalled reply was held 1200.00 s (read timeout), "
        "bound 600.00 s (stall_bound=)"
    ]
    assert rules(stand_in, stall_bound=1200) == []
    assert rules(stand_in, stall_bound=30) == ["stalled_stream_held"]


def test_no_read_timeout_is_held_until_the_double_closes(
    stand_in: Any, stuntset_clock: FakeClock
) -> None:
    from stuntset.waiting import wait_for

    stand_in.play(Script.of([Text("partial"), Stall()]))
    client = RetryClient(
        stand_in.transport(), stuntset_clock, stream=True, read_timeout=None, attempts=1
    )
    worker = threading.Thread(target=client.call)
    worker.start()
    wait_for(lambda: len(stand_in.requests) == 1, timeout=10)
    stand_in.double.closing.set()  # what the deadline does to a test stuck in a stall
    worker.join(10)
    assert rules(stand_in) == ["stalled_stream_held"]
    assert "held until the double closed: the client has no read timeout" in messages(stand_in)[0]


# --- cut_stream_swallowed ------------------------------------------------------------------


def test_a_cut_stream_taken_as_complete_is_flagged_when_the_test_tells(
    stand_in: Any, stuntset_clock: FakeClock
) -> None:
    stand_in.play(Script.of([Text("the answer is forty"), StreamCut(after_events=2)]))
    client = RetryClient(stand_in.transport(), stuntset_clock, stream=True, trust_cut=True)
    client.call()
    assert client.outcome == "completed"
    assert rules(stand_in) == []  # the test did not say what the app reported
    assert messages(stand_in, outcome=client.outcome) == [
        "cut_stream_swallowed: request #0's stream was cut after 2 event(s), it was not "
        "retried, and the app reported a complete answer"
    ]


def test_a_cut_stream_retried_passes(stand_in: Any, stuntset_clock: FakeClock) -> None:
    stand_in.play(Script.of([Text("the answer"), StreamCut(after_events=2)], [Text("42")]))
    client = RetryClient(stand_in.transport(), stuntset_clock, stream=True)
    client.call()
    assert client.outcome == "completed"
    check_resilience(stand_in, outcome=client.outcome)


# --- misuse --------------------------------------------------------------------------------


def test_bad_options_name_themselves(stand_in: Any) -> None:
    with pytest.raises(UsageError, match="unknown rule"):
        check_resilience(stand_in, ignore=["retry_after"])
    with pytest.raises(UsageError, match="max_attempts=0"):
        check_resilience(stand_in, max_attempts=0)
    with pytest.raises(UsageError, match="outcome='done'"):
        check_resilience(stand_in, outcome="done")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="not a double"):
        check_resilience(object())


def test_every_rule_is_named_once() -> None:
    assert len(RULES) == 10
    assert all(name.isidentifier() for name in RULES)


def test_the_catalog_lists_the_rules_each_scenario_exercises() -> None:
    from stuntset import scenarios
    from stuntset.checks.resilience import rules_exercised_by

    assert rules_exercised_by(scenarios.build("happy_path")) == ["left_running"]
    assert rules_exercised_by(scenarios.build("rate_limited")) == [
        "retry_after_ignored",
        "retry_storm",
        "changed_body_on_retry",
        "left_running",
    ]
    assert "non_retryable_retried" in rules_exercised_by(scenarios.build("auth_expired_mid_run"))
    assert rules_exercised_by(scenarios.build("stuck")) == [
        "stalled_stream_held",
        "stuck_cli_not_interrupted",
        "sigkill_without_sigterm",
        "left_running",
    ]
