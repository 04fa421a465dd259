"""``codex exec --json`` read as normalized events: the adapter of drift's ``codex-exec`` column.

openai-codex, the Python SDK, drives only ``codex app-server``; ``codex exec`` has no Python
SDK. So this reads it the way ``@openai/codex-sdk`` (TypeScript, protocols.md §6.1 and §6.5)
does: the same command line (``exec --experimental-json``, ``--skip-git-repo-check``,
``--cd``), the prompt written to stdin and stdin closed, every stdout line one JSON event.
Both sides of the column — the real ``codex`` over the model double, and the fake — are read
by this one adapter.

=========================================================  ===================================
``codex exec --json``                                      normalized
=========================================================  ===================================
``thread.started``                                         ``run.started`` (its ``thread_id``
                                                           is the session)
``item.completed`` ``agent_message`` / ``reasoning``       ``message.delta`` +
                                                           ``message.completed`` (reasoning
                                                           alike): exec streams no deltas
``item.started`` / ``item.completed`` of                   ``tool.started`` / ``tool.completed``
``command_execution``, ``file_change``, ``mcp_tool_call``, (an error when failed, declined or a
``web_search``                                             non-zero exit)
``turn.completed``                                         ``usage`` (when tokens were
                                                           reported), ``run.completed``
``turn.failed``                                            ``run.crashed``, its kind from the
                                                           HTTP status the message names
``error`` lines (retry notices), ``error`` items           nothing
(warnings), ``todo_list`` items, ``turn.started``
=========================================================  ===================================

A line that is not JSON (or not UTF-8), an item that completes or changes without having
started, or a line after the turn ended is ``run.crashed`` (``protocol``); stdout ending before
``turn.completed`` / ``turn.failed`` is ``run.crashed`` (``exited``, with the exit code and
stderr's last line); a binary that cannot be started is ``spawn_failed``. The terminal event
is held until stdout ends, so a line after the turn still counts. ``interrupt()`` stops the
process (SIGTERM, as the TypeScript SDK's abort signal does): ``run.killed``.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import signal
import tempfile
from typing import IO, Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from stuntset.events import CrashKind, Event, RunCompleted, RunCrashed, RunKilled, RunStarted
from stuntset.providers._codex_turn_items import ItemNames, TurnItems
from stuntset.providers._crash_kinds import status_crash
from stuntset.providers.base import Capabilities
from stuntset.seams import current_clock, current_ids

from ._ending import Sigterms, last_line, stop

__all__ = ["ExecProvider", "ExecRun", "failure_of"]

CAPABILITIES = Capabilities(interrupt=True, reasoning=True, usage=True)
#: exec's (snake_case, as ``@openai/codex-sdk`` types them) names for what ``TurnItems`` reads;
#: the renderings that differ from the app-server's (``file_change`` output without its
#: status, an MCP result as it is) are how this reader has always said them.
EXEC = ItemNames(
    message="agent_message",
    tools={
        kind: kind for kind in ("command_execution", "file_change", "mcp_tool_call", "web_search")
    },
    aggregated_output="aggregated_output",
    exit_code="exit_code",
    input_tokens="input_tokens",
    output_tokens="output_tokens",
    command_input=("command",),
    reasoning_text=("text",),
    text_started=False,
    change_status=False,
    mcp_text=False,
)
_LINE_LIMIT = 16 * 1024 * 1024
#: ``exceeded retry limit, last status: 429 …`` / ``unexpected status 401 Unauthorized: …``
_STATUS = re.compile(r"(?:last status:|unexpected status)\s+(\d{3})\b")


def failure_of(message: str) -> tuple[CrashKind, bool]:
    """The crash kind and retryability of a ``turn.failed`` message (exec gives only text)."""
    found = _STATUS.search(message)
    if found is not None:
        kind, _, retryable = status_crash(int(found.group(1)), message)
        return kind, retryable
    if "stream disconnected" in message:
        return "protocol", True
    if "experiencing high demand" in message:  # how codex words a 5xx from the model API
        return "http", True
    return "internal", False


class ExecProvider:
    """Runs ``binary exec --experimental-json`` in ``cwd`` with ``env`` added to this process's
    environment; one process per run. ``session_id`` (a thread id) resumes that thread with
    ``exec resume``."""

    __test__ = False

    def __init__(
        self,
        binary: str,
        *,
        cwd: str,
        env: dict[str, str] | None = None,
        session_id: str = "",
        close_timeout: float = 10.0,
    ) -> None:
        self.binary = binary
        self.cwd = cwd
        self.env = dict(env or {})
        self.close_timeout = close_timeout
        self.clock = current_clock()
        self.ids = current_ids()
        self._session_id = session_id
        self.runs: list[ExecRun] = []

    @property
    def name(self) -> str:
        return "codex-exec"

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    @property
    def session_id(self) -> str:
        return self._session_id

    def argv(self, resume: str) -> list[str]:
        """The command line (the TypeScript SDK's, with what drift needs)."""
        argv = [self.binary, "exec", "--experimental-json", "--skip-git-repo-check"]
        argv += ["--cd", self.cwd]
        return argv + (["resume", resume] if resume else [])

    def start(self, prompt: str, *, resume: str | None = None) -> ExecRun:
        if resume is not None:
            self._session_id = resume
        run = ExecRun(self, str(self.ids.new("run")), prompt, self._session_id)
        self.runs.append(run)
        return run

    async def aclose(self) -> None:
        for run in self.runs:
            await run.aclose()


class ExecRun:
    """One ``codex exec`` process; its stdout read as the run is iterated."""

    __test__ = False

    def __init__(self, provider: ExecProvider, run_id: str, prompt: str, resume: str) -> None:
        self._provider = provider
        self._run_id = run_id
        self._resume = resume
        self._session_id = resume
        self.prompt = prompt
        self.events: list[Event] = []
        self.finished = False
        self._ready: collections.deque[Event] = collections.deque()
        self._process: Process | None = None
        self._stdout: BufferedByteReceiveStream | None = None
        self._spawned = False
        self._began = False
        #: The turn's end (its event class and fields), delivered once stdout ends.
        self._held: tuple[type[Any], dict[str, Any]] | None = None
        self._over = False  # the terminal event is queued: nothing more is read
        self._eof = False
        self._stderr: IO[bytes] | None = None
        self._killed: str | None = None
        self._sigterms = Sigterms()
        self._items = TurnItems(EXEC, self._emit, _OutOfOrder)
        self._known_items: set[str] = set()
        self._last_error = ""
        #: The turn's end beyond the events: ``status`` (``completed``/``failed``, from the
        #: event that ended it), ``usage`` (whether ``turn.completed`` carried one).
        self.result_fields: dict[str, Any] = {}

    @property
    def run_id(self) -> str:
        return self._run_id

    @property
    def session_id(self) -> str:
        return self._session_id

    def __aiter__(self) -> ExecRun:
        return self

    async def __anext__(self) -> Event:
        if self.finished:
            raise StopAsyncIteration
        while not self._ready:
            await self._advance()
        event = self._ready.popleft()
        self.events.append(event)
        if event.terminal:
            self.finished = True
        return event

    # --- events -----------------------------------------------------------------------------

    def _emit(self, cls: type[Any], **fields: Any) -> None:
        if not self._began:
            self._began = True
            started = RunStarted(
                run_id=self._run_id,
                ts=self._provider.clock.now(),
                session_id=self._session_id,
                provider=self._provider.name,
            )
            self._ready.append(started)
        if cls is RunStarted:
            return
        self._ready.append(cls(run_id=self._run_id, ts=self._provider.clock.now(), **fields))

    def _end(self, cls: type[Any], **fields: Any) -> None:
        """Queue the terminal event now; stop the process (nothing more is read)."""
        self._emit(cls, **fields)
        self._over = True
        stop(self._process)

    def _broken(self, message: str) -> None:
        self._end(RunCrashed, kind="protocol", message=message, retryable=False)

    # --- the process ------------------------------------------------------------------------

    async def _spawn(self) -> None:
        self._spawned = True
        if self._killed is not None:
            self._end(RunKilled, reason=self._killed)
            return
        provider = self._provider
        # a file, not a pipe: a chatty stderr never blocks it; closed by aclose()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._process = await anyio.open_process(
                provider.argv(self._resume),
                cwd=provider.cwd,
                env={**os.environ, **provider.env},
                stderr=self._stderr,
            )
        except OSError as error:
            self._end(RunCrashed, kind="spawn_failed", message=str(error), retryable=False)
            return
        if self._interrupted():  # while it was being started
            self._sigterms.send(self._process)
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        # it may have exited at once: what it said is on stdout
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await self._process.stdin.send(self.prompt.encode())
        await self._process.stdin.aclose()
        self._stdout = BufferedByteReceiveStream(self._process.stdout)

    async def _advance(self) -> None:
        if self._over:  # pragma: no cover - the terminal event is queued first
            raise StopAsyncIteration
        if not self._spawned:
            await self._spawn()
            return
        assert self._stdout is not None
        if self._eof:
            await self._ended()
            return
        try:
            line = await self._sigterms.receive_line(
                self._stdout, _LINE_LIMIT, self._process, self._provider.close_timeout
            )
        except anyio.IncompleteRead:  # stdout ended, maybe in the middle of a line
            self._eof = True
            self._line(bytes(self._stdout.buffer))
            return
        except anyio.DelimiterNotFound:
            self._broken(f"a stdout line over {_LINE_LIMIT} bytes")
            return
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._ended()
            return
        self._line(line)

    async def _ended(self) -> None:
        """stdout is over: the held terminal event, or how the process went."""
        process = self._process
        assert process is not None
        with anyio.move_on_after(self._provider.close_timeout):
            await process.wait()
        if self._held is not None:  # the turn ended before any interrupt could
            cls, fields = self._held
            self._emit(cls, **fields)
            self._over = True
        elif self._killed is not None:
            self._end(RunKilled, reason=self._sigterms.reason(self._killed))
        else:
            code = process.returncode
            tail = last_line(self._stderr)
            said = f": {tail}" if tail else ""
            self._end(
                RunCrashed,
                kind="exited",
                message=f"codex exec exited with code {code} before the turn ended{said}",
                retryable=False,
            )

    # --- one stdout line --------------------------------------------------------------------

    def _line(self, raw: bytes) -> None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            self._broken(f"undecodable bytes from codex exec: {error}")
            return
        if not text.strip():
            return
        try:
            event = json.loads(text)
        except ValueError:
            self._broken(f"a stdout line that is not JSON: {text[:200]!r}")
            return
        if not isinstance(event, dict):
            self._broken(f"a stdout line that is not a JSON object: {text[:200]!r}")
            return
        if self._held is not None:
            self._broken(f"a line after the turn ended: {text[:200]!r}")
            return
        self._event(event)

    def _event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        item = event.get("item")
        item = item if isinstance(item, dict) else {}
        if kind == "thread.started":
            self._session_id = str(event.get("thread_id") or "")
            self._provider._session_id = self._session_id
            self._emit(RunStarted)
        elif kind == "item.started":
            self._known_items.add(str(item.get("id")))
            self._items.started(item)
        elif kind == "item.updated":
            if str(item.get("id")) not in self._known_items:
                self._broken(f"item {item.get('id')!r} changed, never started")
        elif kind == "item.completed":
            try:
                self._items.completed(item)
            except _OutOfOrder as out_of_order:
                self._broken(str(out_of_order))
        elif kind == "turn.completed":
            self.result_fields = {"status": "completed", "usage": bool(event.get("usage"))}
            self._items.add_usage(event.get("usage") or {})
            self._items.report_usage()
            self._hold(RunCompleted, stop_reason="end_turn")
        elif kind == "turn.failed":
            # not the app-server reader's: exec names a failure by its text alone
            self.result_fields = {"status": "failed", "usage": False}
            error = event.get("error")
            message = str((error or {}).get("message") if isinstance(error, dict) else error)
            failure, retryable = failure_of(message or self._last_error)
            self._hold(RunCrashed, kind=failure, message=message, retryable=retryable)
        elif kind == "error":
            self._last_error = str(event.get("message") or "")

    def _hold(self, cls: type[Any], **fields: Any) -> None:
        self._emit(RunStarted)
        self._held = (cls, fields)

    # --- steering ---------------------------------------------------------------------------

    async def respond(self, request_id: str, decision: str) -> None:
        from stuntset.errors import UsageError

        raise UsageError(
            f"run {self._run_id!r} has no open request {request_id!r}: codex exec never asks"
        )

    async def interrupt(self, reason: str = "interrupted") -> None:
        """Stop the process: the run ends with ``run.killed`` (a no-op once the turn has
        ended, even if the process has not exited yet)."""
        if self.finished or self._over or self._held is not None or self._killed is not None:
            return
        self._killed = reason
        self._sigterms.send(self._process)

    def _interrupted(self) -> bool:
        return self._killed is not None

    async def aclose(self) -> None:
        """Stop the process for good and reap it."""
        process = self._process
        if process is not None:
            if process.returncode is None:
                if self._killed is None and not self._over and self._held is None:
                    self._killed = "closed"
                stop(process)
            with anyio.CancelScope(shield=True):
                with anyio.move_on_after(self._provider.close_timeout):
                    await process.wait()
                if process.returncode is None:
                    stop(process, signal.SIGKILL)
                    await process.wait()
                await process.aclose()
        if self._stderr is not None:
            self._stderr.close()


class _OutOfOrder(Exception):
    """An item completed that never started: the turn is broken (``protocol``)."""
