"""``CodexProvider``: Codex (through the ``openai-codex`` Python SDK, ``codex app-server``)
behind the normalized provider interface. Install with ``stuntset[codex]``.

Each run is one ``CodexClient`` (one ``codex app-server`` process) driven by a thread of its
own: the SDK is synchronous (its reader thread answers server requests through the approval
handler), so the run's driver thread starts the process, starts or resumes the thread, starts
the turn and reads the turn's notifications, and every normalized event is handed to the
event loop through ``call_soon_threadsafe``. The run may be iterated, interrupted, answered and
closed from any task of that loop. What the SDK yields becomes normalized events:

=============================================  ==============================================
openai-codex (app-server v2)                   normalized
=============================================  ==============================================
``item/agentMessage/delta``, ``agentMessage``  ``message.delta`` / ``message.completed``
``item/reasoning/summaryTextDelta`` (and       ``reasoning.delta`` / ``reasoning.completed``
``textDelta``), ``reasoning`` item
``commandExecution`` / ``fileChange`` /        ``tool.started`` (``item/started``; an
``mcpToolCall`` / ``webSearch`` items          ``mcpToolCall`` names its ``server``) and
                                               ``tool.completed`` (``item/completed``; an error
                                               when failed, declined or a non-zero exit)
``item/commandExecution/requestApproval``,     ``approval.requested`` → ``respond()`` →
``item/fileChange/requestApproval``            ``approval.resolved`` (allow → ``accept``,
                                               deny → ``decline``)
``item/tool/requestUserInput``                 ``input.requested`` → ``respond(text)`` →
                                               ``input.resolved``
``thread/tokenUsage/updated``                  ``usage`` (the turn's own tokens, ``last``;
                                               none reported: no usage event)
``turn/completed``                             ``run.completed``; ``interrupted`` →
                                               ``run.killed``; ``failed`` → ``run.crashed``
                                               with its kind from ``codexErrorInfo``
a missing binary, a closed transport, a        ``run.crashed`` (``spawn_failed``,
broken JSON-RPC line, undecodable bytes        ``exited``, ``protocol``)
=============================================  ==============================================

Approvals: ``approvals="ask"`` (default) starts threads with ``approvalPolicy: on-request``
and reviewer ``user``, so Codex asks the client and every request becomes
``approval.requested``; ``"auto_review"`` lets Codex's automatic reviewer decide and
``"deny_all"`` (policy ``never``) declines unasked — in those two modes the provider declares
no ``approvals`` capability (it never asks).

The resume handle is the Codex thread id: known once the app-server has started (or resumed)
the thread, so ``run.started`` carries it; a new provider built with ``session_id=`` (or
``start(resume=id)``) resumes that thread (the same ``CODEX_HOME`` must hold it). Runs are
driven on asyncio (events reach the loop with ``call_soon_threadsafe``).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import uuid
from collections.abc import Callable
from typing import Any, Literal

import anyio
import sniffio
from openai_codex import CodexConfig
from openai_codex.client import CodexClient
from openai_codex.errors import CodexError, JsonRpcError, TransportClosedError
from openai_codex.models import JsonObject, JsonValue, Notification, UnknownNotification
from pydantic import ValidationError

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
from stuntset.providers._queue import EventQueue, QueuedRun
from stuntset.providers.base import Capabilities
from stuntset.seams import current_clock, current_ids

__all__ = ["CodexProvider", "CodexRun", "crash_of", "turn_crash"]

Approvals = Literal["ask", "auto_review", "deny_all"]
_POLICIES: dict[str, dict[str, Any]] = {
    "ask": {"approvalPolicy": "on-request", "approvalsReviewer": "user"},
    "auto_review": {"approvalPolicy": "on-request", "approvalsReviewer": "auto_review"},
    "deny_all": {"approvalPolicy": "never"},
}
_APPROVAL_METHODS = {
    "item/commandExecution/requestApproval": "command_execution",
    "item/fileChange/requestApproval": "file_change",
}
_INPUT_METHOD = "item/tool/requestUserInput"
#: The marker a server request puts in its turn's notification stream (never on the wire).
_REQUEST_MARKER = "stuntset/serverRequest"
_TOOL_ITEMS = frozenset({"commandExecution", "fileChange", "mcpToolCall", "webSearch"})
#: How often a waiting request checks that the SDK's reader thread is still there (seconds).
_READER_CHECK = 0.1


def _status_crash(status: int, message: str) -> tuple[CrashKind, str, bool]:
    kind: CrashKind
    if status in (401, 403):
        kind = "auth"
    elif status == 429:
        kind = "rate_limited"
    elif status in (503, 529):
        kind = "overloaded"
    else:
        kind = "http"
    return kind, message, status in (408, 409, 429) or status >= 500


#: ``codexErrorInfo`` values that name the failure without an HTTP status.
_INFO_KINDS: dict[str, tuple[CrashKind, bool]] = {
    "unauthorized": ("auth", False),
    "usageLimitExceeded": ("rate_limited", False),
    "serverOverloaded": ("overloaded", True),
    "internalServerError": ("http", True),
    "responseStreamDisconnected": ("protocol", True),
    "responseStreamConnectionFailed": ("http", True),
    "httpConnectionFailed": ("http", True),
    "responseTooManyFailedAttempts": ("http", True),
}


def turn_crash(error: dict[str, Any] | None) -> tuple[CrashKind, str, bool]:
    """The ``run.crashed`` (kind, message, retryable) for a failed turn's ``turn.error``."""
    error = error or {}
    message = str(error.get("message") or "the turn failed")
    info = error.get("codexErrorInfo")
    if isinstance(info, dict):
        for name, detail in info.items():
            status = detail.get("httpStatusCode") if isinstance(detail, dict) else None
            if isinstance(status, int):
                return _status_crash(status, message)
            if name in _INFO_KINDS:
                kind, retryable = _INFO_KINDS[name]
                return kind, message, retryable
    elif isinstance(info, str) and info in _INFO_KINDS:
        kind, retryable = _INFO_KINDS[info]
        return kind, message, retryable
    return "internal", message, False


