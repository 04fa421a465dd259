"""Reusable suites and assertions, usable on any implementation (ours and yours).

- ``check_event_log(make_log)``: the event-log invariants (replay == live, seamless resume,
  gapless cursors also after rollback, atomic batches under concurrent writers), as a fixed
  scenario plus a hypothesis state machine. Failures raise ``InvariantViolation``.
- ``check_provider_conformance(make_provider)``: the provider conformance invariants (the
  event contract, termination, interrupt, approvals, resume, released resources, honest
  capabilities) over the scenario catalog; ``conformance_test`` expands it into one pytest
  test per invariant × scenario. Failures raise ``ConformanceFailure``.
- ``check_host_timeouts(make_host, timeout=)``: a session host ends a stuck run (interrupt
  works, is ignored, or blocks) with ``run.killed``/``run.crashed`` within its timeout and
  then stops; ``ConformanceFailure``.
- ``check_continuation(make_host)``: across runs a session host keeps the thread and gives a
  new run id; a crashed, killed or abandoned run never overwrites the last committed
  checkpoint; a restarted host reads it back; ``ConformanceFailure``.

Checks for your own agent app:

- ``assert_prefix_stable(stand_in_or_cassette)``: within a conversation each request repeats
  the previous one's system prompt, tools (in order), cache-relevant fields and messages
  (``PrefixUnstable`` explains the first divergence field by field); all three model wires.
- ``assert_trajectory(actual, expected, mode=, args=)``: the agent's tool calls (from events,
  raw Claude stream-json, Codex JSONL, a journal or cassette) match, strict / unordered /
  subset / superset (``TrajectoryMismatch`` shows both side by side).
- ``assert_tool(source, tool, ...)``: a tool on both sides of the model: the schema the app
  declares (from its requests) and the typed arguments its collaborator receives from a
  scripted tool call (``ToolCalls.record``); ``ToolMismatch``.
- ``WorkspaceSnapshot.take(root).assert_changes(added=, modified=, deleted=)``: exactly those
  files changed, every other one byte-identical; ``verify_command`` re-runs a command instead
  of trusting the agent's report; ``WorkspaceMismatch``.
- ``within(seconds, gate=)`` and ``SettleGate``: bounded waits that name what was still
  pending (``WaitTimeout``); ``TempTracker`` removes temporary paths and reports leftovers
  (``LeftoverPaths``).
- ``check_no_leaks()`` / ``LeakSnapshot``: child processes, sockets, pipes, asyncio tasks,
  temporary directories and model-double streams a block opened and left open
  (``ResourceLeak``); on by default at the teardown of tests that use stuntset's fixtures.
- ``check_resilience(*doubles)`` / ``resilience_verdicts``: what the client did with the
  faults its doubles played, judged by named rules (``RESILIENCE_RULES``: Retry-After
  ignored, no backoff, retry storms, non-retryable statuses retried, changed bodies on retry,
  stalled streams held, cut streams swallowed, stuck or SIGKILLed CLIs, processes left
  running); ``ResilienceFailure`` lists each ``Verdict`` with its evidence.
- ``install_package(project_dir, extras=)``: the user's package built into a wheel and
  installed into a fresh venv; ``InstalledPackage.run`` / ``.bin`` / ``.entry_points`` /
  ``.import_check`` exercise it as installed, from outside the source tree
  (``InstalledPackageError``).
"""

from typing import TYPE_CHECKING

from stuntset.checks.continuation import (
    CONTINUATION_INVARIANTS,
    acheck_continuation,
    check_continuation,
)
from stuntset.checks.host_timeouts import (
    HOST_TIMEOUT_INVARIANTS,
    acheck_host_timeouts,
    check_host_timeouts,
)
from stuntset.checks.installed import InstalledPackage, install_package
from stuntset.checks.leaks import Leak, LeakSnapshot, check_no_leaks
from stuntset.checks.log_invariants import INVARIANTS, check_event_log
from stuntset.checks.prefix import (
    CACHE_FIELDS,
    PrefixDivergence,
    PrefixReport,
    assert_prefix_stable,
    find_prefix_divergence,
    first_user_message,
)
from stuntset.checks.provider_conformance import INVARIANTS as CONFORMANCE_INVARIANTS
from stuntset.checks.provider_conformance import (
    ConformanceReport,
    acheck_provider_conformance,
    check_provider_conformance,
    conformance_cases,
    conformance_test,
)
from stuntset.checks.requests import ModelRequest, model_requests
from stuntset.checks.resilience import RULES as RESILIENCE_RULES
from stuntset.checks.resilience import (
    ResilienceJudge,
    Verdict,
    check_resilience,
    resilience_verdicts,
)
from stuntset.checks.timing import SettleGate, TempTracker, within
from stuntset.checks.tools import (
    DeclaredTool,
    ReceivedCall,
    ToolCalls,
    assert_tool,
    declared_tools,
)
from stuntset.checks.trajectory import (
    ToolStep,
    TrajectoryResult,
    assert_trajectory,
    match_trajectory,
    trajectory_of,
)
from stuntset.checks.workspace import (
    CommandResult,
    WorkspaceChanges,
    WorkspaceSnapshot,
    verify_command,
)
from stuntset.errors import (
    ConformanceFailure,
    InstalledPackageError,
    InvariantViolation,
    LeftoverPaths,
    PrefixUnstable,
    ResilienceFailure,
    ResourceLeak,
    ToolMismatch,
    TrajectoryMismatch,
    WorkspaceMismatch,
)

if TYPE_CHECKING:
    from stuntset.checks._log_machine import DEFAULT_SETTINGS


def __getattr__(name: str) -> object:
    # hypothesis is imported when the log check's state machine runs or its settings are
    # asked for, not with this package (see docs/design.md, "Packaging")
    if name == "DEFAULT_SETTINGS":
        from stuntset.checks._log_machine import DEFAULT_SETTINGS

        return DEFAULT_SETTINGS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CACHE_FIELDS",
    "CONFORMANCE_INVARIANTS",
    "CONTINUATION_INVARIANTS",
    "DEFAULT_SETTINGS",
    "HOST_TIMEOUT_INVARIANTS",
    "INVARIANTS",
    "RESILIENCE_RULES",
    "CommandResult",
    "ConformanceFailure",
    "ConformanceReport",
    "DeclaredTool",
    "InstalledPackage",
    "InstalledPackageError",
    "InvariantViolation",
    "Leak",
    "LeakSnapshot",
    "LeftoverPaths",
    "ModelRequest",
    "PrefixDivergence",
    "PrefixReport",
    "PrefixUnstable",
    "ReceivedCall",
    "ResilienceFailure",
    "ResilienceJudge",
    "ResourceLeak",
    "SettleGate",
    "TempTracker",
    "ToolCalls",
    "ToolMismatch",
    "ToolStep",
    "TrajectoryMismatch",
    "TrajectoryResult",
    "Verdict",
    "WorkspaceChanges",
    "WorkspaceMismatch",
    "WorkspaceSnapshot",
    "acheck_continuation",
    "acheck_host_timeouts",
    "acheck_provider_conformance",
    "assert_prefix_stable",
    "assert_tool",
    "assert_trajectory",
    "check_continuation",
    "check_event_log",
    "check_host_timeouts",
    "check_no_leaks",
    "check_provider_conformance",
    "check_resilience",
    "conformance_cases",
    "conformance_test",
    "declared_tools",
    "find_prefix_divergence",
    "first_user_message",
    "install_package",
    "match_trajectory",
    "model_requests",
    "resilience_verdicts",
    "trajectory_of",
    "verify_command",
    "within",
]
