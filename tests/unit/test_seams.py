from __future__ import annotations

import pytest

from stuntset.clock import FakeClock, SystemClock
from stuntset.ids import RandomIds, SequentialIds
from stuntset.seams import current_clock, current_ids, deterministic, use_seams


@pytest.mark.real_time
def test_real_seams_by_default_outside_the_plugin() -> None:
    assert isinstance(current_clock(), SystemClock)
    assert isinstance(current_ids(), RandomIds)


@pytest.mark.real_time
def test_deterministic_block_restores_on_exit() -> None:
    with deterministic(start=5.0) as seams:
        assert current_clock() is seams.clock
        assert current_clock().now() == 5.0
        assert current_ids().new("run") == "run-1"
    assert isinstance(current_clock(), SystemClock)


def test_the_plugin_makes_every_test_deterministic() -> None:
    assert isinstance(current_clock(), FakeClock)
    assert isinstance(current_ids(), SequentialIds)
    assert current_ids().new("run") == "run-1"


def test_use_seams_replaces_only_what_is_given() -> None:
    ids = SequentialIds("x")
    clock_before = current_clock()
    with use_seams(ids=ids):
        assert current_ids() is ids
        assert current_clock() is clock_before
    assert current_ids() is not ids
