"""What keeps ``stuntset serve`` up among bad clients: a request deadline and a connection
cap on top of uvicorn's httptools protocol, and logging that can never block serving.

uvicorn (0.54) offers ``timeout_keep_alive`` (an idle keep-alive connection is closed) and
``limit_concurrency`` (beyond it every *new request* gets a 503 — also the well-behaved
client's, while a slowloris crowd keeps its connections). It has no deadline for a request's
headers and body to arrive: a connection that sends half a request sits forever. So:

- ``request_timeout``: from the time a connection is ready for a request (accepted, or its
  last response done) the request's headers and body must arrive within this many seconds,
  else the connection is closed (checked by one sweep, not a timer per request);
- ``max_connections``: at the cap a new connection closes the oldest connection that is
  waiting for a request (half-sent or idle keep-alive); if every connection has a request in
  flight the new one is refused (closed at once). The cap stays below the process's file
  descriptor limit, so ``accept()`` never fails with ``EMFILE`` (asyncio then logs a traceback
  per attempt and stops accepting for a second);
- a response's head and its first body write leave in one ``send`` (``CoalescingTransport``);
- log records go through a bounded queue to a writer thread: when stderr is a pipe nobody
  reads, records beyond the queue are dropped and counted, and the event loop never waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import queue
import sys
import threading
from typing import ClassVar, TextIO

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["DroppingLogHandler", "Guard", "guarded_protocol", "raise_fd_limit"]


_ACCEPT_RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})

_OVER_CAP_BODY = b"stuntset serve: too many connections; retry shortly\n"
#: What a connection over the cap gets before it is closed (not a bare close).
OVER_CAP = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nretry-after: 1\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_OVER_CAP_BODY), _OVER_CAP_BODY)
)


class Guard:
    """The limits and the shared state of every connection of one server.

    No timer per request: a connection's deadline is the time it became ready for a request
    (accepted, or its last response done) plus ``request_timeout``, and one sweep every
    ``request_timeout / 4`` seconds (at most 1 s) closes the connections past it whose request
    has not fully arrived. Idle keep-alive connections are closed earlier by uvicorn's
    ``timeout_keep_alive``.
    """

    def __init__(self, *, request_timeout: float, max_connections: int) -> None:
        self.request_timeout = request_timeout
        self.max_connections = max_connections
        #: Connections waiting for a request, oldest first (dicts keep insertion order), with
        #: the loop time they started waiting; they may be evicted at the cap.
        self.waiting: dict[HttpToolsProtocol, float] = {}
        #: Connections whose request headers arrived but not yet the whole body.
        self.receiving: dict[HttpToolsProtocol, float] = {}
        self.timed_out = 0
        self.evicted = 0
        self.refused = 0
        #: ``accept()`` failures for lack of file descriptors or memory (``EMFILE`` & co):
        #: counted, logged once per second at most, never a traceback each.
        self.accept_failures = 0
        self._accept_logged = -1.0
        self._sweeping: asyncio.TimerHandle | None = None

    def on_loop_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, object]) -> None:
        """The loop's exception handler: an ``accept()`` out of resources is one counted
        line a second (asyncio logged a traceback per attempt); the rest as asyncio does."""
        error = context.get("exception")
        if isinstance(error, OSError) and error.errno in _ACCEPT_RESOURCE_ERRNOS:
            self.accept_failures += 1
            now = loop.time()
            if now - self._accept_logged >= 1.0:
                self._accept_logged = now
                logging.getLogger("stuntset.serve").warning(
                    "accept() failed: %s (%d so far); new connections wait",
                    error.strerror or error,
                    self.accept_failures,
                )
            return
        loop.default_exception_handler(context)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the sweep on ``loop`` (once), and handle its accept failures."""
        if self._sweeping is None:
            loop.set_exception_handler(self.on_loop_error)
            self._sweeping = loop.call_later(self._period(), self._sweep, loop)

    def _period(self) -> float:
        return min(1.0, self.request_timeout / 4)

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        limit = loop.time() - self.request_timeout
        for table in (self.waiting, self.receiving):
            late = []
            for protocol, since in table.items():
                if since > limit:
                    if table is self.waiting:
                        break  # oldest first: the rest are younger
                    continue
                late.append(protocol)
            for protocol in late:
                table.pop(protocol, None)
                if not protocol.transport.is_closing():
                    self.timed_out += 1
                    protocol.transport.close()
        self._sweeping = loop.call_later(self._period(), self._sweep, loop)


