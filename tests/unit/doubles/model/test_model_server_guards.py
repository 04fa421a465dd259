"""``stuntset serve``'s logging never blocks serving: a stderr nobody reads drops lines (and
counts them) instead of stopping the caller. The connection guards are proven on a real
server in tests/e2e/test_serve_hardening.py."""

from __future__ import annotations

import io
import logging
import threading
import time

import pytest

from stuntset.doubles.model._server import (
    DroppingLogHandler,
    Guard,
    describe_stats,
    install_log_handler,
    raise_fd_limit,
)


class StuckStream(io.StringIO):
    """A stderr nobody reads: the first write blocks until released."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.entered = threading.Event()

    def write(self, text: str) -> int:
        self.entered.set()
        self.release.wait(30)
        return super().write(text)


def test_a_stuck_stderr_drops_and_counts_lines_without_blocking_the_caller() -> None:
    stream = StuckStream()
    handler = DroppingLogHandler(stream, capacity=10)
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "hung up", None, None)
    handler.emit(record)
    assert stream.entered.wait(10)  # the writer thread is stuck in write()
    start = time.perf_counter()
    for _ in range(1_000):
        handler.emit(record)
    emitting = time.perf_counter() - start
    assert handler.dropped == 1_000 - 10
    stream.release.set()
    handler.close()
    assert stream.getvalue().count("hung up") == 11
    # generous: 1,000 emits never wait for the stuck writer (a blocked one would take 30 s)
    assert emitting < 5


def test_records_reach_stderr_through_the_handler_and_stats_are_one_line() -> None:
    stream = io.StringIO()
    handler = DroppingLogHandler(stream)
    install_log_handler(handler)
    try:
        logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
        logging.getLogger("uvicorn.error").info("not shown")
    finally:
        handler.close()
        logging.getLogger().handlers = []
    assert stream.getvalue() == "WARNING: Invalid HTTP request received.\n"
    guard = Guard(request_timeout=1, max_connections=2)
    assert describe_stats(guard, handler) == ""
    guard.timed_out, guard.evicted, guard.refused, handler.dropped = 1, 2, 3, 4
    stats = describe_stats(guard, handler)
    assert "\n" not in stats
    assert stats.startswith("1 connection(s) closed for a request not sent in time; 2 waiting")
    assert stats.endswith("4 log line(s) dropped (stderr was not being read)")


def test_the_fd_limit_is_raised_towards_what_the_cap_needs() -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert raise_fd_limit(soft) == soft
    assert raise_fd_limit(soft + 1) >= soft


class FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str) -> str:
        return f"info {name}"


class FakeLoop:
    def __init__(self) -> None:
        self.soon: list[object] = []

    def call_soon(self, callback: object) -> None:
        self.soon.append(callback)


HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


def test_a_head_leaves_with_its_first_body_write_in_one_send() -> None:
    from stuntset.doubles.model._server import CoalescingTransport

    real, loop = FakeTransport(), FakeLoop()
    transport = CoalescingTransport(real, loop)  # type: ignore[arg-type]
    transport.write(HEAD)
    assert real.writes == []
    transport.write(b"ok")
    assert real.writes == [HEAD + b"ok"]
    transport.write(b"more")  # not a head: straight through
    assert real.writes[-1] == b"more"
    transport.write(HEAD)  # a head whose body is late: sent at the end of the loop's turn
    for callback in loop.soon:
        callback()  # type: ignore[operator]
    assert real.writes[-1] == HEAD
    transport.write(HEAD)
    transport.close()  # closing sends what is held first
    assert real.writes[-1] == HEAD
    assert real.closed
    assert transport.is_closing()
    assert transport.get_extra_info("socket") == "info socket"


def test_accept_failures_at_the_fd_limit_are_counted_in_one_line_a_second_not_a_traceback_each(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # issue #33: at the fd limit serve logged a traceback per failed accept (8,132 in 10 s).
    # asyncio reports each failure through the loop's exception handler, as here.
    import asyncio
    import errno

    loop = asyncio.new_event_loop()
    guard = Guard(request_timeout=1, max_connections=2)
    try:
        guard.start(loop)
        with caplog.at_level(logging.WARNING):
            for _ in range(1000):
                loop.call_exception_handler(
                    {
                        "message": "socket.accept() out of system resource",
                        "exception": OSError(errno.EMFILE, "Too many open files"),
                    }
                )
        handler = DroppingLogHandler(io.StringIO())
        stats = describe_stats(guard, handler)
        handler.close()
    finally:
        loop.close()
    assert guard.accept_failures == 1000
    records = [r for r in caplog.records if "accept() failed" in r.getMessage()]
    assert 1 <= len(records) <= 2  # one per second of loop time, however many failures
    assert all(r.exc_info is None for r in caplog.records)
    assert "1000 accept() failure(s)" in stats
