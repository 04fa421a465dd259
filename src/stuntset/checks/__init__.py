"""Reusable suites and assertions, usable on any implementation (ours and yours).

- ``check_event_log(make_log)``: the event-log invariants (replay == live, seamless resume,
  gapless cursors also after rollback, atomic batches under concurrent writers), as a fixed
  scenario plus a hypothesis state machine. Failures raise ``InvariantViolation``.
"""

from stuntset.checks.log_invariants import DEFAULT_SETTINGS, INVARIANTS, check_event_log
from stuntset.errors import InvariantViolation

__all__ = ["DEFAULT_SETTINGS", "INVARIANTS", "InvariantViolation", "check_event_log"]
