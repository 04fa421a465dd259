"""Wake-ups are coalesced: one write to an event loop's self-pipe per batch of notifies,
never one per subscriber. The self-pipe is also the loop's signal wakeup fd: one byte per
subscriber filled it under load and dropped the SIGTERM byte (issue #33)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import threading
from collections.abc import Callable
from typing import Any

from stuntset.log import MemoryEventLog
from stuntset.log.subscription import LogSubscription


class CountingLoop(asyncio.SelectorEventLoop):
    """A real selector loop that counts the threadsafe wake-ups it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.threadsafe_calls = 0

    def call_soon_threadsafe(  # type: ignore[override]
        self, callback: Callable[..., object], *args: Any, context: Any = None
    ) -> asyncio.Handle:
        self.threadsafe_calls += 1
        return super().call_soon_threadsafe(callback, *args, context=context)


def _wait_all(subscriptions: list[LogSubscription]) -> list[asyncio.Task[object]]:
    return [asyncio.ensure_future(sub.__anext__()) for sub in subscriptions]


def test_one_notify_of_2000_subscribers_writes_one_wake_up_not_2000() -> None:
    loop = CountingLoop()
    log = MemoryEventLog()
    try:

        async def scenario() -> None:
            subs = [log.subscribe("s1") for _ in range(2000)]
            tasks = _wait_all(subs)
            while not log._notifier.waiting() or len(log._notifier._waiting["s1"]) < 2000:
                await asyncio.sleep(0)  # let every task register its waiter
            before = loop.threadsafe_calls
            done = threading.Event()

            def burst() -> None:  # from another thread, as the log's watcher does
                for _ in range(50):
                    log._notifier.notify("s1")
                done.set()

            threading.Thread(target=burst).start()
            await asyncio.to_thread(done.wait)
            # to_thread itself uses one threadsafe call to hand back its result
            assert loop.threadsafe_calls - before <= 50 + 1
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        loop.run_until_complete(scenario())
    finally:
        loop.close()


def test_a_signal_is_still_delivered_after_a_burst_of_notifies_while_the_loop_was_busy() -> None:
    # The loop is busy (blocked in a callback) while another thread notifies 2,000 waiting
    # subscribers 200 times, then a signal arrives: the loop must still see the signal. With
    # one byte per subscriber the self-pipe fills and the signal's byte is dropped.
    loop = asyncio.new_event_loop()
    log = MemoryEventLog()
    got: list[int] = []
    try:

        async def scenario() -> None:
            loop.add_signal_handler(signal.SIGUSR1, got.append, 1)
            subs = [log.subscribe("s1") for _ in range(2000)]
            tasks = _wait_all(subs)
            while len(log._notifier._waiting.get("s1", ())) < 2000:
                await asyncio.sleep(0)
            sent = threading.Event()

            def burst() -> None:
                for _ in range(200):
                    log._notifier.notify("s1")
                os.kill(os.getpid(), signal.SIGUSR1)
                sent.set()

            thread = threading.Thread(target=burst)
            thread.start()
            sent.wait(timeout=60)  # blocks the loop: nothing drains the self-pipe meanwhile
            thread.join()
            assert sent.is_set()
            while not got:  # ends only if the signal's byte reached the loop
                await asyncio.sleep(0.01)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        loop.run_until_complete(asyncio.wait_for(scenario(), timeout=30))
        assert got == [1]
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
        loop.close()


def test_the_self_pipe_is_smaller_than_what_one_byte_per_subscriber_would_write() -> None:
    # The premise of the test above: 2,000 x 200 bytes do not fit in a socketpair's buffer.
    a, b = socket.socketpair()
    try:
        a.setblocking(False)
        written = 0
        try:
            while written < 400_000:
                written += a.send(b"\0")
        except BlockingIOError:
            pass
        assert written < 400_000
    finally:
        a.close()
        b.close()