class _OutOfOrder(Exception):
    """The app-server's notifications arrived in an impossible order."""


def crash_of(error: BaseException) -> tuple[CrashKind, str, bool]:
    """The ``run.crashed`` (kind, message, retryable) for an exception out of the SDK."""
    text = str(error) or type(error).__name__
    if isinstance(error, FileNotFoundError | PermissionError | NotADirectoryError):
        return "spawn_failed", text, False
    if isinstance(error, TransportClosedError):
        return "exited", text, False
    if isinstance(error, UnicodeDecodeError):
        return "protocol", f"undecodable bytes from the app-server: {text}", False
    if isinstance(error, _OutOfOrder | ValidationError):
        return "protocol", text, False
    if isinstance(error, JsonRpcError):
        return "internal", f"{type(error).__name__}: {text}", False
    if isinstance(error, CodexError):  # an invalid JSON-RPC line or payload
        return "protocol", text, False
    if isinstance(error, TimeoutError):
        return "timeout", text, True
    return "internal", f"{type(error).__name__}: {text}", False


class _Client(CodexClient):
    """``CodexClient`` whose requests cannot outlive its transport.

    The SDK's reader thread fails every response waiter when the transport breaks, but a
    request made *after* that (an interrupt racing a cut stream, a turn started as the process
    dies) would wait for ever. Here a request also ends, with ``TransportClosedError``, once
    the reader thread is gone.
    """

    #: Called once a ``turn/interrupt`` request is written (before its answer is awaited).
    interrupt_written: Callable[[], None] | None = None

    def _request_raw(self, method: str, params: JsonObject | None = None) -> JsonValue:
        request_id = str(uuid.uuid4())
        waiter = self._router.create_response_waiter(request_id)
        try:
            message: JsonObject = {"id": request_id, "method": method}
            if params is not None:
                message["params"] = params
            self._write_message(message)
        except BaseException:
            self._router.discard_response_waiter(request_id)
            raise
        if method == "turn/interrupt" and self.interrupt_written is not None:
            self.interrupt_written()
        while True:
            try:
                item = waiter.get(timeout=_READER_CHECK)
                break
            except queue.Empty:
                reader = self._reader_thread
                if reader is not None and reader.is_alive():
                    continue
                try:
                    item = waiter.get_nowait()
                    break
                except queue.Empty:
                    self._router.discard_response_waiter(request_id)
                    raise TransportClosedError(
                        f"{method}: the Codex app-server transport is closed"
                    ) from None
        if isinstance(item, BaseException):
            raise item
        return item


