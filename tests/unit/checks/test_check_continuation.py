"""``check_continuation``: the reference host passes; a host broken in one way fails the
rule that guards it (one broken host per rule)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec
import pytest

from stuntset.checks import CONTINUATION_INVARIANTS, check_continuation
from stuntset.errors import ConformanceFailure
from stuntset.events import Event
from stuntset.log import SqliteEventLog
from stuntset.providers.base import AgentProvider, AgentRun
from stuntset.runtime import SessionService
from stuntset.runtime.models import Checkpoint, RunRecord, SessionRecord
from stuntset.runtime.store import SessionStore

Providers = Mapping[str, Callable[[], AgentProvider]]


class ReferenceHost(SessionService):
    """The reference host over its own file in ``directory``, closing it after use."""

    def __init__(self, providers: Providers, directory: Path) -> None:
        db = directory / "host.db"
        super().__init__(log=SqliteEventLog(db), store=SessionStore(db), providers=providers)

    def close(self) -> None:
        self.store.close()
        self.log.close()  # type: ignore[attr-defined]


class StaleRunIds(ReferenceHost):
    """Returns the session's first run record for every turn."""

    def __init__(self, providers: Providers, directory: Path) -> None:
        super().__init__(providers, directory)
        self.first: dict[str, RunRecord] = {}

    async def start_turn(self, session_id: str, prompt: str) -> RunRecord:
        record = await super().start_turn(session_id, prompt)
        return self.first.setdefault(session_id, record)


class ForgetsTheThread(ReferenceHost):
    """Starts every turn afresh (drops the checkpoint before the turn)."""

    async def start_turn(self, session_id: str, prompt: str) -> RunRecord:
        row = self.session(session_id)
        self.store.put(msgspec.structs.replace(row, checkpoint=None))
        return await super().start_turn(session_id, prompt)


def overwriting(status: str) -> type[ReferenceHost]:
    class Overwrites(ReferenceHost):
        """Writes the checkpoint when a run ends with ``status`` too."""

        def _ended(self, record: RunRecord, terminal: Event, run: AgentRun) -> None:
            super()._ended(record, terminal, run)
            if terminal.type == status:
                checkpoint = Checkpoint(resume="lost", run_id=record.run_id, seq=terminal.seq or 0)
                self.store.set_checkpoint(record.session_id, checkpoint)

    return Overwrites


class KeepsItInMemory(ReferenceHost):
    """Holds the checkpoint in memory only: a restarted host has none."""

    def __init__(self, providers: Providers, directory: Path) -> None:
        super().__init__(providers, directory)
        self.held: dict[str, Checkpoint] = {}

    def _ended(self, record: RunRecord, terminal: Event, run: AgentRun) -> None:
        if terminal.type == "run.completed":
            self.held[record.session_id] = Checkpoint(
                resume=run.session_id, run_id=record.run_id, seq=terminal.seq or 0
            )
        self._finish(record, {"run.completed": "completed"}.get(terminal.type, "crashed"))

    def session(self, session_id: str) -> SessionRecord:
        row = super().session(session_id)
        return msgspec.structs.replace(row, checkpoint=self.held.get(session_id))


class AbandonOverwrites(ReferenceHost):
    """Writes the abandoned run as the checkpoint when the host stops."""

    def _abandon(self, record: RunRecord, reason: str) -> None:
        super()._abandon(record, reason)
        self.store.set_checkpoint(
            record.session_id, Checkpoint(resume="lost", run_id=record.run_id, seq=0)
        )


def test_the_reference_host_passes(tmp_path: Path) -> None:
    check_continuation(ReferenceHost, directory=tmp_path)


BROKEN: dict[str, Any] = {
    "run-id-new": StaleRunIds,
    "thread-kept": ForgetsTheThread,
    "crashed-keeps-checkpoint": overwriting("run.crashed"),
    "killed-keeps-checkpoint": overwriting("run.killed"),
    "checkpoint-round-trips": KeepsItInMemory,
    "abandoned-keeps-checkpoint": AbandonOverwrites,
}


def test_every_rule_has_a_broken_host() -> None:
    assert set(BROKEN) == set(CONTINUATION_INVARIANTS)


@pytest.mark.parametrize("rule", list(BROKEN))
def test_a_broken_host_fails_its_rule(rule: str, tmp_path: Path) -> None:
    with pytest.raises(ConformanceFailure) as info:
        check_continuation(BROKEN[rule], directory=tmp_path)
    assert info.value.invariant == rule, str(info.value)
    assert f"[{rule}]" in str(info.value)
