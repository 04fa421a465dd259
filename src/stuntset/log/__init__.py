"""The event-sourced session log: append, replay, subscribe (replay then live), roll back.

- ``EventLog`` / ``Subscription``: the protocol every store implements (``base``).
- ``SqliteEventLog``: the embedded, durable store (stdlib sqlite3, WAL, ``BEGIN IMMEDIATE``).
- ``MemoryEventLog``: the same semantics in a dict, without durability.
- ``project`` / ``Projector`` / ``diff_views``: session projections as pure functions of the
  event list, so replayed and live views compare field by field.

``stuntset.checks.check_event_log(make_log)`` checks any ``EventLog`` against the invariants.
"""

from stuntset.errors import StaleCursor
from stuntset.log.base import EventLog, Subscription
from stuntset.log.memory import MemoryEventLog
from stuntset.log.projections import (
    ApprovalView,
    InputView,
    MessageView,
    Projector,
    RunView,
    SessionStatus,
    SessionView,
    ToolCallView,
    UsageView,
    diff_views,
    project,
)
from stuntset.log.sqlite import SqliteEventLog, Synchronous
from stuntset.log.subscription import LogSubscription

__all__ = [
    "ApprovalView",
    "EventLog",
    "InputView",
    "LogSubscription",
    "MemoryEventLog",
    "MessageView",
    "Projector",
    "RunView",
    "SessionStatus",
    "SessionView",
    "SqliteEventLog",
    "StaleCursor",
    "Subscription",
    "Synchronous",
    "ToolCallView",
    "UsageView",
    "diff_views",
    "project",
]
