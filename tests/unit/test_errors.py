from __future__ import annotations

import pickle

import pytest

from stuntset import errors


def test_misuse_and_failures_are_split_by_who_is_at_fault() -> None:
    assert issubclass(errors.ScriptError, errors.UsageError)
    assert issubclass(errors.UsageError, ValueError)
    assert issubclass(errors.UnknownScenario, LookupError)
    for failure in (
        errors.ContractViolation,
        errors.ScriptExhausted,
        errors.UnusedTurns,
        errors.WaitTimeout,
        errors.UnstubbedCall,
    ):
        assert issubclass(failure, errors.HarnessFailure)
        assert issubclass(failure, AssertionError)
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.StuntsetError)


def test_script_error_names_the_place() -> None:
    error = errors.ScriptError("bad", source="a.toml", turn=2, step=1, field="text", wire="agent")
    assert str(error) == "a.toml, turn 2, step 1, field 'text', wire 'agent': bad"
    assert (error.turn, error.step, error.field) == (2, 1, "text")
    assert str(errors.ScriptError("plain")) == "plain"


@pytest.mark.parametrize(
    "error",
    [
        errors.ScriptError("bad", source="a.toml", turn=1),
        errors.ContractViolation("broken", rule="one-terminal", index=3),
        errors.UsageError("misuse"),
    ],
)
def test_errors_survive_pickling(error: errors.StuntsetError) -> None:
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error)
    assert str(copy) == str(error)
    assert copy.__dict__ == error.__dict__
