"""The deadline: it ends a block still running at the deadline with ``DeadlineExceeded`` and
the message built then, by a signal on the main thread or, elsewhere, by unblocking the wait.
Every wait here is on a condition the deadline itself ends (never on elapsed time)."""

from __future__ import annotations

import signal
import threading

import pytest

from stuntset.doubles.model import StandIn
from stuntset.errors import DeadlineExceeded, HarnessFailure, UsageError
from stuntset.explain.deadline import Deadline, deadline_message, parse_seconds
from stuntset.explain.timeline import Timeline
from stuntset.script import Script, Stall, Text


def test_a_blocked_wait_ends_with_the_message() -> None:
    before = signal.getsignal(signal.SIGALRM)
    released = threading.Event()
    deadline = Deadline(0.05, lambda: "what was pending", unblock=released.set)
    with pytest.raises(DeadlineExceeded, match=r"^what was pending$"), deadline:
        released.wait()  # never set by the test: only the deadline ends this
    assert deadline.fired
    assert signal.getsignal(signal.SIGALRM) is before  # (pytest-timeout's, in this suite)


def test_off_the_main_thread_the_watchdog_unblocks_and_the_error_follows() -> None:
    caught: list[BaseException] = []
    released = threading.Event()

    def body() -> None:
        try:
            with Deadline(0.05, lambda: "stalled", unblock=released.set) as deadline:
                released.wait()
            assert not deadline.signalled
        except BaseException as exc:
            caught.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert len(caught) == 1
    assert isinstance(caught[0], DeadlineExceeded)
    assert str(caught[0]) == "stalled"


def test_a_block_that_ends_in_time_is_left_alone() -> None:
    with Deadline(60, lambda: "never") as deadline:
        pass
    assert not deadline.fired
    with Deadline(0, lambda: "off") as off:
        assert not off.armed


def test_a_taken_sigalrm_is_left_to_its_owner() -> None:
    def owner(signum: int, frame: object) -> None:
        raise AssertionError("not ours")

    previous = signal.signal(signal.SIGALRM, owner)
    try:
        released = threading.Event()
        seen: list[object] = []

        def unblock() -> None:
            seen.append(signal.getsignal(signal.SIGALRM))
            released.set()

        with pytest.raises(DeadlineExceeded), Deadline(0.05, lambda: "m", unblock=unblock):
            released.wait()
        assert seen == [owner]  # the watchdog unblocked the wait; the handler stayed the owner's
        assert signal.getsignal(signal.SIGALRM) is owner
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_the_message_names_the_stalled_request_since_when_and_what_it_last_sent() -> None:
    timeline = Timeline()
    with StandIn(Script.of([Text("half an answer"), Stall()])) as double:
        timeline.watch("model", double)
        body = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}'
        double.double.handle("POST", "/v1/chat/completions", "", {}, body)
        message = deadline_message("t.py::test_x", 2.5, timeline)
    assert message.startswith("t.py::test_x: still running at its deadline of 2.5s")
    assert "pending:\n  model since +" in message
    assert "#0 POST /v1/chat/completions" in message
    assert "then stalls" in message
    assert "it last sent: data: " in message
    assert "half an answer" in message


def test_with_nothing_pending_the_message_says_the_code_itself_is_busy() -> None:
    timeline = Timeline()
    assert "no double saw anything yet" in deadline_message("t", 1, timeline)
    with StandIn(Script.of([Text("done")])) as double:
        timeline.watch("model", double)
        body = b'{"model":"m","messages":[{"role":"user","content":"x"}]}'
        double.double.handle("POST", "/v1/chat/completions", "", {}, body)
        message = deadline_message("t", 1, timeline)
    assert "the code under test itself is busy" in message
    assert "#0 POST" in message


def test_deadline_exceeded_is_a_harness_failure() -> None:
    assert issubclass(DeadlineExceeded, HarnessFailure)
    assert issubclass(DeadlineExceeded, AssertionError)


@pytest.mark.parametrize("bad", ["soon", None, True, "nan", [1]])
def test_bad_seconds_are_usage_errors_naming_the_place(bad: object) -> None:
    with pytest.raises(UsageError, match=r"^ini stuntset_deadline: expected a number of seconds"):
        parse_seconds(bad, "ini stuntset_deadline")
    assert parse_seconds("1.5", "x") == 1.5
    assert parse_seconds(0, "x") == 0