def _params(payload: Any) -> dict[str, Any]:
    if isinstance(payload, UnknownNotification):
        return dict(payload.params)
    dumped = payload.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped if isinstance(dumped, dict) else {}


class CodexProvider:
    """Starts Codex runs on ``codex_bin`` (e.g. the fake one from ``stuntset.install_cli``;
    ``None``: the SDK's pinned runtime). ``cwd`` / ``env`` / ``config_overrides`` go to the
    ``CodexConfig``; ``model`` to the thread. ``approvals`` is ``"ask"``, ``"auto_review"`` or
    ``"deny_all"`` (see the module docs). ``session_id`` resumes that Codex thread.

    ``close_timeout`` bounds how long closing a run waits for its process to go. ``clock``
    and ``ids`` default to the seams in force.
    """

    __test__ = False

    def __init__(
        self,
        codex_bin: str | None = None,
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        config_overrides: tuple[str, ...] = (),
        model: str | None = None,
        approvals: Approvals = "ask",
        name: str = "codex",
        session_id: str | None = None,
        close_timeout: float = 10.0,
        clock: Any = None,
        ids: Any = None,
    ) -> None:
        if approvals not in _POLICIES:
            raise UsageError(f"approvals must be one of {', '.join(_POLICIES)}, got {approvals!r}")
        self.codex_bin = None if codex_bin is None else str(codex_bin)
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.config_overrides = tuple(config_overrides)
        self.model = model
        self.approvals: Approvals = approvals
        self._name = name
        self.close_timeout = close_timeout
        self.clock = clock if clock is not None else current_clock()
        self.ids = ids if ids is not None else current_ids()
        self._lock = threading.Lock()  # ids and clock are used from the runs' threads too
        self._session_id = session_id or ""
        self.runs: list[CodexRun] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            approvals=self.approvals == "ask",
            input_requests=True,
            interrupt=True,
            resume=True,
            reasoning=True,
            usage=True,
        )

    @property
    def session_id(self) -> str:
        """The Codex thread id ("" until the first run has started its thread)."""
        return self._session_id

    def config(self) -> CodexConfig:
        return CodexConfig(
            codex_bin=self.codex_bin,
            cwd=self.cwd,
            env=self.env,
            config_overrides=self.config_overrides,
        )

    def thread_params(self) -> dict[str, Any]:
        params = dict(_POLICIES[self.approvals])
        if self.model is not None:
            params["model"] = self.model
        if self.cwd is not None:
            params["cwd"] = self.cwd
        return params

    def new_id(self, kind: str) -> str:
        with self._lock:
            return str(self.ids.new(kind))

    def now(self) -> float:
        with self._lock:
            return float(self.clock.now())

    def start(self, prompt: str, *, resume: str | None = None) -> CodexRun:
        if resume is not None:
            self._session_id = resume
        run = CodexRun(self, self.new_id("run"), prompt, self._session_id)
        self.runs.append(run)
        return run

    def _adopt(self, thread_id: str) -> None:
        self._session_id = thread_id

    async def aclose(self) -> None:
        for run in self.runs:
            await run.aclose()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(codex_bin={self.codex_bin!r}, session_id={self._session_id!r})"
        )


class _Request:
    """An open approval or input request, answered by ``respond()`` (or released)."""

    def __init__(self, kind: str, question_id: str | None = None) -> None:
        self.kind = kind
        self.question_id = question_id
        self.answer: str | None = None
        self.answered = threading.Event()


