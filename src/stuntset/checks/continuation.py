"""``check_continuation(make_host)``: a session host continues a conversation across runs.

A host (``SessionService``, or yours with its API: ``async with``, ``create_task``,
``create_session``, ``start_turn``, ``interrupt``, ``wait_idle``, ``session(id).checkpoint``
with ``resume`` and ``run_id``, and ``log``) is built by ``make_host(providers, directory)``
over a provider registry and a fresh folder for its state; called again with the same
folder it must be the same host restarted (its own storage, read back by its own
serializer). If the host has a ``close()`` method, it is called after each use. The check
plays seven turns of one session over three hosts, with a provider of its own that records
the resume handle each run was started with and whose runs complete, crash (raise), hang
until interrupted, or hang until the host stops. Six rules, each a ``ConformanceFailure``:

- ``run-id-new``: every turn gets a new run id (as returned and as logged in ``run.started``);
- ``thread-kept``: a completed run commits a checkpoint and the next turn is started with its
  resume handle (the provider's thread), also after a crashed or killed run;
- ``crashed-keeps-checkpoint``: a run whose provider raised leaves the checkpoint as it was;
- ``killed-keeps-checkpoint``: an interrupted run leaves it as it was;
- ``checkpoint-round-trips``: a restarted host reads back the same checkpoint and resumes the
  thread from it;
- ``abandoned-keeps-checkpoint``: a run still going when the host stopped leaves it as it was,
  seen by the next host.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio

from stuntset.errors import ConformanceFailure
from stuntset.events import Event, MessageCompleted, RunCompleted, RunKilled, RunStarted
from stuntset.providers.base import AgentProvider, Capabilities
from stuntset.seams import current_clock, current_ids

__all__ = ["CONTINUATION_INVARIANTS", "acheck_continuation", "check_continuation"]

#: The rules ``check_continuation`` checks, each explained.
CONTINUATION_INVARIANTS: dict[str, str] = {
    "run-id-new": "every turn of a session gets a new run id (returned and logged)",
    "thread-kept": (
        "a completed run commits a checkpoint; the next turn is started with its resume "
        "handle (the provider's thread), also after a failed run"
    ),
    "crashed-keeps-checkpoint": "a crashed run never overwrites the last committed checkpoint",
    "killed-keeps-checkpoint": "a killed run never overwrites the last committed checkpoint",
    "checkpoint-round-trips": (
        "a restarted host reads back the same checkpoint (its own serializer) and resumes "
        "the thread from it"
    ),
    "abandoned-keeps-checkpoint": (
        "a run abandoned by a stopping host never overwrites the last committed checkpoint"
    ),
}

#: Builds a host over a provider registry and the folder of its state.
ContinuationHostFactory = Callable[[Mapping[str, Callable[[], AgentProvider]], Path], Any]

_PROVIDER = "continuation"


class _Run:
    """One run: ``complete`` / ``crash`` / ``hang`` (until interrupted or the host stops)."""

    def __init__(self, provider: _ThreadProvider, prompt: str) -> None:
        self.provider = provider
        self.prompt = prompt
        self.run_id = current_ids().new("run")
        self._interrupted = anyio.Event()

    @property
    def session_id(self) -> str:
        return self.provider.session_id

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events()

    async def _events(self) -> AsyncIterator[Event]:
        now = current_clock().now
        yield RunStarted(
            run_id=self.run_id, ts=now(), session_id=self.session_id, provider=_PROVIDER
        )
        if self.prompt == "crash":
            raise RuntimeError("check_continuation: the provider broke mid-run")
        if self.prompt == "hang":
            self.provider.hanging.set()
            await self._interrupted.wait()
            yield RunKilled(run_id=self.run_id, ts=now(), reason="interrupted")
            return
        text = f"answer to {self.prompt}"
        yield MessageCompleted(run_id=self.run_id, ts=now(), item_id=f"m-{self.run_id}", text=text)
        yield RunCompleted(run_id=self.run_id, ts=now())

    async def interrupt(self, reason: str = "interrupted") -> None:
        self._interrupted.set()

    async def respond(self, request_id: str, decision: str) -> None:
        raise RuntimeError("check_continuation's runs ask nothing")


class _ThreadProvider:
    """A provider whose thread id is kept when it is resumed; it records every start."""

    def __init__(self, starts: list[tuple[str, str | None]], hanging: anyio.Event) -> None:
        self._session_id = f"thread-{current_ids().new('thread')}"
        self.starts = starts
        self.hanging = hanging
        self.runs: list[_Run] = []

    @property
    def name(self) -> str:
        return _PROVIDER

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(interrupt=True, resume=True)

    @property
    def session_id(self) -> str:
        return self._session_id

    def start(self, prompt: str, *, resume: str | None = None) -> _Run:
        self.starts.append((prompt, resume))
        if resume is not None:
            self._session_id = resume
        run = _Run(self, prompt)
        self.runs.append(run)
        return run

    async def aclose(self) -> None:
        for run in self.runs:
            await run.interrupt()


class _Play:
    """The state of one check: the providers' starts and the hosts it made."""

    def __init__(self, make_host: ContinuationHostFactory, directory: Path, timeout: float):
        self.make_host = make_host
        self.directory = directory
        self.timeout = timeout
        self.starts: list[tuple[str, str | None]] = []
        self.hanging = anyio.Event()
        self.providers: list[_ThreadProvider] = []

    def registry(self) -> dict[str, Callable[[], AgentProvider]]:
        def make() -> AgentProvider:
            provider = _ThreadProvider(self.starts, self.hanging)
            self.providers.append(provider)
            return provider

        return {_PROVIDER: make}

    @contextlib.asynccontextmanager
    async def host(self) -> AsyncIterator[Any]:
        self.hanging = anyio.Event()
        host = self.make_host(self.registry(), self.directory)
        try:
            async with host:
                yield host
        finally:
            for provider in self.providers:  # nothing of ours hangs past its host
                await provider.aclose()
            close = getattr(host, "close", None)
            if callable(close):
                close()

    async def turn(self, host: Any, session_id: str, prompt: str) -> tuple[str, str | None]:
        """Start a turn and wait for it (a ``hang`` turn: until it is running); the run id
        the host returned and the resume handle the provider was started with."""
        run = await host.start_turn(session_id, prompt)
        with anyio.fail_after(self.timeout):
            if prompt == "hang":
                await self.hanging.wait()
            else:
                await host.wait_idle(session_id)
        return str(run.run_id), self.starts[-1][1]


