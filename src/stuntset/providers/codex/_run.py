"""``CodexRun``: one Codex turn on an app-server process of its own, driven by a thread.

The driver thread starts the process, starts or resumes the thread, starts the turn and
reads its notifications (``Translator`` turns them into events); server requests (approvals,
questions) arrive on the SDK's reader thread and wait for ``respond()``. Every event reaches
the run's event loop through ``call_soon_threadsafe``."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import Any, Protocol

import anyio
import sniffio
from openai_codex import CodexConfig
from openai_codex.errors import JsonRpcError
from openai_codex.models import Notification, UnknownNotification

from stuntset.errors import UsageError
from stuntset.events import (
    ApprovalRequested,
    ApprovalResolved,
    Event,
    InputRequested,
    InputResolved,
    RunCrashed,
    RunKilled,
    RunStarted,
)
from stuntset.providers._queue import EventQueue, QueuedRun
from stuntset.providers.base import told
from stuntset.providers.codex._client import Client, params_of
from stuntset.providers.codex._crash import crash_of
from stuntset.providers.codex._items import Translator

__all__ = ["CodexRun", "RunHost"]


class RunHost(Protocol):
    """What a run reads from the provider that started it (``CodexProvider`` is one): the
    settings every run of the session shares, its clock and ids, and where the session's
    thread id goes once the run has started it. The provider owns that state; the run only
    asks for it, so this module never names the provider."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str | None: ...

    @property
    def approvals(self) -> str: ...

    @property
    def close_timeout(self) -> float: ...

    def config(self) -> CodexConfig: ...

    def thread_params(self) -> dict[str, Any]: ...

    def turn_params(self, model: str) -> dict[str, Any] | None: ...

    def new_id(self, kind: str) -> str: ...

    def now(self) -> float: ...

    def _adopt(self, thread_id: str) -> None: ...


_APPROVAL_METHODS = {
    "item/commandExecution/requestApproval": "command_execution",
    "item/fileChange/requestApproval": "file_change",
}
_INPUT_METHOD = "item/tool/requestUserInput"
#: The marker a server request puts in its turn's notification stream (never on the wire).
_REQUEST_MARKER = "stuntset/serverRequest"


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

    def __init__(self, provider: RunHost, run_id: str, prompt: str, session_id: str) -> None:
        self._provider = provider
        self._run_id = run_id
        self._session_id = session_id
        self._resume = bool(session_id)
        self._model = ""  # the thread's, once started or resumed
        self.prompt = prompt
        self.events: list[Event] = []
        self.finished = False
        self._started = False
        self._lock = threading.Lock()
        self._killed: str | None = None
        self._turn_id: str | None = None
        self._client: Client | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._terminal_sent = False
        self._terminal: Event | None = None
        self._queue = EventQueue()  # ended once the driver is over and its process gone
        self._done: anyio.Event | None = None
        self._requests: dict[str, _Request] = {}
        self._released = False  # open requests go unanswered from now on
        self._markers: dict[str, dict[str, Any]] = {}  # request id → its event, not yet emitted
        # driver-thread state: the turn's notifications, read as events
        self._items = Translator(self._emit, lambda: self._killed)

    @property
    def result_fields(self) -> dict[str, Any]:
        """What ``turn/completed`` said beyond the events (``Translator.result_fields``)."""
        return self._items.result_fields

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
        return told(event)

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
            client = Client(config=provider.config(), approval_handler=self._on_request)
            with self._lock:
                self._client = client
            try:
                client.start()
                client.initialize()
                if self._resume:
                    resumed = client.thread_resume(self._session_id, provider.thread_params())
                    self._model = str(resumed.model)
                else:
                    started = client.thread_start(provider.thread_params())
                    self._adopt(started.thread.id)
                    self._model = str(started.model)
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

    def _turn(self, client: Client) -> bool:
        params = self._provider.turn_params(self._model)
        started = client.turn_start(self._session_id, self.prompt, params)
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
                if self._handle(notification.method, params_of(notification.payload)):
                    return True
        finally:
            client.unregister_turn_notifications(turn_id)

    def _handle(self, method: str, params: dict[str, Any]) -> bool:
        """One notification; True once the turn is over (its terminal emitted)."""
        if method == _REQUEST_MARKER:
            marker = self._markers.pop(str(params.get("requestId")), None)
            if marker is not None and self._killed is None:
                self._emit(marker["cls"], request_id=marker["requestId"], **marker["fields"])
            return False
        return self._items.handle(method, params)

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
