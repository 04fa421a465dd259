"""``ClaudeCodeProvider``: Claude Code (through ``claude-agent-sdk``) behind the normalized
provider interface. Install with ``stuntset[claude]``.

Each run is one ``ClaudeSDKClient`` session (one CLI process, partial messages on) owned by
a background task of its own, so the run may be iterated, interrupted, answered and closed
from any task. What the SDK yields becomes normalized events:

=============================================  ==============================================
claude-agent-sdk                               normalized
=============================================  ==============================================
``text_delta`` / ``thinking_delta`` partials   ``message.delta`` / ``reasoning.delta``
``TextBlock`` / ``ThinkingBlock``              ``message.completed`` / ``reasoning.completed``
``ToolUseBlock``                               ``tool.started`` (``server`` set for an MCP
                                               tool, ``mcp__<server>__<tool>``)
``ToolResultBlock`` (in a user message)        ``tool.completed`` (``is_error`` as reported)
``can_use_tool``                               ``approval.requested`` → ``respond()`` →
                                               ``approval.resolved`` (a deny is sent back as
                                               a deny: the CLI reports the tool as refused)
``can_use_tool`` for ``AskUserQuestion``       ``input.requested`` → ``respond(text)`` →
                                               ``input.resolved`` (the answer goes back as
                                               the tool's updated input)
``ResultMessage``                              ``usage`` (when the CLI reported tokens), then
                                               ``run.completed``; an error result →
                                               ``run.crashed``; an interrupted turn →
                                               ``run.killed``
``CLINotFoundError`` / ``ProcessError`` / …    ``run.crashed`` with its kind (``spawn_failed``,
                                               ``auth``, ``rate_limited``, ``overloaded``,
                                               ``http``, ``protocol``, ``exited``,
                                               ``timeout``, ``internal``) and retryability
=============================================  ==============================================

The resume handle is the Claude session id. A new session gets a fresh UUID passed as
``--session-id``, so ``run.started`` carries it from the first event; ``start(resume=id)``
(on this or a new provider) runs ``--resume=<id>``. The CLI runs on asyncio here (the run's
task is an asyncio task).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any, cast

import anyio
import sniffio
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    CLIConnectionError,
    CLIJSONDecodeError,
    CLINotFoundError,
    PermissionResultAllow,
    PermissionResultDeny,
    ProcessError,
    ResultError,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolPermissionContext,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk._errors import MessageParseError

from stuntset.errors import UsageError
from stuntset.events import (
    ApprovalRequested,
    ApprovalResolved,
    CrashKind,
    Event,
    InputRequested,
    InputResolved,
    MessageCompleted,
    MessageDelta,
    ReasoningCompleted,
    ReasoningDelta,
    RunCompleted,
    RunCrashed,
    RunKilled,
    RunStarted,
    ToolCompleted,
    ToolStarted,
    Usage,
)
from stuntset.providers._crash_kinds import status_crash
from stuntset.providers._queue import EventQueue, QueuedRun
from stuntset.providers.base import Capabilities, told
from stuntset.seams import current_clock, current_ids

__all__ = ["ClaudeCodeProvider", "ClaudeCodeRun", "crash_of"]

CAPABILITIES = Capabilities(
    approvals=True, input_requests=True, interrupt=True, resume=True, reasoning=True, usage=True
)
_ASK_TOOL = "AskUserQuestion"
_NAMESPACE = uuid.UUID("6f1c3d52-5f0e-4b8e-9f57-2b6a1c0d7e11")


def crash_of(error: BaseException) -> tuple[CrashKind, str, bool]:
    """The ``run.crashed`` (kind, message, retryable) for an exception out of the SDK."""
    text = str(error) or type(error).__name__
    if isinstance(error, CLINotFoundError):
        return "spawn_failed", text, False
    if isinstance(error, ResultError):
        status = getattr(error, "api_error_status", None)
        if isinstance(status, int):
            return status_crash(status, text)
        return "exited", text, False
    if isinstance(error, ProcessError):
        return "exited", text, False
    if isinstance(error, CLIJSONDecodeError | MessageParseError | _OutOfOrder):
        return "protocol", text, False
    if isinstance(error, UnicodeDecodeError):
        return "protocol", f"undecodable bytes from the CLI: {text}", False
    if isinstance(error, CLIConnectionError):
        if "Working directory" in text or "not found" in text:
            return "spawn_failed", text, False
        return "exited", text, False
    if isinstance(error, TimeoutError) or "timeout" in text.lower():
        return "timeout", text, True
    return "internal", f"{type(error).__name__}: {text}", False


def mcp_server_of(name: str) -> str | None:
    """The MCP server of a tool Claude Code names ``mcp__<server>__<tool>``, else ``None``."""
    server, sep, tool = name.removeprefix("mcp__").partition("__")
    return server if name.startswith("mcp__") and sep and server and tool else None


class _OutOfOrder(Exception):
    """The CLI's messages arrived in an impossible order."""


