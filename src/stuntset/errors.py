"""The one exception hierarchy of stuntset, split by who is at fault.

::

    StuntsetError
    ├── UsageError (also ValueError)            the test author misused stuntset
    │   ├── ScriptError                         a script is invalid or cannot be rendered on a wire
    │   ├── UnknownScenario (also LookupError)  no scenario of that name
    │   ├── CapabilityError                     a provider was asked for what it cannot do
    │   ├── InvalidEvent                        an event that a log would not read back as given
    │   ├── LogFileError                        a log's file is unusable (full disk, read-only, corrupt)
    │   ├── LogInUse                            another process holds a database's lock (pid)
    │   ├── EvalFileError                       an eval scenario file is malformed
    │   ├── CassetteError                       a cassette is malformed or cannot be written
    │   │   └── SecretFound                     refused to write: it still holds a secret
    │   ├── DaemonError                         the host daemon answered a request with an error
    │   └── StaleCursor (also LookupError)      a log cursor is beyond the head or was rolled back
    └── HarnessFailure (also AssertionError)    the system under test broke an expectation
        ├── ContractViolation                   an event stream broke the event contract
        ├── ScriptExhausted                     more turns were requested than the script holds
        ├── UnusedTurns                         scripted turns were never requested
        ├── WaitTimeout                         a condition did not come true in time
        ├── DeadlineExceeded                    a test using a double ran past its deadline
        ├── UnstubbedCall                       the code under test called a method nobody stubbed
        ├── InvariantViolation                  an implementation broke an invariant suite's rule
        ├── ConformanceFailure                  a provider adapter broke a conformance invariant
        ├── PrefixUnstable                      an app's prompt prefix changed within a conversation
        ├── TrajectoryMismatch                  an agent's tool calls differ from the expected ones
        ├── ToolMismatch                        a declared tool or a tool call's arguments differ
        ├── WorkspaceMismatch                   files changed other than the expected ones
        ├── LeftoverPaths                       temporary paths were left behind
        ├── EvalBelowThreshold                  an eval's pass rate fell below its minimum
        ├── ResourceLeak                        processes, sockets, tasks... outlived a test
        ├── ResilienceFailure                   a client mishandled a fault (retries, timeouts, kills)
        ├── CassetteMismatch                    a request matched no recorded interaction
        ├── UnusedInteractions                  recorded interactions were never requested
        ├── SnapshotMismatch                    events differ from the committed expectation
        └── InstalledPackageError               a user's package failed to build, install or import

Failures that a double *simulates* (a 429, a cut stream, a crashed CLI) are never raised as
these: the client library under test sees its own errors, exactly as in production.
Every message names the offending value, what was expected, and the next step.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CapabilityError",
    "CassetteError",
    "CassetteMismatch",
    "ConformanceFailure",
    "ContractViolation",
    "DaemonError",
    "DeadlineExceeded",
    "EvalBelowThreshold",
    "EvalFileError",
    "FuzzFailure",
    "HarnessFailure",
    "InstalledPackageError",
    "InvalidEvent",
    "InvariantViolation",
    "LeftoverPaths",
    "LogFileError",
    "LogInUse",
    "MissingExtra",
    "PrefixUnstable",
    "ResilienceFailure",
    "ResourceLeak",
    "ScriptError",
    "ScriptExhausted",
    "SecretFound",
    "SnapshotMismatch",
    "StaleCursor",
    "StuntsetError",
    "ToolMismatch",
    "TrajectoryMismatch",
    "UnknownScenario",
    "UnstubbedCall",
    "UnusedInteractions",
    "UnusedTurns",
    "UsageError",
    "WaitTimeout",
    "WorkspaceMismatch",
]


def _rebuild(cls: type[StuntsetError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class StuntsetError(Exception):
    """Root of every error stuntset raises. Survives pickling (daemon, xdist workers)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


class UsageError(StuntsetError, ValueError):
    """The test author misused stuntset (raised at configuration time where possible)."""


class ScriptError(UsageError):
    """A script is malformed, or names a step that the chosen wire cannot render.

    Attributes name the place: ``source`` (file or ``"<python>"``), ``turn`` and ``step``
    indexes (0-based) and ``wire`` where they apply.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        turn: int | None = None,
        step: int | None = None,
        field: str | None = None,
        wire: str | None = None,
    ) -> None:
        place = []
        if source is not None:
            place.append(source)
        if turn is not None:
            place.append(f"turn {turn}")
        if step is not None:
            place.append(f"step {step}")
        if field is not None:
            place.append(f"field {field!r}")
        if wire is not None:
            place.append(f"wire {wire!r}")
        super().__init__(f"{', '.join(place)}: {message}" if place else message)
        self.source = source
        self.turn = turn
        self.step = step
        self.field = field
        self.wire = wire


class EvalFileError(UsageError):
    """An eval scenario file is malformed; the message names the file and the field."""


class MissingExtra(UsageError, ImportError):
    """A feature needs an optional dependency that is not installed; the message names the
    extra to install."""


class UnknownScenario(UsageError, LookupError):
    """No scenario has that name."""


class CassetteError(UsageError):
    """A cassette is malformed, from an unknown version, or cannot be written. The message
    names the file, the line and the field."""


class SecretFound(CassetteError):
    """Refused to write: the cassette still holds something that looks like a secret."""


class DaemonError(UsageError):
    """The daemon answered a request with an error; ``field`` names the culprit.

    ``resume_at`` is set for a stale cursor only: subscribe again with ``after=resume_at``.
    """

    def __init__(self, message: str, *, field: str | None, resume_at: int | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.resume_at = resume_at


class CapabilityError(UsageError):
    """A provider was asked for something it has declared it cannot do."""


class InvalidEvent(UsageError):
    """An event was refused at the door of a log: stored, it would not read back as given.

    ``index`` is its 0-based position in the appended batch, ``field`` the offending field
    (``None`` when the whole item is not an event). Nothing of the batch was stored.
    """

    def __init__(self, message: str, *, index: int, field: str | None) -> None:
        super().__init__(message)
        self.index = index
        self.field = field


class LogFileError(UsageError):
    """A log's file cannot be used: the disk is full, it is read-only, corrupt, or missing.

    ``path`` names the file; the message says the cause and what to do.
    """

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class LogInUse(UsageError):
    """Another process (``pid``, or ``None`` if it did not say) holds the database's lock."""

    def __init__(self, message: str, *, path: str, pid: int | None) -> None:
        super().__init__(message)
        self.path = path
        self.pid = pid


