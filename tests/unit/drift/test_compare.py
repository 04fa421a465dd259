"""Every difference between two normalized streams, aligned on the steps' kinds."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from stuntset.drift.compare import differences, first_difference
from stuntset.drift.normalize import Step, spell

STARTED = {"type": "run.started"}
DONE = {"type": "run.completed", "stop_reason": "end_turn"}


def _text(text: str) -> Step:
    return {"type": "message.delta", "text": text}


def test_the_same_streams_have_no_difference() -> None:
    assert first_difference([STARTED, DONE], [STARTED, DONE]) is None
    assert differences([STARTED, DONE], [STARTED, DONE]) == []


def test_a_field_that_differs_is_named_with_both_values() -> None:
    real = [STARTED, {"type": "tool.completed", "is_error": True}]
    fake = [STARTED, {"type": "tool.completed", "is_error": False}]
    difference = first_difference(real, fake)
    assert difference is not None
    assert (difference.index, difference.field, difference.real, difference.fake) == (
        1,
        "is_error",
        True,
        False,
    )
    assert difference.explain() == "step 1 (tool.completed) is_error: real True, fake False"


def test_every_field_of_every_step_that_differs_is_listed() -> None:
    crash = {"type": "run.crashed", "kind": "http", "retryable": True}
    real = [STARTED, _text("a"), crash]
    fake = [STARTED, _text("b"), {"type": "run.crashed", "kind": "exited", "retryable": False}]
    found = [(d.index, d.field, d.real, d.fake) for d in differences(real, fake)]
    assert found == [
        (1, "text", "a", "b"),
        (2, "kind", "http", "exited"),
        (2, "retryable", True, False),
    ]


def test_steps_of_different_kinds_are_one_whole_step_difference() -> None:
    real = [STARTED, {"type": "run.killed"}]
    fake = [STARTED, _text("Thinking")]
    (difference,) = differences(real, fake)
    assert (difference.index, difference.field) == (1, "step")
    assert (difference.real, difference.fake) == (["run.killed"], ["message.delta text='Thinking'"])
    assert difference.explain() == "step 1: real run.killed; fake message.delta text='Thinking'"


def test_a_step_one_side_lacks_does_not_shift_the_rest_into_differences() -> None:
    tool = {"type": "tool.started", "name": "Bash", "input": {}}
    real = [STARTED, _text("a"), DONE]
    fake = [STARTED, _text("a"), tool, DONE]
    (difference,) = differences(real, fake)
    assert (difference.index, difference.field, difference.real) == (2, "step", [])
    assert difference.fake == [spell(tool)]
    assert difference.explain() == "step 2: real (nothing); fake tool.started name='Bash' input={}"


_STEPS = st.sampled_from(
    [STARTED, DONE, _text("a"), _text("b"), {"type": "run.killed"}, {"type": "usage"}]
)


@given(st.lists(_STEPS, max_size=8), st.lists(_STEPS, max_size=8))
def test_streams_differ_exactly_when_a_difference_is_found(
    real: list[Step], fake: list[Step]
) -> None:
    """Generated pairs: no difference iff the streams are equal; a stream against itself
    with one step dropped shows exactly that one step missing (where a run of equal steps
    makes the place ambiguous, at one of them)."""
    assert (differences(real, fake) == []) == (real == fake)
    if real:
        where = random.Random(len(real)).randrange(len(real))
        dropped = real[:where] + real[where + 1 :]
        (found,) = differences(real, dropped)
        assert (found.field, found.real, found.fake) == ("step", [spell(real[where])], [])
