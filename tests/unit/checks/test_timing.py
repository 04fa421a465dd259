"""within(), SettleGate and TempTracker: bounded waits that name what was pending, and
temporary paths cleaned up with leftovers reported."""

from __future__ import annotations

import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import anyio
import pytest

from stuntset.checks import LeftoverPaths, SettleGate, TempTracker, within
from stuntset.errors import UsageError, WaitTimeout


class Ticks:
    """A clock that advances one second per reading (pending durations are deterministic)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def gate() -> SettleGate:
    return SettleGate("tools", clock=Ticks())


def test_a_gate_settles_when_the_last_holder_leaves(gate: SettleGate) -> None:
    go = threading.Event()

    def worker() -> None:
        with gate.hold("tool call t1"):
            go.wait(10)

    token = gate.enter("tool call t0")
    thread = threading.Thread(target=worker)
    thread.start()
    gate.leave(token)
    go.set()
    gate.wait(10)
    thread.join()
    assert gate.pending() == []


def test_a_gate_that_does_not_settle_names_what_is_pending(gate: SettleGate) -> None:
    gate.enter("tool call t1")
    gate.enter("subprocess pytest -q")
    with pytest.raises(WaitTimeout) as caught:
        gate.wait(0.01)
    assert str(caught.value) == (
        "tools did not settle within 0.01 s; still pending:\n"
        "  tool call t1 (pending 2.00 s)\n"
        "  subprocess pytest -q (pending 1.00 s)"
    )


def test_leaving_twice_is_a_usage_error(gate: SettleGate) -> None:
    token = gate.enter("x")
    gate.leave(token)
    with pytest.raises(UsageError, match="token 0 is not pending"):
        gate.leave(token)


@pytest.mark.anyio
async def test_an_async_block_over_its_bound_names_what_was_pending(gate: SettleGate) -> None:
    gate.enter("tool call t1")
    with pytest.raises(WaitTimeout) as caught:
        async with within(0.05, what="the agent run", gate=gate):
            await anyio.sleep_forever()
    assert str(caught.value) == (
        "the agent run did not finish within 0.05 s\n"
        "tools still pending: tool call t1 (pending 1.00 s)"
    )


@pytest.mark.anyio
async def test_an_async_block_in_time_passes_and_gates_wait_async(gate: SettleGate) -> None:
    token = gate.enter("tool call t1")
    async with within(10):
        gate.leave(token)
        await gate.wait_async(10)
    gate.enter("stuck")
    with pytest.raises(WaitTimeout, match="still pending:\n  stuck"):
        await gate.wait_async(0.01)


def test_a_sync_block_over_its_bound_is_interrupted() -> None:
    with pytest.raises(WaitTimeout) as caught, within(0.05):
        threading.Event().wait(30)
    assert str(caught.value) == (
        "the block did not finish within 0.05 s\n(pass gate= to have what was in flight named here)"
    )


def test_a_sync_block_restores_the_alarm_that_was_set_before() -> None:
    fired: list[int] = []

    def earlier(signum: int, frame: FrameType | None) -> None:
        fired.append(signum)

    previous = signal.signal(signal.SIGALRM, earlier)
    signal.setitimer(signal.ITIMER_REAL, 100)
    try:
        with within(5):
            pass
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 90 < remaining <= 100
        assert signal.getsignal(signal.SIGALRM) is earlier
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert fired == []


def test_within_misuse() -> None:
    with pytest.raises(UsageError, match="must be positive"):
        within(0)
    errors: list[BaseException] = []

    def off_main() -> None:
        try:
            with within(1):
                pass
        except UsageError as error:
            errors.append(error)

    thread = threading.Thread(target=off_main)
    thread.start()
    thread.join()
    assert "needs the main thread" in str(errors[0])


@pytest.fixture
def tracker(tmp_path: Path) -> Iterator[TempTracker]:
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / "there-before").mkdir()
    tracker = TempTracker(tmp_path / "tmp")
    yield tracker
    tracker.close(fail=False)


def test_the_trackers_own_directories_are_removed_quietly(tracker: TempTracker) -> None:
    own = tracker.mkdtemp()
    (own / "file").write_text("x")
    handed = Path(tempfile.mkdtemp(dir=tracker.root))
    tracker.release(handed)
    assert tracker.close() == []
    assert not own.exists()
    assert not handed.exists()
    assert [p.name for p in tracker.root.iterdir()] == ["there-before"]


def test_leftovers_are_removed_and_reported(tracker: TempTracker) -> None:
    forgotten = Path(tempfile.mkdtemp(prefix="agent-", dir=tracker.root))
    (tracker.root / "scratch.txt").write_text("x")
    with pytest.raises(LeftoverPaths) as caught:
        tracker.close()
    message = str(caught.value)
    assert message.startswith(
        f"2 temporary path(s) were left in {tracker.root} (now removed):\n"
        f"  {forgotten.name}/\n  scratch.txt\n"
    )
    assert "call release(path)" in message
    assert not forgotten.exists()


@pytest.mark.anyio
async def test_work_held_inside_an_async_block_is_named_after_the_cancel_unwound_it(
    gate: SettleGate,
) -> None:
    async def agent_run() -> None:
        # the cancellation unwinds `hold` (it leaves) before __aexit__ writes the report
        async with within(0.05, what="the agent run", gate=gate):
            with gate.hold("tool call t2"):
                await anyio.sleep_forever()

    with pytest.raises(WaitTimeout) as caught:
        await agent_run()
    assert str(caught.value) == (
        "the agent run did not finish within 0.05 s\n"
        "tools still pending: tool call t2 (pending 1.00 s, cut short)"
    )
    assert gate.pending() == []


@pytest.mark.anyio
async def test_work_that_ended_normally_inside_the_block_is_not_named(gate: SettleGate) -> None:
    with gate.hold("done in time"):
        pass

    async def block() -> None:
        async with within(0.05, gate=gate):
            with gate.hold("finished"):
                await anyio.sleep(0)
            token = gate.enter("a token left in a finally")
            try:
                await anyio.sleep_forever()
            finally:
                gate.leave(token)

    with pytest.raises(WaitTimeout) as caught:
        await block()
    assert str(caught.value).splitlines()[1] == (
        "tools still pending: a token left in a finally (pending 1.00 s, cut short)"
    )


def test_a_cut_short_from_an_earlier_block_is_not_reported_by_a_later_one(
    gate: SettleGate,
) -> None:
    async def held_then_cancelled() -> None:
        with anyio.move_on_after(0.01), gate.hold("earlier"):
            await anyio.sleep_forever()

    anyio.run(held_then_cancelled)
    assert gate.cut_short() == ["earlier (pending 1.00 s, cut short)"]
    assert gate.cut_short(since=gate.mark()) == []
