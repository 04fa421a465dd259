"""The rows of the reference host: tasks → sessions → runs, and a session's checkpoint.

A *task* is a piece of work in one working directory (absolute). A *session* is a
conversation with one provider (by its registry name) about a task; it keeps its id across
turns. A *run* is one turn of a session, with a fresh id each time. A session's
*checkpoint* is what the next turn resumes from — the provider's resume handle as of the
last run that **completed** (a crashed, killed or abandoned run never writes it).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

__all__ = ["Checkpoint", "RunRecord", "RunStatus", "SessionRecord", "TaskRecord"]

#: ``abandoned``: the host stopped (or restarted) while the run was going.
RunStatus: TypeAlias = Literal["running", "completed", "crashed", "killed", "abandoned"]


class TaskRecord(msgspec.Struct, frozen=True, kw_only=True):
    task_id: str
    workdir: str  # absolute
    created_at: float


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True):
    """Where a session's next turn resumes: written only when a run completes."""

    resume: str  # the provider's resume handle (its session id)
    run_id: str  # the completed run that wrote it
    seq: int  # the log position of that run's terminal event


class SessionRecord(msgspec.Struct, frozen=True, kw_only=True):
    session_id: str
    task_id: str
    provider: str  # a name in the service's provider registry
    created_at: float
    checkpoint: Checkpoint | None = None
    closed: bool = False


class RunRecord(msgspec.Struct, frozen=True, kw_only=True):
    run_id: str
    session_id: str
    prompt: str
    status: RunStatus
    started_at: float
    ended_at: float | None = None
