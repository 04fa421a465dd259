from __future__ import annotations

from collections.abc import Sequence

import pytest

from stuntset import events as ev
from stuntset.contract import RULES, ContractChecker, check_events
from stuntset.errors import ContractViolation, HarnessFailure

R = "run-1"


def started(**kw: object) -> ev.RunStarted:
    return ev.RunStarted(run_id=R, ts=0.0, session_id="s", provider="p", **kw)  # type: ignore[arg-type]


def delta(text: str = "x", **kw: object) -> ev.MessageDelta:
    return ev.MessageDelta(run_id=R, ts=0.0, item_id="m", text=text, **kw)  # type: ignore[arg-type]


def tool_start(call: str = "t1") -> ev.ToolStarted:
    return ev.ToolStarted(run_id=R, ts=0.0, tool_call_id=call, name="ls")


def tool_done(call: str = "t1") -> ev.ToolCompleted:
    return ev.ToolCompleted(run_id=R, ts=0.0, tool_call_id=call, output="ok")


def approval(req: str = "a1") -> ev.ApprovalRequested:
    return ev.ApprovalRequested(run_id=R, ts=0.0, request_id=req, tool="ls")


def approved(req: str = "a1") -> ev.ApprovalResolved:
    return ev.ApprovalResolved(run_id=R, ts=0.0, request_id=req, decision="allow")


def asked(req: str = "i1") -> ev.InputRequested:
    return ev.InputRequested(run_id=R, ts=0.0, request_id=req, prompt="?")


def answered(req: str = "i1") -> ev.InputResolved:
    return ev.InputResolved(run_id=R, ts=0.0, request_id=req, text="yes")


def completed(**kw: object) -> ev.RunCompleted:
    return ev.RunCompleted(run_id=R, ts=0.0, **kw)  # type: ignore[arg-type]


def crashed() -> ev.RunCrashed:
    return ev.RunCrashed(run_id=R, ts=0.0, kind="protocol", message="cut")


def killed() -> ev.RunKilled:
    return ev.RunKilled(run_id=R, ts=0.0)


def violation(events: Sequence[ev.Event]) -> ContractViolation:
    with pytest.raises(ContractViolation) as info:
        check_events(events)
    return info.value


def test_a_well_formed_stream_passes() -> None:
    stream = [
        started(), delta(), tool_start(), approval(), approved(), tool_done(), asked(),
        answered(), ev.Usage(run_id=R, ts=0.0, input_tokens=1, output_tokens=1), completed(),
    ]  # fmt: skip
    assert check_events(stream) == stream


@pytest.mark.parametrize(
    ("stream", "rule", "index", "words"),
    [
        pytest.param(
            [delta(), completed()],
            "run-started-first",
            0,
            "first event must be run.started",
            id="not-first",
        ),
        pytest.param(
            [started(), started(), completed()], "run-started-first", 1, "second time", id="twice"
        ),
        pytest.param([], "run-started-first", None, "empty", id="empty"),
        pytest.param(
            [started(), ev.MessageDelta(run_id="run-2", ts=0, item_id="m", text="x"), completed()],
            "same-run",
            1,
            "'run-2'",
            id="other-run",
        ),
        pytest.param(
            [started(), delta()], "one-terminal", None, "without run.completed", id="no-terminal"
        ),
        pytest.param(
            [started(), completed(), delta()],
            "one-terminal",
            2,
            "nothing may follow",
            id="after-terminal",
        ),
        pytest.param(
            [started(), crashed(), killed()],
            "one-terminal",
            2,
            "nothing may follow",
            id="two-terminals",
        ),
        pytest.param(
            [started(), tool_done("t9"), completed()],
            "tool-answers-start",
            1,
            "'t9'",
            id="tool-unstarted",
        ),
        pytest.param(
            [started(), tool_start(), tool_start(), tool_done(), completed()],
            "tool-answers-start",
            2,
            "already open",
            id="tool-twice",
        ),
        pytest.param(
            [started(), tool_start(), tool_done(), tool_done(), completed()],
            "tool-answers-start",
            3,
            "no open tool.started",
            id="tool-done-twice",
        ),
        pytest.param(
            [started(), approved("a9"), completed()],
            "resolution-answers-request",
            1,
            "approval.requested",
            id="approval-unasked",
        ),
        pytest.param(
            [started(), answered("i9"), completed()],
            "resolution-answers-request",
            1,
            "input.requested",
            id="input-unasked",
        ),
        pytest.param(
            [started(), asked("x"), approved("x"), completed()],
            "resolution-answers-request",
            2,
            "approval.requested",
            id="wrong-kind",
        ),
        pytest.param(
            [started(), approval("x"), asked("x"), completed()],
            "resolution-answers-request",
            2,
            "already open",
            id="request-twice",
        ),
        pytest.param(
            [started(), tool_start(), completed()],
            "completed-closes-everything",
            2,
            "tool call 't1'",
            id="open-tool",
        ),
        pytest.param(
            [started(), approval(), completed()],
            "completed-closes-everything",
            2,
            "request 'a1'",
            id="open-request",
        ),
        pytest.param(
            [started(seq=1), delta(seq=3), completed(seq=4)],
            "seq-gapless",
            1,
            "expected 2",
            id="seq-gap",
        ),
        pytest.param(
            [started(seq=5), delta(seq=5), completed(seq=6)],
            "seq-gapless",
            1,
            "expected 6",
            id="seq-repeat",
        ),
        pytest.param(
            [started(seq=1), delta(), completed(seq=2)],
            "seq-gapless",
            1,
            "every event or on none",
            id="seq-missing",
        ),
    ],
)
def test_each_rule_rejects_its_violation(
    stream: list[ev.Event], rule: str, index: int | None, words: str
) -> None:
    error = violation(stream)
    assert error.rule == rule
    assert error.index == index
    assert rule in str(error)
    assert words in str(error)
    assert isinstance(error, HarnessFailure)
    assert isinstance(error, AssertionError)


def test_every_rule_is_covered_above() -> None:
    assert set(RULES) == {
        "run-started-first", "same-run", "one-terminal", "tool-answers-start",
        "resolution-answers-request", "completed-closes-everything", "seq-gapless",
    }  # fmt: skip


def test_message_names_index_event_and_rule() -> None:
    error = violation([started(), tool_done("t9"), completed()])
    assert str(error).startswith("event #1 tool.completed breaks rule 'tool-answers-start'")
    assert '"tool_call_id":"t9"' in str(error)


def test_crash_and_kill_may_leave_things_open() -> None:
    check_events([started(), tool_start(), approval(), crashed()])
    check_events([started(), asked(), killed()])


def test_seq_may_start_anywhere_and_must_then_be_gapless() -> None:
    check_events([started(seq=41), delta(seq=42), completed(seq=43)])


def test_incremental_feeding_fails_at_the_offending_event() -> None:
    checker = ContractChecker()
    checker.feed(started())
    checker.feed(delta())
    assert checker.terminal is None
    with pytest.raises(ContractViolation, match="#2"):
        checker.feed(tool_done())
    checker = ContractChecker()
    checker.feed(started())
    checker.feed(killed())
    checker.finish()
    assert isinstance(checker.terminal, ev.RunKilled)
    assert len(checker.events) == 2