def _fail(rule: str, message: str) -> ConformanceFailure:
    return ConformanceFailure(
        f"check_continuation [{rule}]: {message}",
        invariant=rule,
        scenario=None,
        provider=_PROVIDER,
    )


def _show(checkpoint: Any) -> str:
    if checkpoint is None:
        return "none"
    return f"(resume={checkpoint.resume!r}, run_id={checkpoint.run_id!r})"


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return bool(a == b) and (a.resume, a.run_id) == (b.resume, b.run_id)


async def _play(p: _Play) -> None:
    runs: list[str] = []

    def new_run(host: Any, session_id: str, run_id: str, turn: str) -> None:
        logged = [e.run_id for e in host.log.read(session_id) if isinstance(e, RunStarted)]
        if run_id in runs:
            raise _fail(
                "run-id-new",
                f"the {turn} turn got run id {run_id!r}, the id of an earlier run "
                f"(run ids so far: {runs})",
            )
        if not logged or logged[-1] != run_id:
            raise _fail(
                "run-id-new",
                f"the {turn} turn returned run id {run_id!r} but the log's last run.started "
                f"is for {logged[-1] if logged else None!r}",
            )
        runs.append(run_id)

    def committed(host: Any, session_id: str, run_id: str) -> Any:
        checkpoint = host.session(session_id).checkpoint
        if checkpoint is None or checkpoint.run_id != run_id:
            raise _fail(
                "thread-kept",
                f"run {run_id!r} completed but the session's checkpoint is {_show(checkpoint)}",
            )
        return checkpoint

    def resumed(resume: str | None, checkpoint: Any, turn: str, rule: str = "thread-kept") -> None:
        if resume != checkpoint.resume:
            raise _fail(
                rule,
                f"the {turn} turn was started with resume={resume!r}, not the checkpoint's "
                f"{checkpoint.resume!r} (the thread of run {checkpoint.run_id!r})",
            )

    def kept(host: Any, session_id: str, before: Any, rule: str, what: str) -> None:
        now = host.session(session_id).checkpoint
        if not _same(now, before):
            raise _fail(
                rule,
                f"after {what} the checkpoint is {_show(now)}; it was {_show(before)} and "
                "only a completed run may write it",
            )

    async with p.host() as host:
        task = host.create_task(str(p.directory / "workdir"))
        session_id = str(host.create_session(task.task_id, _PROVIDER).session_id)
        first, _ = await p.turn(host, session_id, "one")
        new_run(host, session_id, first, "first")
        checkpoint = committed(host, session_id, first)
        second, resume = await p.turn(host, session_id, "two")
        new_run(host, session_id, second, "second")
        resumed(resume, checkpoint, "second")
        checkpoint = committed(host, session_id, second)

        crashed, resume = await p.turn(host, session_id, "crash")
        new_run(host, session_id, crashed, "crashing")
        kept(host, session_id, checkpoint, "crashed-keeps-checkpoint", f"run {crashed!r} crashed")

        killed, resume = await p.turn(host, session_id, "hang")
        new_run(host, session_id, killed, "interrupted")
        await host.interrupt(session_id, "check_continuation interrupts it")
        with anyio.fail_after(p.timeout):
            await host.wait_idle(session_id)
        kept(host, session_id, checkpoint, "killed-keeps-checkpoint", f"run {killed!r} was killed")

        after, resume = await p.turn(host, session_id, "three")
        new_run(host, session_id, after, "fifth")
        resumed(resume, checkpoint, "turn after a crashed and a killed run")
        checkpoint = committed(host, session_id, after)

    async with p.host() as host:
        read = host.session(session_id).checkpoint
        if not _same(read, checkpoint):
            raise _fail(
                "checkpoint-round-trips",
                f"the restarted host reads the checkpoint as {_show(read)}; the host before "
                f"it had {_show(checkpoint)}",
            )
        abandoned, resume = await p.turn(host, session_id, "hang")
        new_run(host, session_id, abandoned, "abandoned")
        resumed(resume, checkpoint, "first turn on the restarted host", "checkpoint-round-trips")

    async with p.host() as host:
        kept(
            host,
            session_id,
            checkpoint,
            "abandoned-keeps-checkpoint",
            f"run {abandoned!r} was abandoned by the stopping host",
        )
        last, resume = await p.turn(host, session_id, "four")
        new_run(host, session_id, last, "last")
        resumed(resume, checkpoint, "turn after the abandoned run")


