"""Rate limits in scripts: the values, per turn or for the whole script, in Python and in
files, refused with the place named when they cannot be what an API reports."""

from __future__ import annotations

import pytest

from stuntset.errors import ScriptError
from stuntset.script import (
    RateLimitCredits,
    RateLimits,
    RateLimitWindow,
    Script,
    Text,
    Turn,
    dumps_script,
    loads_script,
    turn,
)

FILE = """
[rate_limits]
primary = { used_percent = 42.5, window_minutes = 300, resets_at = 1767240000 }
credits = { has_credits = true, balance = "12.50" }

[[turns]]
steps = [{ text = "own" }]
rate_limits = { secondary = { used_percent = 7 } }

[[turns]]
steps = [{ text = "the script's" }]
"""


def test_a_turns_rate_limits_win_over_the_scripts() -> None:
    script = loads_script(FILE)
    own, inherited = script.turns
    assert script.rate_limits_of(own) == RateLimits(secondary=RateLimitWindow(used_percent=7))
    assert script.rate_limits_of(inherited) == RateLimits(
        primary=RateLimitWindow(used_percent=42.5, window_minutes=300, resets_at=1767240000),
        credits=RateLimitCredits(has_credits=True, balance="12.50"),
    )
    assert Script.of([Text("x")]).rate_limits_of(Turn(steps=())) is None


def test_they_survive_a_round_trip_through_json() -> None:
    script = loads_script(FILE)
    again = loads_script(dumps_script(script), format="json")
    assert again.rate_limits == script.rate_limits
    assert [t.rate_limits for t in again.turns] == [t.rate_limits for t in script.turns]


def test_the_python_builders_take_them() -> None:
    limits = RateLimits(credits=RateLimitCredits(has_credits=False))
    assert turn(Text("a"), rate_limits=limits).rate_limits is limits
    assert Script.of([Text("a")], rate_limits=limits).rate_limits is limits
    assert Script.from_function(lambda r: [Text("a")], rate_limits=limits).rate_limits is limits


@pytest.mark.parametrize(
    ("make", "wrong"),
    [
        (lambda: RateLimitWindow(used_percent=100.5), "0 to 100"),
        (lambda: RateLimitWindow(used_percent=-1), "0 to 100"),
        (lambda: RateLimitWindow(used_percent=float("inf")), "0 to 100"),
        (lambda: RateLimitWindow(used_percent=1, window_minutes=0), "window_minutes"),
        (lambda: RateLimitWindow(used_percent=1, resets_at=-1), "resets_at"),
        (lambda: RateLimitCredits(has_credits=True, balance="ten"), "balance"),
        (lambda: RateLimitCredits(has_credits=True, balance="1\nx: y"), "balance"),
        (lambda: RateLimits(), "primary, secondary or credits"),
    ],
)
def test_values_no_api_reports_are_refused(make: object, wrong: str) -> None:
    with pytest.raises(ValueError, match=wrong):
        make()  # type: ignore[operator]


def test_not_rate_limits_is_refused_naming_the_place() -> None:
    with pytest.raises(
        ScriptError, match=r"turn 0: rate_limits must be a stuntset\.script\.RateLimits"
    ):
        Script.of(Turn(steps=(), rate_limits={"primary": 5}))  # type: ignore[arg-type]
    with pytest.raises(ScriptError, match=r"rate_limits must be a stuntset\.script\.RateLimits"):
        Script(rate_limits=5)  # type: ignore[arg-type]


def test_file_errors_name_turn_and_field() -> None:
    bad = "[[turns]]\nsteps = []\nrate_limits = { primary = { used_percent = 101 } }"
    with pytest.raises(ScriptError, match=r"f.toml, turn 0, field 'rate_limits.primary': used"):
        loads_script(bad, source="f.toml")
    typo = "[rate_limits]\ncredit = { has_credits = true }\n[[turns]]\nsteps = []"
    with pytest.raises(ScriptError, match=r"unknown field 'credit' \(did you mean 'credits'\?\)"):
        loads_script(typo, source="f.toml")