class CodexRun(QueuedRun):
    """One Codex turn. Its app-server process is driven by a thread of its own; events flow
    to the iterator through a queue, so nothing the consumer does blocks the process."""

    __test__ = False

    def __init__(self, provider: CodexProvider, run_id: str, prompt: str, session_id: str) -> None:
        self._provider = provider
        self._run_id = run_id
        self._session_id = session_id
        self._resume = bool(session_id)
        self.prompt = prompt
        self.events: list[Event] = []
        self.finished = False
        self._started = False
        self._lock = threading.Lock()
        self._killed: str | None = None
        self._turn_id: str | None = None
        self._client: _Client | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._terminal_sent = False
        self._terminal: Event | None = None
        self._queue = EventQueue()  # ended once the driver is over and its process gone
        self._done: anyio.Event | None = None
        self._requests: dict[str, _Request] = {}
        self._released = False  # open requests go unanswered from now on
        self._markers: dict[str, dict[str, Any]] = {}  # request id → its event, not yet emitted
        # driver-thread state
        self._texts: dict[str, tuple[str, str]] = {}  # item id → ("text"/"reasoning", so far)
        self._tools_open: set[str] = set()
        self._usage: tuple[int, int] | None = None

    # --- events out (built and queued on the event loop) ---

    def _emit(self, cls: type[Any], **fields: Any) -> None:
        """From the driver or reader thread: hand the event to the loop."""
        loop = self._loop
        if loop is None:  # pragma: no cover - the driver starts from __anext__
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is listening
            loop.call_soon_threadsafe(self._emit_now, cls, fields)

    def _emit_now(self, cls: type[Any], fields: dict[str, Any]) -> None:
        if self._terminal_sent:
            return
        event: Event = cls(run_id=self._run_id, ts=self._provider.now(), **fields)
        if event.terminal:  # held back until the process is gone
            self._terminal_sent = True
            self._terminal = event
            return
        self._send(event)

    def _send(self, event: Event) -> None:
        self._queue.put(event)

    def _end(self) -> None:
        """On the loop, once the driver is over and its process gone."""
        if self._terminal is not None:
            self._send(self._terminal)
        self._queue.end()
        if self._done is not None:
            self._done.set()

    async def __anext__(self) -> Event:
        if self.finished:
            raise StopAsyncIteration
        if not self._started:
            library = sniffio.current_async_library()
            if library != "asyncio":
                raise UsageError(
                    f"CodexProvider hands each run's events to an asyncio loop; iterate its "
                    f"runs under asyncio, not {library}"
                )
            self._started = True
            self._loop = asyncio.get_running_loop()
            self._done = anyio.Event()
            if self._killed is not None:
                self._send(self._started_event())
                self._send(self._event(RunKilled, reason=self._killed))
                self._terminal_sent = True
                self._queue.end()
                self._done.set()
            else:
                self._thread = threading.Thread(
                    target=self._drive, name=f"stuntset codex run {self._run_id}", daemon=True
                )
                self._thread.start()
        event = await self._queue.get()
        if event is None:  # pragma: no cover - the driver always queues a terminal
            raise StopAsyncIteration
        self.events.append(event)
        if event.terminal:
            self.finished = True
        return event

    def _event(self, cls: type[Any], **fields: Any) -> Event:
        event: Event = cls(run_id=self._run_id, ts=self._provider.now(), **fields)
        return event

    def _started_event(self) -> Event:
        return self._event(
            RunStarted,
            session_id=self._session_id,
            provider=self._provider.name,
            model=self._provider.model,
        )

    # --- the driver (its own thread) ---

    def _drive(self) -> None:
        provider = self._provider
        announced = over = False
        try:
            client = _Client(config=provider.config(), approval_handler=self._on_request)
            with self._lock:
                self._client = client
            try:
                client.start()
                client.initialize()
                if self._resume:
                    client.thread_resume(self._session_id, provider.thread_params())
                else:
                    started = client.thread_start(provider.thread_params())
                    self._adopt(started.thread.id)
                self._emit(
                    RunStarted,
                    session_id=self._session_id,
                    provider=provider.name,
                    model=provider.model,
                )
                announced = True
                if self._killed is None:
                    over = self._turn(client)
            except Exception as error:
                if not announced:
                    self._emit(
                        RunStarted,
                        session_id=self._session_id,
                        provider=provider.name,
                        model=provider.model,
                    )
                if self._killed is None:
                    kind, text, retryable = crash_of(error)
                    self._emit(RunCrashed, kind=kind, message=text, retryable=retryable)
                    over = True
            if not over and self._killed is not None:
                self._emit(RunKilled, reason=self._killed)
        finally:
            self._release()
            self._close_client()
            loop = self._loop
            if loop is not None:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._end)

    def _close_client(self) -> None:
        with self._lock:
            client = self._client
        if client is None:
            return
        proc = client._proc
        with contextlib.suppress(Exception):
            client.close()
        if proc is not None:
            with contextlib.suppress(Exception):
                proc.wait(timeout=self._provider.close_timeout)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(Exception):
                        stream.close()

    def _adopt(self, thread_id: str) -> None:
        self._session_id = thread_id
        self._provider._adopt(thread_id)

    def _turn(self, client: _Client) -> bool:
        started = client.turn_start(self._session_id, self.prompt)
        turn_id = started.turn.id
        client.register_turn_notifications(turn_id)
        with self._lock:
            self._turn_id = turn_id
            killed = self._killed is not None
        if killed:
            self._send_interrupt(turn_id)
        try:
            while True:
                notification = client.next_turn_notification(turn_id)
                if self._handle(notification.method, _params(notification.payload)):
                    return True
        finally:
            client.unregister_turn_notifications(turn_id)

    def _handle(self, method: str, params: dict[str, Any]) -> bool:
        """One notification; True once the turn is over (its terminal emitted)."""
        if method == "item/agentMessage/delta":
            self._delta("text", params)
        elif method in ("item/reasoning/summaryTextDelta", "item/reasoning/textDelta"):
            self._delta("reasoning", params)
        elif method == "item/started":
            self._item_started(params.get("item") or {})
        elif method == "item/completed":
            self._item_completed(params.get("item") or {})
        elif method == "thread/tokenUsage/updated":
            last = (params.get("tokenUsage") or {}).get("last") or {}
            self._usage = (int(last.get("inputTokens") or 0), int(last.get("outputTokens") or 0))
        elif method == "turn/completed":
            self._completed(params.get("turn") or {})
            return True
        elif method == _REQUEST_MARKER:
            marker = self._markers.pop(str(params.get("requestId")), None)
            if marker is not None and self._killed is None:
                self._emit(marker["cls"], request_id=marker["requestId"], **marker["fields"])
        return False

    def _delta(self, kind: str, params: dict[str, Any]) -> None:
        item_id = str(params.get("itemId") or "")
        text = str(params.get("delta") or "")
        if item_id not in self._texts:
            raise _OutOfOrder(f"a {kind} delta for item {item_id!r}, which was never started")
        item_kind, so_far = self._texts[item_id]
        self._texts[item_id] = (item_kind, so_far + text)
        if text:
            self._emit(
                MessageDelta if kind == "text" else ReasoningDelta, item_id=item_id, text=text
            )

    def _item_started(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        item_id = str(item.get("id") or "")
        if kind == "agentMessage":
            self._texts[item_id] = ("text", "")
        elif kind == "reasoning":
            self._texts[item_id] = ("reasoning", "")
        elif kind in _TOOL_ITEMS and item_id not in self._tools_open:
            self._tools_open.add(item_id)
            name, tool_input = _tool_call(item)
            server = item.get("server") if kind == "mcpToolCall" else None
            self._emit(
                ToolStarted,
                tool_call_id=item_id,
                name=name,
                input=tool_input,
                server=str(server) if server else None,
            )

    def _item_completed(self, item: dict[str, Any]) -> None:
        kind = item.get("type")
        item_id = str(item.get("id") or "")
        if kind in ("agentMessage", "reasoning"):
            if item_id not in self._texts:
                raise _OutOfOrder(f"a {kind} item {item_id!r} completed, never started")
            _, so_far = self._texts.pop(item_id)
            if kind == "agentMessage":
                text = str(item.get("text") or "")
                if not so_far and text:
                    self._emit(MessageDelta, item_id=item_id, text=text)
                self._emit(MessageCompleted, item_id=item_id, text=text)
            else:
                summary = item.get("summary") or item.get("content") or []
                text = "\n".join(str(part) for part in summary) if summary else so_far
                if not so_far and text:
                    self._emit(ReasoningDelta, item_id=item_id, text=text)
                self._emit(ReasoningCompleted, item_id=item_id, text=text)
        elif kind in _TOOL_ITEMS:
            if item_id not in self._tools_open:
                raise _OutOfOrder(f"a {kind} item {item_id!r} completed, never started")
            self._tools_open.discard(item_id)
            output, is_error = _tool_result(item)
            self._emit(ToolCompleted, tool_call_id=item_id, output=output, is_error=is_error)

    def _completed(self, turn: dict[str, Any]) -> None:
        status = turn.get("status")
        if self._usage is not None and any(self._usage):
            tokens_in, tokens_out = self._usage
            self._emit(Usage, input_tokens=tokens_in, output_tokens=tokens_out)
        if status == "completed":
            self._emit(RunCompleted, stop_reason="end_turn")
        elif status == "interrupted":
            self._emit(RunKilled, reason=self._killed or "interrupted")
        else:
            kind, message, retryable = turn_crash(turn.get("error"))
            self._emit(RunCrashed, kind=kind, message=message, retryable=retryable)

    # --- server requests (called on the SDK's reader thread) ---

    def _on_request(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        params = params or {}
        if method in _APPROVAL_METHODS:
            return self._approval(method, params)
        if method == _INPUT_METHOD:
            return self._input(params)
        return {}

    def _approval(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if self._provider.approvals != "ask":  # pragma: no cover - Codex does not ask then
            return {"decision": "decline"}
        request_id = self._provider.new_id("approval")
        tool_input = {
            key: params[key]
            for key in ("command", "cwd", "reason", "changes", "grantRoot")
            if params.get(key) is not None
        }
        answer = self._ask(
            request_id,
            _Request("approval"),
            params,
            ApprovalRequested,
            tool_call_id=params.get("itemId"),
            tool=_APPROVAL_METHODS[method],
            input=tool_input,
        )
        if answer is None:  # the run is ending (interrupted or closed)
            return {"decision": "cancel"}
        self._emit(ApprovalResolved, request_id=request_id, decision=answer)
        return {"decision": "accept" if answer == "allow" else "decline"}

    def _input(self, params: dict[str, Any]) -> dict[str, Any]:
        questions = params.get("questions") or [{}]
        first = questions[0] if isinstance(questions[0], dict) else {}
        question_id = str(first.get("id") or "")
        request_id = self._provider.new_id("input")
        answer = self._ask(
            request_id,
            _Request("input", question_id),
            params,
            InputRequested,
            prompt=str(first.get("question") or ""),
        )
        if answer is None:
            return {"answers": {}}
        self._emit(InputResolved, request_id=request_id, text=answer)
        return {"answers": {question_id: {"answers": [answer]}}}

    def _ask(
        self,
        request_id: str,
        request: _Request,
        params: dict[str, Any],
        cls: type[Any],
        **fields: Any,
    ) -> str | None:
        """Open a request and wait for its answer (``None``: released, the run is ending).

        The request event goes through the turn's own notification stream (a marker routed
        like a notification, from this reader thread), so the driver emits it in wire order:
        after everything the app-server sent before asking."""
        with self._lock:
            self._requests[request_id] = request
            released = self._released
            client = self._client
        if released:
            request.answered.set()
        else:
            marker = {"requestId": request_id, "cls": cls, "fields": fields}
            self._markers[request_id] = marker
            turn_id = params.get("turnId")
            if client is not None and isinstance(turn_id, str):
                notification = Notification(
                    method=_REQUEST_MARKER,
                    payload=UnknownNotification(
                        params={"turnId": turn_id, "requestId": request_id}
                    ),
                )
                client._router.route_notification(notification)
            else:  # pragma: no cover - Codex names the turn of every request
                self._emit(cls, request_id=request_id, **fields)
        request.answered.wait()
        return request.answer

    def _release(self) -> None:
        """Let every open request go unanswered (the run is ending)."""
        with self._lock:
            self._released = True
            requests = list(self._requests.values())
        for request in requests:
            request.answered.set()

    # --- steering ---

    async def respond(self, request_id: str, decision: str) -> None:
        request = self._requests.get(request_id)
        if request is None or request.answer is not None or request.answered.is_set():
            open_ = ", ".join(f"{r} ({k})" for r, k in self.open_requests.items()) or "none"
            raise UsageError(
                f"run {self._run_id!r} has no open request {request_id!r} (open: {open_}); "
                f"respond to the request_id of an approval.requested or input.requested event"
            )
        if request.kind == "approval" and decision not in ("allow", "deny"):
            raise UsageError(f"approval {request_id!r} takes 'allow' or 'deny', got {decision!r}")
        request.answer = decision
        request.answered.set()

    def _send_interrupt(self, turn_id: str) -> None:
        """``turn/interrupt`` (blocking: on a thread); if the app-server cannot take it, its
        process is killed, which ends the turn too."""
        with self._lock:
            client = self._client
        if client is None:  # pragma: no cover - the turn id is set after the client
            return
        client.interrupt_written = self._release
        try:
            client.turn_interrupt(self._session_id, turn_id)
        except JsonRpcError:  # the turn is already over
            pass
        except Exception:
            self._kill()
        finally:
            self._release()

    def _kill(self) -> None:
        with self._lock:
            client = self._client
        proc = client._proc if client is not None else None
        if proc is not None:
            with contextlib.suppress(Exception):
                proc.kill()

    async def interrupt(self, reason: str = "interrupted") -> None:
        """End the run: it finishes with ``run.killed`` (a no-op once it has ended)."""
        if self.finished or self._terminal_sent or self._killed is not None:
            return
        with self._lock:
            self._killed = reason
            turn_id = self._turn_id
        # open requests are released once turn/interrupt is written (an answer first would
        # let the turn go on); without a turn the driver stops before starting one
        if turn_id is not None:
            threading.Thread(
                target=self._send_interrupt,
                args=(turn_id,),
                name=f"stuntset codex interrupt {self._run_id}",
                daemon=True,
            ).start()

    async def aclose(self) -> None:
        """Stop the run for good: its app-server process is gone. An unfinished run ends with
        ``run.killed`` (delivered if it is iterated further)."""
        with self._lock:
            if self._killed is None and not self._terminal_sent:
                self._killed = "closed"
        self._release()
        if self._thread is None or self._done is None:
            return
        self._kill()
        with anyio.CancelScope(shield=True), anyio.move_on_after(self._provider.close_timeout + 1):
            await self._done.wait()


def _tool_call(item: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    kind = item.get("type")
    if kind == "commandExecution":
        return "command_execution", {"command": item.get("command"), "cwd": item.get("cwd")}
    if kind == "fileChange":
        return "file_change", {"changes": item.get("changes") or []}
    if kind == "webSearch":
        return "web_search", {"query": item.get("query")}
    arguments = item.get("arguments")
    tool_input = arguments if isinstance(arguments, dict) else {"arguments": arguments}
    return str(item.get("tool") or "mcp_tool"), tool_input


def _tool_result(item: dict[str, Any]) -> tuple[Any, bool]:
    kind = item.get("type")
    status = item.get("status")
    failed = status in ("failed", "declined")
    if kind == "commandExecution":
        exit_code = item.get("exitCode")
        return item.get("aggregatedOutput"), failed or exit_code not in (0, None)
    if kind == "fileChange":
        return {"changes": item.get("changes") or [], "status": status}, failed
    if kind == "mcpToolCall":
        error = item.get("error")
        if error:
            message = error.get("message") if isinstance(error, dict) else error
            return message, True
        content = (item.get("result") or {}).get("content") or []
        texts = [str(c.get("text")) for c in content if isinstance(c, dict) and "text" in c]
        return ("".join(texts) if texts else content), failed
    return item.get("query"), failed