async def _run(p: _Play) -> None:
    """``_play``, with a failure raised inside a host's task group unwrapped."""
    try:
        await _play(p)
    except BaseExceptionGroup as group:
        matched, _ = group.split(ConformanceFailure)
        found: BaseException | None = matched
        while isinstance(found, BaseExceptionGroup):
            found = found.exceptions[0]
        if isinstance(found, ConformanceFailure):
            raise found from None
        raise


async def acheck_continuation(
    make_host: ContinuationHostFactory,
    *,
    directory: Path | None = None,
    timeout: float = 10.0,
) -> None:
    """``check_continuation`` inside a running event loop."""
    if directory is not None:
        await _run(_Play(make_host, Path(directory), timeout))
        return
    with tempfile.TemporaryDirectory(prefix="stuntset-continuation-") as folder:
        await _run(_Play(make_host, Path(folder), timeout))


def check_continuation(
    make_host: ContinuationHostFactory,
    *,
    directory: Path | None = None,
    timeout: float = 10.0,
) -> None:
    """Check that the host ``make_host(providers, directory)`` builds keeps a session's
    thread across runs with a new run id each, never lets a crashed, killed or abandoned run
    overwrite the last committed checkpoint, and reads its checkpoint back after a restart.
    ``ConformanceFailure`` names the rule (``CONTINUATION_INVARIANTS``) and what it saw;
    ``directory`` (default: a temporary one) holds the host's state; each wait is bounded
    by ``timeout`` seconds."""

    async def main() -> None:
        await acheck_continuation(make_host, directory=directory, timeout=timeout)

    anyio.run(main)
