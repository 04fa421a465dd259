"""The reference session host: tasks → sessions → runs, persisted in the event log.

- ``SessionService``: create tasks and sessions, start turns, interrupt, respond, close;
  provider events flow into an ``EventLog``; checkpoints are written only by completed runs.
- ``SessionStore``: the host's rows (tasks, sessions, runs, checkpoints) in SQLite.
- ``TaskRecord`` / ``SessionRecord`` / ``RunRecord`` / ``Checkpoint``: those rows.
"""

from stuntset.runtime.models import Checkpoint, RunRecord, RunStatus, SessionRecord, TaskRecord
from stuntset.runtime.service import ProviderFactory, SessionService
from stuntset.runtime.store import SessionStore

__all__ = [
    "Checkpoint",
    "ProviderFactory",
    "RunRecord",
    "RunStatus",
    "SessionRecord",
    "SessionService",
    "SessionStore",
    "TaskRecord",
]
