"""Reusable suites and assertions, usable on any implementation (ours and yours).

- ``check_event_log(make_log)``: the event-log invariants (replay == live, seamless resume,
  gapless cursors also after rollback, atomic batches under concurrent writers), as a fixed
  scenario plus a hypothesis state machine. Failures raise ``InvariantViolation``.
- ``check_provider_conformance(make_provider)``: the provider conformance invariants (the
  event contract, termination, interrupt, approvals, resume, released resources, honest
  capabilities) over the scenario catalog; ``conformance_test`` expands it into one pytest
  test per invariant × scenario. Failures raise ``ConformanceFailure``.
"""

from stuntset.checks.log_invariants import DEFAULT_SETTINGS, INVARIANTS, check_event_log
from stuntset.checks.provider_conformance import INVARIANTS as CONFORMANCE_INVARIANTS
from stuntset.checks.provider_conformance import (
    ConformanceReport,
    acheck_provider_conformance,
    check_provider_conformance,
    conformance_cases,
    conformance_test,
)
from stuntset.errors import ConformanceFailure, InvariantViolation

__all__ = [
    "CONFORMANCE_INVARIANTS",
    "DEFAULT_SETTINGS",
    "INVARIANTS",
    "ConformanceFailure",
    "ConformanceReport",
    "InvariantViolation",
    "acheck_provider_conformance",
    "check_event_log",
    "check_provider_conformance",
    "conformance_cases",
    "conformance_test",
]
