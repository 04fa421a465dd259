from __future__ import annotations

import pytest

from stuntset.clock import DEFAULT_START, Clock, FakeClock, SystemClock
from stuntset.errors import UsageError


def test_fake_clock_starts_fixed_and_moves_only_when_told() -> None:
    clock = FakeClock()
    assert clock.now() == DEFAULT_START == 1767225600.0
    assert clock.now() == clock.now()
    clock.advance(1.5)
    assert clock.now() == DEFAULT_START + 1.5
    assert clock.monotonic() == 1.5


def test_fake_clock_refuses_to_go_back() -> None:
    with pytest.raises(UsageError, match="backwards"):
        FakeClock(start=10.0).advance(-1)


@pytest.mark.anyio
async def test_fake_sleep_advances_without_waiting() -> None:
    clock = FakeClock(start=0.0)
    await clock.sleep(3600)
    await clock.sleep(-5)  # a negative sleep is a no-op, as with the real one
    assert clock.now() == 3600


@pytest.mark.anyio
async def test_system_clock_is_real() -> None:
    clock = SystemClock()
    before = clock.monotonic()
    await clock.sleep(0)
    assert clock.monotonic() >= before
    assert clock.now() > DEFAULT_START - 10**9
    assert repr(clock) == "SystemClock()"


def test_both_satisfy_the_protocol() -> None:
    assert isinstance(FakeClock(), Clock)
    assert isinstance(SystemClock(), Clock)
    assert "FakeClock(now=" in repr(FakeClock())