class StaleCursor(UsageError, LookupError):
    """A session-log cursor no longer names a position in the log.

    Either it is beyond the session's head, or the log was rolled back below it (so the
    events the holder saw are gone). ``session_id`` and ``cursor`` name the place;
    ``resume_at`` is the last ``seq`` still valid: resubscribe after it (or from 0, rebuilding
    any projection).
    """

    def __init__(self, message: str, *, session_id: str, cursor: int, resume_at: int) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.cursor = cursor
        self.resume_at = resume_at


class HarnessFailure(StuntsetError, AssertionError):
    """The system under test broke an expectation that stuntset checks."""


class ContractViolation(HarnessFailure):
    """An event stream broke a rule of the normalized event contract.

    ``index`` is the 0-based position of the offending event, ``rule`` the rule's name.
    """

    def __init__(self, message: str, *, rule: str, index: int | None) -> None:
        super().__init__(message)
        self.rule = rule
        self.index = index


class ScriptExhausted(HarnessFailure):
    """The code under test asked for a turn after the script ran out (or none matched)."""


class UnusedTurns(HarnessFailure):
    """Scripted turns were never requested by the code under test."""


class WaitTimeout(HarnessFailure):
    """A waited-for condition did not come true before the timeout."""


class DeadlineExceeded(HarnessFailure):
    """A test that used a double was still running at its deadline (``stuntset_deadline``);
    the message names what was pending: which request or process stalled, since when, and
    what it last sent."""


class UnstubbedCall(HarnessFailure):
    """The code under test used a member of a stub that the test did not provide."""


class InvariantViolation(HarnessFailure):
    """An implementation broke a rule of an invariant suite (``stuntset.checks``).

    ``invariant`` is the rule's name; the message shows the steps that led there.
    """

    def __init__(self, message: str, *, invariant: str) -> None:
        super().__init__(message)
        self.invariant = invariant


class ConformanceFailure(HarnessFailure):
    """A provider adapter broke an invariant of ``check_provider_conformance``.

    ``invariant`` is the rule's name, ``scenario`` the catalog scenario it was playing (or
    ``None``), ``provider`` the provider's name; the message shows the events it emitted.
    """

    def __init__(
        self, message: str, *, invariant: str, scenario: str | None, provider: str
    ) -> None:
        super().__init__(message)
        self.invariant = invariant
        self.scenario = scenario
        self.provider = provider


# --- checks for the user's own agent (stuntset.checks) ---


class PrefixUnstable(HarnessFailure):
    """Within a conversation, a request did not repeat the previous one's prompt prefix
    (system prompt, tools in order, cache-relevant fields, messages); see
    ``stuntset.checks.assert_prefix_stable``."""


class TrajectoryMismatch(HarnessFailure):
    """An agent's tool calls do not match the expected trajectory; the message shows both
    side by side (``stuntset.checks.assert_trajectory``)."""


class ToolMismatch(HarnessFailure):
    """A tool the app declares, or the arguments a tool call delivered, differ from what the
    test expects (``stuntset.checks.assert_tool``)."""


class WorkspaceMismatch(HarnessFailure):
    """Files in a workspace changed other than the expected ones, or a re-run verification
    command failed (``stuntset.checks.WorkspaceSnapshot``, ``verify_command``)."""


class LeftoverPaths(HarnessFailure):
    """Temporary files or directories were still there at the end (``TempTracker``)."""


class EvalBelowThreshold(HarnessFailure):
    """An eval's pass rate fell below the rate it must reach."""


class ResourceLeak(HarnessFailure):
    """Child processes, sockets, pipes, asyncio tasks, temporary directories or model-double
    streams opened by a test were still open at its end (``stuntset.checks.leaks``)."""


class ResilienceFailure(HarnessFailure):
    """A client broke resilience rules with the faults its doubles played: retried too soon,
    too often or what must not be retried, held a stalled stream, left a process running…
    (``stuntset.checks.check_resilience``). ``verdicts`` lists them."""

    def __init__(self, message: str, *, verdicts: list[Any] | None = None) -> None:
        super().__init__(message)
        self.verdicts = list(verdicts or [])


class CassetteMismatch(HarnessFailure):
    """A request matched no recorded interaction (the message shows the nearest ones)."""


class UnusedInteractions(HarnessFailure):
    """Recorded interactions were never requested."""


class SnapshotMismatch(HarnessFailure):
    """The events differ from the committed expectation."""


class InstalledPackageError(HarnessFailure):
    """A user's package could not be built or installed into its venv, or, once installed,
    an import or metadata probe failed there (``stuntset.checks.install_package``); the
    message shows the tail of the tool's output."""


class FuzzFailure(HarnessFailure):
    """An app broke a property on a generated script (``stuntset.strategies``); the message
    has the script as TOML, the command that replays it and the ``@example`` that pins it."""