def _result_crash(result: ResultMessage, synthetic: str | None) -> tuple[CrashKind, str, bool]:
    """The crash an error ``result`` stands for."""
    errors = "; ".join(result.errors or [])
    message = errors or synthetic or result.result or result.subtype
    if result.api_error_status is not None:
        return status_crash(result.api_error_status, message)
    if result.subtype == "error_max_turns":
        return "internal", message, False
    return "exited", message, False


class ClaudeCodeProvider:
    """Starts Claude Code runs with ``options`` (a ``ClaudeAgentOptions``; ``cli_path``
    points at the CLI, e.g. the fake one from ``stuntset.install_cli``).

    ``close_timeout`` bounds how long closing a run waits for the CLI to exit. ``clock`` and
    ``ids`` default to the seams in force.
    """

    __test__ = False

    def __init__(
        self,
        options: ClaudeAgentOptions | None = None,
        *,
        name: str = "claude-code",
        session_id: str | None = None,
        close_timeout: float = 10.0,
        clock: Any = None,
        ids: Any = None,
    ) -> None:
        self.options = options if options is not None else ClaudeAgentOptions()
        for field in ("can_use_tool", "resume", "session_id", "continue_conversation"):
            if getattr(self.options, field):
                raise UsageError(
                    f"ClaudeCodeProvider sets options.{field} itself (approvals arrive as "
                    f"approval.requested events; sessions are resumed with start(resume=...)); "
                    f"leave it unset"
                )
        self._name = name
        self.close_timeout = close_timeout
        self.clock = clock if clock is not None else current_clock()
        self.ids = ids if ids is not None else current_ids()
        self._session_id = session_id or self._new_session()
        self._fresh = session_id is None
        self.runs: list[ClaudeCodeRun] = []

    def _new_session(self) -> str:
        return str(uuid.uuid5(_NAMESPACE, self.ids.new("session")))

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    @property
    def session_id(self) -> str:
        return self._session_id

    def start(self, prompt: str, *, resume: str | None = None) -> ClaudeCodeRun:
        if resume is not None:
            self._session_id, self._fresh = resume, False
        fresh, self._fresh = self._fresh, False
        run = ClaudeCodeRun(self, self.ids.new("run"), prompt, self._session_id, new=fresh)
        self.runs.append(run)
        return run

    def _adopt(self, session_id: str) -> None:
        """The CLI named the session differently (it ignored ``--session-id``)."""
        self._session_id = session_id

    async def aclose(self) -> None:
        for run in self.runs:
            await run.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(cli_path={self.options.cli_path!r}, session_id={self._session_id!r})"


class _Request:
    """An open approval or input request, answered by ``respond()``."""

    def __init__(self, kind: str, question: str | None) -> None:
        self.kind = kind
        self.question = question
        self.answer: str | None = None
        self.answered = anyio.Event()