class CoalescingTransport:
    """A transport that holds a response's status line and headers until its first body
    write (or the end of the event loop's turn), then sends both in one ``send``: one system
    call and one packet fewer per response; the same bytes, in the same order. Everything
    else passes through to the real transport."""

    __slots__ = ("_held", "_loop", "_transport", "direct")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        #: The transport below, for a writer that sends a whole response in one write when
        #: nothing is held (the fast lane: ``_lane``).
        self.direct = transport
        self._loop = loop
        self._held: bytes | None = None

    def write(self, data: bytes) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held + data)
        elif data.endswith(b"\r\n\r\n") and data.startswith(b"HTTP/1.1 "):
            self._held = data
            self._loop.call_soon(self.flush)
        else:
            self._transport.write(data)

    def flush(self) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self.flush()
        self._transport.abort()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> object:
        return getattr(self._transport, name)


def guarded_protocol(
    guard: Guard, base: type[HttpToolsProtocol] = HttpToolsProtocol
) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol (or ``base``, a subclass of it: the fast lane's) with
    ``guard``'s request deadline and connection cap."""

    class GuardedProtocol(base):  # type: ignore[valid-type,misc]
        limits: ClassVar[Guard] = guard

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(CoalescingTransport(transport, self.loop))
            limits = self.limits
            limits.start(self.loop)
            if len(self.connections) > limits.max_connections and not self._make_room():
                limits.refused += 1
                transport.write(OVER_CAP)  # a 503, then close (after the write leaves)
                transport.close()
                return
            limits.waiting[self] = self.loop.time()

        def connection_lost(self, exc: Exception | None) -> None:
            self.limits.waiting.pop(self, None)
            self.limits.receiving.pop(self, None)
            super().connection_lost(exc)

        def on_headers_complete(self) -> None:
            limits = self.limits
            since = limits.waiting.pop(self, None)
            if since is not None:
                limits.receiving[self] = since
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self.limits.receiving.pop(self, None)
            super().on_message_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self.limits.waiting[self] = self.loop.time()

        def _make_room(self) -> bool:
            """Close the oldest connection waiting for a request; False if there is none."""
            for victim in self.limits.waiting:
                if victim is not self:
                    del self.limits.waiting[victim]
                    self.limits.evicted += 1
                    victim.transport.abort()
                    return True
            return False

    return GuardedProtocol


def raise_fd_limit(wanted: int) -> int:
    """Raise the soft limit on open files towards ``wanted`` (up to the hard limit); returns
    the soft limit in force."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):  # pragma: no cover - a sandbox that forbids it
            pass
    return wanted if soft == resource.RLIM_INFINITY else soft


class DroppingLogHandler(logging.Handler):
    """Formats records on the caller's thread and hands the line to a writer thread through a
    bounded queue; a full queue drops the line (``dropped`` counts them), so a stuck stderr
    never blocks the event loop."""

    def __init__(self, stream: TextIO | None = None, *, capacity: int = 1000) -> None:
        super().__init__()
        self.stream = stream or sys.stderr
        self.dropped = 0
        self._lines: queue.Queue[str | None] = queue.Queue(capacity)
        self._writer = threading.Thread(target=self._write, name="stuntset-log-writer", daemon=True)
        self._writer.start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:  # pragma: no cover - a broken record must not stop serving
            self.dropped += 1
            return
        try:
            self._lines.put_nowait(line)
        except queue.Full:
            self.dropped += 1

    def _write(self) -> None:
        while (line := self._lines.get()) is not None:
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except (OSError, ValueError):  # stderr closed: nothing more can be said
                return

    def close(self, last: str | None = None, timeout: float = 5.0) -> None:
        """Stop the writer after what is queued and ``last`` (a closing line, which may wait
        ``timeout`` seconds for room: the server no longer serves)."""
        with contextlib.suppress(queue.Full):
            if last is not None:
                self._lines.put(last, timeout=timeout)
            self._lines.put(None, timeout=timeout)
        self._writer.join(timeout)
        super().close()


def install_log_handler(handler: logging.Handler, *, level: int = logging.WARNING) -> None:
    """Send uvicorn's and asyncio's records (and the root logger's) to ``handler`` only."""
    handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    for name in ("", "uvicorn", "uvicorn.error", "uvicorn.access", "asyncio"):
        logger = logging.getLogger(name)
        logger.handlers = [handler] if name == "" else []
        logger.propagate = name != ""
        logger.setLevel(level)


def describe_stats(guard: Guard, handler: DroppingLogHandler) -> str:
    """One line about what the guards did, for the end of a run (empty if nothing)."""
    parts = []
    if guard.timed_out:
        parts.append(f"{guard.timed_out} connection(s) closed for a request not sent in time")
    if guard.evicted:
        parts.append(f"{guard.evicted} waiting connection(s) closed at the connection cap")
    if guard.refused:
        parts.append(f"{guard.refused} connection(s) refused at the cap (503)")
    if guard.accept_failures:
        parts.append(f"{guard.accept_failures} accept() failure(s) (out of file descriptors)")
    if handler.dropped:
        parts.append(f"{handler.dropped} log line(s) dropped (stderr was not being read)")
    return "; ".join(parts)
