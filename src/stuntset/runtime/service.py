"""``SessionService``: the reference host — tasks → sessions → runs, events into the log.

Use it as an async context manager (it owns the tasks that pump runs)::

    async with SessionService(log=log, store=store, providers={"scripted": make}) as host:
        task = host.create_task("/abs/workdir")
        session = host.create_session(task.task_id, "scripted")
        run = await host.start_turn(session.session_id, "hello")
        await host.wait_idle(session.session_id)

Events flow one way: provider → ``EventLog`` (under the host's session id) → subscribers.
The rules users rely on:

- A new turn in a session keeps the session (and the provider's thread); the run id is new.
- A provider that raises mid-turn becomes ``run.crashed`` in the log; the session stays usable.
- The session's checkpoint (the provider's resume handle) is written only when a run
  **completes**: a crashed, killed or abandoned run never overwrites it. A new turn, also on
  a restarted host with a fresh provider, resumes from it.
- Stopping the host ends running turns as ``run.killed`` giving ``stop_reason`` (status
  ``abandoned``); a host that died without that is repaired the same way when the next one
  starts, and a run whose terminal event is already in the log is not ended twice.
- Every provider event is checked as the log checks it (``stuntset.log.validate``): an event
  that would not read back as given ends its run as ``run.crashed`` (kind ``protocol``).
- A turn running past ``turn_timeout`` seconds is interrupted; a provider that ignores the
  interrupt, or whose ``interrupt()`` blocks, gets ``cancel_grace`` seconds for each, then the
  host ends the run in the log itself (``run.killed`` saying so). Every ``interrupt()`` the host
  makes is bounded by ``cancel_grace``, so a stuck provider never hangs the host.

Time and ids come from the clock and id seams (``stuntset.seams``) unless given.
"""

from __future__ import annotations

import math
import os
from collections.abc import AsyncIterator, Callable, Mapping
from types import TracebackType

import anyio
import msgspec
from anyio.abc import TaskGroup

from stuntset.clock import Clock
from stuntset.errors import InvalidEvent, UsageError
from stuntset.events import Event, RunCrashed, RunKilled, RunStarted, is_terminal
from stuntset.ids import IdGenerator
from stuntset.log.base import EventLog, Subscription
from stuntset.log.validate import check_event
from stuntset.providers.base import AgentProvider, AgentRun
from stuntset.runtime.models import Checkpoint, RunRecord, RunStatus, SessionRecord, TaskRecord
from stuntset.runtime.store import SessionStore
from stuntset.seams import current_clock, current_ids

__all__ = ["ProviderFactory", "SessionService"]

#: Makes a fresh provider for a session (one per session per host process).
ProviderFactory = Callable[[], AgentProvider]

_STATUS: dict[str, RunStatus] = {
    "run.completed": "completed",
    "run.crashed": "crashed",
    "run.killed": "killed",
}


class _Active:
    __slots__ = ("appended", "done", "forced", "record", "run", "scope")

    def __init__(self, run: AgentRun, record: RunRecord, timeout: float | None) -> None:
        self.run = run
        self.record = record
        self.done = anyio.Event()
        self.appended = 0
        #: Set when the host ends the run itself (its interrupt() did not return in time).
        self.forced: str | None = None
        #: Around the relay of the run's events; its deadline is the turn timeout.
        self.scope = anyio.CancelScope(
            deadline=anyio.current_time() + timeout if timeout is not None else math.inf
        )


