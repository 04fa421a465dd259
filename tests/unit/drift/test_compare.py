"""The first difference between two normalized streams, explained."""

from __future__ import annotations

from stuntset.drift.compare import first_difference

STARTED = {"type": "run.started"}
DONE = {"type": "run.completed", "stop_reason": "end_turn"}


def test_the_same_streams_have_no_difference() -> None:
    assert first_difference([STARTED, DONE], [STARTED, DONE]) is None


def test_a_field_that_differs_is_named_with_both_values() -> None:
    real = [STARTED, {"type": "tool.completed", "is_error": True}]
    fake = [STARTED, {"type": "tool.completed", "is_error": False}]
    difference = first_difference(real, fake)
    assert difference is not None
    assert (difference.index, difference.field) == (1, "is_error")
    assert difference.explain() == "step 1 (tool.completed) is_error: real True, fake False"


def test_steps_of_different_kinds_are_shown_whole() -> None:
    real = [STARTED, {"type": "run.killed"}]
    fake = [STARTED, {"type": "message.delta", "text": "Thinking"}]
    difference = first_difference(real, fake)
    assert difference is not None
    assert difference.explain() == "step 1: real run.killed; fake message.delta text='Thinking'"


def test_a_stream_that_ends_early() -> None:
    difference = first_difference([STARTED], [STARTED, DONE])
    assert difference is not None
    assert difference.field == "length"
    assert difference.explain() == (
        "step 1: real (nothing); fake run.completed stop_reason='end_turn'"
    )