class ClaudeCodeRun(QueuedRun):
    """One Claude Code turn. Its CLI session lives in a task of its own; events flow to the
    iterator through a queue, so nothing the consumer does blocks the CLI."""

    __test__ = False

    def __init__(
        self, provider: ClaudeCodeProvider, run_id: str, prompt: str, session_id: str, *, new: bool
    ) -> None:
        self._provider = provider
        self._run_id = run_id
        self._session_id = session_id
        self._new = new
        self.prompt = prompt
        self.events: list[Event] = []
        self.finished = False
        self._started = False
        self._killed: str | None = None
        self._terminal_sent = False
        self._terminal: Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._scope: anyio.CancelScope | None = None
        self._client: ClaudeSDKClient | None = None
        self._connected = False
        self._queue = EventQueue()  # ended once the session task is over
        self._requests: dict[str, _Request] = {}
        self._open: dict[str, tuple[str, str]] = {}  # "text"/"thinking" → (item id, text so far)
        self._tools_open: set[str] = set()
        self._synthetic: str | None = None
        #: What the CLI's final ``ResultMessage`` said beyond the events (empty until it
        #: came): ``subtype``, ``is_error``, ``api_error_status``, ``usage`` (present or not).
        self.result_fields: dict[str, Any] = {}

    # --- events out ---

    def _event(self, cls: type[Any], **fields: Any) -> Event:
        event: Event = cls(run_id=self._run_id, ts=self._provider.clock.now(), **fields)
        return event

    def _emit(self, cls: type[Any], **fields: Any) -> None:
        if self._terminal_sent:
            return
        event = self._event(cls, **fields)
        if event.terminal:  # held back until the CLI session is closed and its process gone
            self._terminal_sent = True
            self._terminal = event
            return
        self._send(event)

    def _send(self, event: Event) -> None:
        self._queue.put(event)

    async def __anext__(self) -> Event:
        if self.finished:
            raise StopAsyncIteration
        if not self._started:
            library = sniffio.current_async_library()
            if library != "asyncio":
                raise UsageError(
                    f"ClaudeCodeProvider runs each CLI session in an asyncio task; iterate its "
                    f"runs under asyncio, not {library}"
                )
            self._started = True
            provider = self._provider
            if self._killed is not None:
                self._send(self._event(RunKilled, reason=self._killed))
                self._terminal_sent = True
                self._queue.end()
            else:
                self._task = asyncio.get_running_loop().create_task(
                    self._session(), name=f"stuntset claude run {self._run_id}"
                )
            return self._deliver(
                self._event(
                    RunStarted,
                    session_id=self._session_id,
                    provider=provider.name,
                    model=provider.options.model,
                )
            )
        event = await self._queue.get()
        if event is None:  # pragma: no cover - the session always queues a terminal
            raise StopAsyncIteration
        return self._deliver(event)

    def _deliver(self, event: Event) -> Event:
        self.events.append(event)
        if event.terminal:
            self.finished = True
        return told(event)

    # --- the CLI session (its own task) ---

    async def _session(self) -> None:
        provider = self._provider
        options = dataclasses.replace(
            provider.options,
            include_partial_messages=True,
            can_use_tool=self._can_use_tool,
            resume=None if self._new else self._session_id,
            session_id=self._session_id if self._new else None,
        )
        client = ClaudeSDKClient(options)
        await self._play(client, connect=client.connect, disconnect=client.disconnect)

    async def _play(
        self,
        client: ClaudeSDKClient,
        *,
        connect: Callable[[], Awaitable[None]],
        disconnect: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Play this run's prompt on ``client`` once ``connect()`` has returned: ``query()``,
        then ``receive_response()`` read into normalized events on the run's queue, ending
        with exactly one terminal (an exception, ``connect()``'s included, is mapped by
        ``crash_of``; an interrupt gives ``run.killed``). ``disconnect()``, if given, is
        awaited (shielded, bounded by ``close_timeout``) before the terminal is delivered.

        The run's own session connects and disconnects a client of its own; a caller that
        keeps one client across queries (``drift``'s ``claude-session`` column) passes no
        ``disconnect`` and a ``connect`` that only re-raises how its own connect failed."""
        self._client = client
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                try:
                    await connect()
                    self._connected = True
                    if self._killed is None:
                        await client.query(self.prompt)
                        replies = cast(AsyncGenerator[Any, None], client.receive_response())
                        async with contextlib.aclosing(replies) as messages:
                            async for message in messages:
                                self._handle(message)
                except Exception as error:
                    if self._killed is None:
                        kind, text, retryable = crash_of(error)
                        self._emit(RunCrashed, kind=kind, message=text, retryable=retryable)
            if not self._terminal_sent:
                if self._killed is not None:
                    self._emit(RunKilled, reason=self._killed)
                else:  # pragma: no cover - receive_response ends with a result
                    self._emit(
                        RunCrashed,
                        kind="protocol",
                        message="the CLI's output ended without a result",
                        retryable=False,
                    )
        finally:
            for request in self._requests.values():
                request.answered.set()
            if disconnect is not None:
                with (
                    anyio.CancelScope(shield=True),
                    anyio.move_on_after(self._provider.close_timeout),
                    contextlib.suppress(Exception),  # the run's outcome is already reported
                ):
                    await disconnect()
            self._connected = False
            if self._terminal is not None:
                self._send(self._terminal)
            self._queue.end()

    def _handle(self, message: Any) -> None:
        if isinstance(message, StreamEvent):
            self._partial(message.event)
        elif isinstance(message, AssistantMessage):
            if message.model == "<synthetic>":  # the CLI's own API-error notice
                self._synthetic = " ".join(
                    b.text for b in message.content if isinstance(b, TextBlock)
                )
                return
            for block in message.content:
                if isinstance(block, TextBlock):
                    self._complete("text", block.text)
                elif isinstance(block, ThinkingBlock):
                    self._complete("thinking", block.thinking)
                elif isinstance(block, ToolUseBlock) and block.id not in self._tools_open:
                    self._tools_open.add(block.id)
                    self._emit(
                        ToolStarted,
                        tool_call_id=block.id,
                        name=block.name,
                        input=block.input,
                        server=mcp_server_of(block.name),
                    )
        elif isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if not isinstance(block, ToolResultBlock):
                    continue
                if block.tool_use_id not in self._tools_open:
                    raise _OutOfOrder(
                        f"a tool result for {block.tool_use_id!r}, a tool call that was never "
                        f"made (or already answered)"
                    )
                self._tools_open.discard(block.tool_use_id)
                self._emit(
                    ToolCompleted,
                    tool_call_id=block.tool_use_id,
                    output=block.content,
                    is_error=bool(block.is_error),
                )
        elif isinstance(message, SystemMessage):
            session = message.data.get("session_id")
            if message.subtype == "init" and isinstance(session, str) and session:
                self._adopt(session)
        elif isinstance(message, ResultMessage):
            self._result(message)

    def _adopt(self, session: str) -> None:
        if session != self._session_id:
            self._session_id = session
            self._provider._adopt(session)

    def _partial(self, event: dict[str, Any]) -> None:
        if event.get("type") != "content_block_delta":
            return
        delta = event.get("delta") or {}
        if delta.get("type") == "text_delta" and delta.get("text"):
            self._delta("text", str(delta["text"]))
        elif delta.get("type") == "thinking_delta" and delta.get("thinking"):
            self._delta("thinking", str(delta["thinking"]))

    def _delta(self, kind: str, text: str) -> None:
        item_id, so_far = self._open.get(kind) or (
            self._provider.ids.new("msg" if kind == "text" else "reasoning"),
            "",
        )
        self._open[kind] = (item_id, so_far + text)
        self._emit(MessageDelta if kind == "text" else ReasoningDelta, item_id=item_id, text=text)

    def _complete(self, kind: str, text: str) -> None:
        item = self._open.pop(kind, None)
        if item is None:  # no partials came: the whole block is the one delta
            item_id = self._provider.ids.new("msg" if kind == "text" else "reasoning")
            if text:
                self._emit(
                    MessageDelta if kind == "text" else ReasoningDelta, item_id=item_id, text=text
                )
        else:
            item_id = item[0]
        completed = MessageCompleted if kind == "text" else ReasoningCompleted
        self._emit(completed, item_id=item_id, text=text)

    def _result(self, result: ResultMessage) -> None:
        self.result_fields = {
            "subtype": result.subtype,
            "is_error": bool(result.is_error),
            "api_error_status": result.api_error_status,
            "usage": bool(result.usage),
        }
        usage = result.usage or {}
        tokens_in = int(usage.get("input_tokens") or 0)
        tokens_out = int(usage.get("output_tokens") or 0)
        if tokens_in or tokens_out:
            self._emit(
                Usage,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                cost=result.total_cost_usd,
            )
        if not result.is_error:
            self._emit(RunCompleted, stop_reason=result.stop_reason or "end_turn")
        elif self._killed is not None or (result.terminal_reason or "").startswith("aborted"):
            self._emit(RunKilled, reason=self._killed or "interrupted")
        else:
            kind, message, retryable = _result_crash(result, self._synthetic)
            self._emit(RunCrashed, kind=kind, message=message, retryable=retryable)

    async def _can_use_tool(
        self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResultAllow | PermissionResultDeny:
        ask = tool_name == _ASK_TOOL
        if ask:
            questions = tool_input.get("questions") or [{}]
            question = str(questions[0].get("question") or "")
            request_id = self._provider.ids.new("input")
            request = _Request("input", question)
            self._requests[request_id] = request
            self._emit(InputRequested, request_id=request_id, prompt=question)
        else:
            request_id = self._provider.ids.new("approval")
            request = _Request("approval", None)
            self._requests[request_id] = request
            self._emit(
                ApprovalRequested,
                request_id=request_id,
                tool_call_id=context.tool_use_id,
                tool=tool_name,
                input=tool_input,
            )
        await request.answered.wait()
        answer = request.answer
        if answer is None:  # the run is ending (interrupted or closed)
            return PermissionResultDeny(message="the run was interrupted", interrupt=True)
        if ask:
            self._emit(InputResolved, request_id=request_id, text=answer)
            answers = {request.question or "": answer}
            return PermissionResultAllow(updated_input={**tool_input, "answers": answers})
        self._emit(ApprovalResolved, request_id=request_id, decision=answer)
        if answer == "allow":
            return PermissionResultAllow(updated_input=tool_input)
        return PermissionResultDeny(message="The user denied this tool call.")

    # --- steering ---

    async def respond(self, request_id: str, decision: str) -> None:
        request = self._requests.get(request_id)
        if request is None or request.answer is not None:
            open_ = ", ".join(f"{r} ({k})" for r, k in self.open_requests.items()) or "none"
            raise UsageError(
                f"run {self._run_id!r} has no open request {request_id!r} (open: {open_}); "
                f"respond to the request_id of an approval.requested or input.requested event"
            )
        if request.kind == "approval" and decision not in ("allow", "deny"):
            raise UsageError(f"approval {request_id!r} takes 'allow' or 'deny', got {decision!r}")
        request.answer = decision
        request.answered.set()

    async def interrupt(self, reason: str = "interrupted") -> None:
        """End the run: it finishes with ``run.killed`` (a no-op once it has ended)."""
        if self.finished or self._terminal_sent or self._killed is not None:
            return
        self._killed = reason
        for request in self._requests.values():
            request.answered.set()
        client = self._client
        if client is not None and self._connected:
            try:
                with anyio.move_on_after(self._provider.close_timeout):
                    await client.interrupt()
                    return
            except Exception:  # the process is gone: cancelling the session ends it
                pass
        if self._scope is not None:
            self._scope.cancel()

    async def _stop_the_turn(self) -> None:
        """Ask the CLI to end its turn, and wait (bounded) until the session task is over: the
        turn's result arrives, the session closes, the CLI exits at stdin EOF. The wait does
        not hang on the interrupt's answer, which never comes if the turn ended meanwhile."""
        client, task = self._client, self._task
        if client is None or not self._connected or task is None or task.done():
            return

        async def ask() -> None:
            with contextlib.suppress(Exception):  # the process is gone: the task ends anyway
                await client.interrupt()

        with anyio.move_on_after(self._provider.close_timeout):
            async with anyio.create_task_group() as group:
                group.start_soon(ask)
                await asyncio.wait({task})
                group.cancel_scope.cancel()

    async def aclose(self) -> None:
        """Stop the run for good: the CLI session is closed and its process is gone. An
        unfinished run ends with ``run.killed`` (delivered if it is iterated further).

        A turn still running is interrupted first: the CLI ends it and exits by itself at
        stdin EOF. Closed mid-turn, the CLI would get EOF while busy, and the SDK waits 5 s
        for it to exit, then SIGTERMs it (before it has written its session file)."""
        if self._killed is None and not self._terminal_sent:
            self._killed = "closed"
            for request in self._requests.values():
                request.answered.set()
            await self._stop_the_turn()
        for request in self._requests.values():
            request.answered.set()
        if self._scope is not None:
            self._scope.cancel()
        task = self._task
        if task is not None and not task.done():
            with anyio.CancelScope(shield=True):
                await asyncio.wait({task}, timeout=self._provider.close_timeout + 1)
        if task is not None and task.done() and not task.cancelled():
            task.exception()  # retrieved: never "exception was never retrieved"