class SessionService:
    """Tasks, sessions and runs over an ``EventLog`` and a ``SessionStore``."""

    def __init__(
        self,
        *,
        log: EventLog,
        store: SessionStore,
        providers: Mapping[str, ProviderFactory],
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        turn_timeout: float | None = None,
        cancel_grace: float = 5.0,
        max_idle_providers: int = 64,
    ) -> None:
        self.log = log
        #: How many providers of idle sessions are kept open for their next turn; beyond it
        #: the least recently used is closed (a session's next turn opens a new one, resuming
        #: from its checkpoint), so sessions never closed cost no memory (issue #33).
        self.max_idle_providers = max(0, max_idle_providers)
        #: Seconds a turn may run before the host interrupts it (``None``: no limit).
        self.turn_timeout = turn_timeout
        #: Seconds the host gives a provider's ``interrupt()`` to return, and then its run to end.
        self.cancel_grace = cancel_grace
        self.store = store
        self.registry = dict(providers)
        self.clock = clock if clock is not None else current_clock()
        self.ids = ids if ids is not None else current_ids()
        self._providers: dict[str, AgentProvider] = {}
        self._active: dict[str, _Active] = {}
        self._tg: TaskGroup | None = None
        #: The reason the ``run.killed`` of a run still running when the host stops gives.
        self.stop_reason = "abandoned: the host stopped"

    # --- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> SessionService:
        self._recover()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        tg, self._tg = self._tg, None
        if tg is not None:
            tg.cancel_scope.cancel()  # running turns end as abandoned (see _pump)
            await tg.__aexit__(exc_type, exc, tb)
        for provider in self._providers.values():
            with anyio.CancelScope(shield=True):
                await provider.aclose()
        self._providers.clear()

    def _recover(self) -> None:
        """Runs a previous host left ``running`` are abandoned: end them in the log too."""
        for record in self.store.all(RunRecord):
            if record.status == "running":
                self._abandon(record, "abandoned: the host restarted")

    def _abandon(self, record: RunRecord, reason: str) -> None:
        events = self.log.read(record.session_id)
        mine = [e for e in events if e.run_id == record.run_id]
        if not any(is_terminal(e) for e in mine):
            ended: list[Event] = []
            if not mine:
                ended.append(self._started(record.run_id, record.session_id, "unknown"))
            ended.append(RunKilled(run_id=record.run_id, ts=self.clock.now(), reason=reason))
            self.log.append(record.session_id, ended)
        self._finish(record, "abandoned")

    # --- tasks and sessions ---------------------------------------------------------------

    def create_task(self, workdir: str | os.PathLike[str]) -> TaskRecord:
        """A task in ``workdir``, which must be an absolute path."""
        path = os.fspath(workdir)
        if not os.path.isabs(path):
            raise UsageError(
                f"create_task: workdir must be an absolute path, got {path!r} "
                "(resolve it first, e.g. Path(workdir).resolve())"
            )
        task = TaskRecord(task_id=self.ids.new("task"), workdir=path, created_at=self.clock.now())
        self.store.put(task)
        return task

    def create_session(self, task_id: str, provider: str) -> SessionRecord:
        """A session on ``task_id`` with the provider registered as ``provider``."""
        if self.store.get(TaskRecord, task_id) is None:
            raise UsageError(f"create_session: no task {task_id!r}; create it with create_task")
        if provider not in self.registry:
            known = ", ".join(sorted(self.registry)) or "none"
            raise UsageError(
                f"create_session: no provider named {provider!r} in the registry (known: {known})"
            )
        session = SessionRecord(
            session_id=self.ids.new("session"),
            task_id=task_id,
            provider=provider,
            created_at=self.clock.now(),
        )
        self.store.put(session)
        return session

    def session(self, session_id: str) -> SessionRecord:
        """The session's row (with its checkpoint); ``UsageError`` if there is none."""
        found = self.store.get(SessionRecord, session_id)
        if found is None:
            raise UsageError(f"no session {session_id!r}; create it with create_session")
        return found

    def runs(self, session_id: str) -> list[RunRecord]:
        """The session's runs, oldest first."""
        return self.store.all(RunRecord, session_id=session_id)

    def subscribe(
        self, session_id: str, after: int = 0, *, epoch: int | None = None
    ) -> Subscription:
        """The session's events after ``after``: replay, then live.

        A client resuming after being away passes the ``epoch`` its ``after`` belongs to
        (the subscription's ``epoch`` with its ``cursor``): if a rollback since went below
        it, ``StaleCursor`` says where to resume (``resume_at``). See ``stuntset.log.base``.
        """
        self.session(session_id)
        return self.log.subscribe(session_id, after=after, epoch=epoch)

    async def close_session(self, session_id: str) -> None:
        """End the running turn (if any) and refuse new turns."""
        self.session(session_id)
        await self.interrupt(session_id, reason="session closed", missing_ok=True)
        await self.wait_idle(session_id)
        self.store.put(msgspec.structs.replace(self.session(session_id), closed=True))
        provider = self._providers.pop(session_id, None)
        if provider is not None:
            await provider.aclose()

    # --- turns ----------------------------------------------------------------------------

    async def start_turn(self, session_id: str, prompt: str) -> RunRecord:
        """Start a turn; its events go to the log as they come. Returns the run's row."""
        if self._tg is None:
            raise UsageError("start_turn: use the service as `async with SessionService(...)`")
        session = self.session(session_id)
        if session.closed:
            raise UsageError(f"start_turn: session {session_id!r} is closed")
        if session_id in self._active:
            running = self._active[session_id].record.run_id
            raise UsageError(
                f"start_turn: session {session_id!r} is still running {running!r}; "
                "wait_idle() or interrupt() first"
            )
        provider = self._providers.pop(session_id, None)
        if provider is None:
            await self._close_idle_providers(keep=self.max_idle_providers)
            provider = self.registry[session.provider]()
        self._providers[session_id] = provider  # the most recently used goes last
        resume = session.checkpoint.resume if session.checkpoint is not None else None
        run = provider.start(prompt, resume=resume)
        record = RunRecord(
            run_id=run.run_id,
            session_id=session_id,
            prompt=prompt,
            status="running",
            started_at=self.clock.now(),
        )
        self.store.put(record)
        active = self._active[session_id] = _Active(run, record, self.turn_timeout)
        self._tg.start_soon(self._pump, session_id, provider.name, active)
        return record

    async def _close_idle_providers(self, *, keep: int) -> None:
        """Close the least recently used providers of idle sessions beyond ``keep``."""
        idle = [sid for sid in self._providers if sid not in self._active]
        for session_id in idle[: max(0, len(idle) - keep)]:
            provider = self._providers.pop(session_id)
            with anyio.CancelScope(shield=True):
                await provider.aclose()

    def open_providers(self) -> int:
        """How many providers are open (running sessions and idle ones kept for reuse)."""
        return len(self._providers)

    async def interrupt(
        self, session_id: str, reason: str = "interrupted", *, missing_ok: bool = False
    ) -> None:
        """Interrupt the running turn (it ends with ``run.killed``)."""
        active = self._active.get(session_id)
        if active is None:
            if missing_ok:
                return
            raise UsageError(f"interrupt: session {session_id!r} has no running turn")
        if not await self._interrupt(active.run, reason):
            # its interrupt() hangs: the pump ends the run in the log instead
            active.forced = reason
            active.scope.cancel()

    async def respond(self, session_id: str, request_id: str, decision: str) -> None:
        """Answer an open approval (``"allow"``/``"deny"``) or input request of the turn."""
        active = self._active.get(session_id)
        if active is None:
            raise UsageError(f"respond: session {session_id!r} has no running turn")
        await active.run.respond(request_id, decision)

    async def wait_idle(self, session_id: str) -> None:
        """Wait until the session has no running turn."""
        active = self._active.get(session_id)
        if active is not None:
            await active.done.wait()

    # --- the pump -------------------------------------------------------------------------

    def _started(self, run_id: str, session_id: str, provider: str) -> RunStarted:
        return RunStarted(
            run_id=run_id, ts=self.clock.now(), session_id=session_id, provider=provider
        )

    async def _interrupt(self, run: AgentRun, reason: str) -> bool:
        """``run.interrupt(reason)``, given ``cancel_grace`` seconds (also while stopping);
        ``False`` if it did not return in time."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.cancel_grace):
            await run.interrupt(reason)
            return True
        return False

    async def _relay(self, session_id: str, active: _Active, events: AsyncIterator[Event]) -> bool:
        """Append the run's events to the log until its terminal one (``True``) or its end."""
        async for event in events:
            # refused here too, whatever log the host was given (log.validate)
            checked = check_event(event, where=f"run {active.run.run_id!r}")
            [stored] = self.log.append(session_id, [checked])
            active.appended += 1
            if is_terminal(stored):
                self._ended(active.record, stored, active.run)
                return True
        return False

    async def _time_out(
        self, session_id: str, provider_name: str, active: _Active, events: AsyncIterator[Event]
    ) -> None:
        """The turn ran out of time (or its interrupt hung): interrupt it, give it
        ``cancel_grace`` to end, else end it in the log as the host."""
        run = active.run
        reason = active.forced
        if reason is None:
            reason = (
                f"timed out: the turn ran past the host's turn_timeout of {self.turn_timeout} s"
            )
            if await self._interrupt(run, reason):
                with anyio.move_on_after(self.cancel_grace):
                    if await self._relay(session_id, active, events):
                        return
        ended: list[Event] = []
        if not active.appended:
            ended.append(self._started(run.run_id, run.session_id, provider_name))
        how = "did not end the run" if active.forced is None else "interrupt() did not return"
        ended.append(
            RunKilled(
                run_id=run.run_id,
                ts=self.clock.now(),
                reason=f"{reason} (the provider's {how} within {self.cancel_grace} s; "
                "the host ended it)",
            )
        )
        stored = self.log.append(session_id, ended)[-1]
        self._ended(active.record, stored, run)

    async def _pump(self, session_id: str, provider_name: str, active: _Active) -> None:
        run, record = active.run, active.record
        try:
            try:
                events = aiter(run)
                try:
                    with active.scope:
                        if await self._relay(session_id, active, events):
                            return
                    if active.scope.cancel_called:
                        await self._time_out(session_id, provider_name, active, events)
                        return
                finally:
                    close = getattr(events, "aclose", None)  # an async generator: finish it
                    if close is not None:
                        with anyio.CancelScope(shield=True):
                            await close()
                raise RuntimeError("the run ended without a terminal event")
            except anyio.get_cancelled_exc_class():
                await self._interrupt(run, "host stopped")
                self._abandon(record, self.stop_reason)
                raise
            except Exception as error:  # the provider broke: the run crashed, not the host
                if isinstance(error, InvalidEvent):  # refused at the door: stop the run
                    await self._interrupt(run, "it emitted an invalid event")
                crashed: list[Event] = []
                if not active.appended:
                    crashed.append(self._started(run.run_id, run.session_id, provider_name))
                crashed.append(
                    RunCrashed(
                        run_id=run.run_id,
                        ts=self.clock.now(),
                        kind="protocol" if isinstance(error, InvalidEvent) else "internal",
                        message=(
                            f"the provider emitted an event the log refuses: {error}"
                            if isinstance(error, InvalidEvent)
                            else f"the provider raised {type(error).__name__}: {error}"
                        ),
                    )
                )
                stored = self.log.append(session_id, crashed)[-1]
                self._ended(record, stored, run)
        finally:
            self._active.pop(session_id, None)
            active.done.set()

    def _ended(self, record: RunRecord, terminal: Event, run: AgentRun) -> None:
        status = _STATUS[terminal.type]
        if status == "completed":
            assert terminal.seq is not None
            checkpoint = Checkpoint(resume=run.session_id, run_id=record.run_id, seq=terminal.seq)
            self.store.set_checkpoint(record.session_id, checkpoint)
        self._finish(record, status)

    def _finish(self, record: RunRecord, status: RunStatus) -> None:
        self.store.put(msgspec.structs.replace(record, status=status, ended_at=self.clock.now()))
