"""A test-bound deadline for tests that use a double: when the test is still running at the
deadline it fails with ``DeadlineExceeded`` naming what is pending (which request or process
stalled, since when, what it last sent) instead of hanging.

It works for clients with no read timeout of their own (google-genai, a Node SDK driving a
fake CLI): at the deadline the test's thread gets a ``SIGALRM`` whose handler raises there, and
a blocking read (a socket, a pipe, ``select``) is interrupted by the signal, so the error
surfaces where the test waits. Where the signal cannot be used (not the main thread, a
platform without ``pthread_kill``, or ``SIGALRM`` already taken, e.g. by pytest-timeout) the
watchdog unblocks the test instead (``unblock``: the doubles end their stalled streams and the
fake CLIs still running are killed), and the error is raised as the block ends.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from stuntset.errors import DeadlineExceeded, UsageError

from .row import Row
from .sources import one_line
from .timeline import Timeline

__all__ = ["DEFAULT_SECONDS", "Deadline", "deadline_message", "parse_seconds"]

#: The default deadline: far above any test of a double (milliseconds each), below a CI
#: job's patience.
DEFAULT_SECONDS = 60.0


def parse_seconds(value: Any, where: str) -> float:
    """A deadline in seconds (``0`` or less: off) from an ini value or a marker argument."""
    if isinstance(value, bool):
        raise UsageError(f"{where}: expected a number of seconds (0 for none), got {value!r}")
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise UsageError(
            f"{where}: expected a number of seconds (0 for none), got {value!r}"
        ) from None
    if seconds != seconds:  # NaN
        raise UsageError(f"{where}: expected a number of seconds (0 for none), got {value!r}")
    return seconds


def _pending_line(row: Row) -> str:
    since = "" if row.t is None else f" since +{row.t:.3f}s"
    last = str(row.detail.get("last_sent", ""))
    said = f"; it last sent: {one_line(last, 160)}" if last else "; it sent nothing yet"
    return f"  {row.source}{since}: {row.text}{said}"


def deadline_message(where: str, seconds: float, timeline: Timeline) -> str:
    """What ``DeadlineExceeded`` says: the test, the deadline, and what was pending."""
    rows = timeline.rows()
    pending = [row for row in rows if row.pending]
    head = (
        f"{where}: still running at its deadline of {seconds:g}s (ini stuntset_deadline, "
        f"or @pytest.mark.stuntset_deadline(seconds); 0 for none)"
    )
    if pending:
        return head + "; pending:\n" + "\n".join(_pending_line(row) for row in pending)
    dated = [row for row in rows if row.t is not None]
    if dated:
        last = dated[-1]
        return (
            head + "; no double was serving anything: the code under test itself is busy; "
            f"the last thing a double saw, at +{last.t:.3f}s: {last.source} {last.text}"
        )
    return head + "; no double saw anything yet: the code under test never reached one"


class Deadline:
    """``with Deadline(seconds, message):`` raises ``DeadlineExceeded(message())`` in this
    thread if the block is still running after ``seconds`` (a no-op for ``seconds <= 0``).

    A watchdog thread waits for the block to end (an ``Event``, with ``seconds`` as its
    timeout); at the deadline it builds the message there (reading the doubles' journals
    outside the test's thread, so no lock the test holds is needed), then interrupts the test's
    thread with ``SIGALRM``, whose handler raises it. Where the signal cannot be used, it calls
    ``unblock`` instead, and the error is raised as the block ends."""

    def __init__(
        self,
        seconds: float,
        message: Callable[[], str],
        unblock: Callable[[], None] | None = None,
    ) -> None:
        self.seconds = seconds
        self.message = message
        self.unblock = unblock
        #: Whether the signal is in use (else the watchdog unblocks the test at the deadline).
        self.signalled = False
        self.armed = False
        self.fired = False
        self._text = ""
        self._done = threading.Event()
        self._previous: Any = None
        self._watchdog: threading.Thread | None = None

    def _can_signal(self) -> bool:
        return (
            hasattr(signal, "pthread_kill")
            and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)
        )

    def _watch(self, target: int) -> None:
        if self._done.wait(self.seconds):
            return
        try:
            self._text = self.message()
        except Exception as exc:  # the deadline must fire all the same
            self._text = f"(the pending requests could not be read: {exc!r})"
        if self._done.is_set():
            return
        if self.signalled:
            signal.pthread_kill(target, signal.SIGALRM)
            return
        self.fired = True
        if self.unblock is not None:
            try:
                self.unblock()
            except Exception as exc:  # the test fails at the deadline all the same
                self._text += f"\n(unblocking the doubles failed: {exc!r})"

    def _fire(self, signum: int, frame: FrameType | None) -> None:
        if self.fired or self._done.is_set():
            return
        self.fired = True
        raise DeadlineExceeded(self._text)

    def __enter__(self) -> Deadline:
        if self.seconds > 0:
            if self._can_signal():
                self._previous = signal.signal(signal.SIGALRM, self._fire)
                self.signalled = True
            self._watchdog = threading.Thread(
                target=self._watch,
                args=(threading.get_ident(),),
                name="stuntset-deadline",
                daemon=True,
            )
            self._watchdog.start()
            self.armed = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.armed:
            return
        self._done.set()
        if self._watchdog is not None:
            self._watchdog.join()
        self.armed = False
        if self.signalled:
            # a signal sent just before ``_done`` was set is handled by now or ignored by _fire
            signal.signal(signal.SIGALRM, self._previous or signal.SIG_DFL)
            self.signalled = False
        elif self.fired and not isinstance(exc, DeadlineExceeded):
            raise DeadlineExceeded(self._text) from exc
