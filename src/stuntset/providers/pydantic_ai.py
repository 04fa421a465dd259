"""``PydanticAIProvider``: a pydantic-ai ``Agent`` behind the normalized provider interface.

Install with ``stuntset[pydantic-ai]``. The agent runs as it would in production
(``agent.run_stream_events``: its own model requests, tool calls and retries); its streamed
events become normalized events:

=========================================  ===================================================
pydantic-ai                                normalized
=========================================  ===================================================
``TextPart`` start / delta / end           ``message.delta`` … ``message.completed``
``ThinkingPart`` start / delta / end       ``reasoning.delta`` … ``reasoning.completed``
``FunctionToolCallEvent``                  ``tool.started`` (complete arguments)
``FunctionToolResultEvent``                ``tool.completed`` (``is_error`` unless the outcome
                                           is ``success``)
the run's result                           ``usage`` (only if the model reported any), then
                                           ``run.completed``
``RunCancelled`` after ``interrupt()``     ``run.killed``
any other exception                        ``run.crashed`` with its kind and retryability
=========================================  ===================================================

The resume handle is a session id; the session's message history is kept in ``sessions``
(a mapping you may share between providers, or back with your own store), so a new provider
given the same mapping continues the conversation with ``start(prompt, resume=handle)``.
Approvals: a tool registered with ``requires_approval=True`` (on an agent whose
``output_type`` includes ``DeferredToolRequests``) stops the agent; each call becomes
``approval.requested``, and once ``respond()`` has answered them all the agent continues
with the decisions (a denied call completes as an error, ``outcome="denied"``) — all in the
same normalized run. Input requests are not offered (``Capabilities`` says so). pydantic-ai
runs its agent in an asyncio task, so this provider needs asyncio.
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import anyio
from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai import exceptions as ai_errors
from pydantic_ai.agent import AbstractAgent
from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessage,
    ModelResponse,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
)
from pydantic_ai.run import AgentRunResultEvent

from stuntset.errors import UsageError
from stuntset.events import (
    ApprovalRequested,
    ApprovalResolved,
    CrashKind,
    Event,
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
from stuntset.providers._crash_kinds import google_reason, status_crash
from stuntset.providers.base import Capabilities, told
from stuntset.seams import current_clock, current_ids

__all__ = ["PydanticAIProvider", "PydanticAIRun", "crash_of"]

CAPABILITIES = Capabilities(approvals=True, interrupt=True, resume=True, reasoning=True, usage=True)
_DENIED = "The user denied this tool call."


def _status_crash(status: int, text: str, body: object = None) -> tuple[CrashKind, str, bool]:
    # the shared table; the message gains the status, which an SDK error's text may not name.
    # A Google error body's ErrorInfo reason is passed on: Gemini's expired key is a 400
    # whose reason (API_KEY_INVALID) alone says it is an auth failure
    return status_crash(status, f"HTTP {status}: {text}", reason=google_reason(body))


def crash_of(error: BaseException) -> tuple[CrashKind, str, bool]:
    """The ``run.crashed`` (kind, message, retryable) for an exception out of an agent run."""
    text = str(error) or type(error).__name__
    if isinstance(error, ai_errors.ModelHTTPError):
        return _status_crash(error.status_code, text, error.body)
    if isinstance(error, ai_errors.ModelAuthenticationError):
        return "auth", text, False
    if isinstance(error, ai_errors.ModelRateLimitError):
        return "rate_limited", text, True
    if isinstance(error, ai_errors.ModelUnavailableError):
        return "overloaded", text, True
    if isinstance(error, ai_errors.ModelTimeoutError | TimeoutError):
        return "timeout", text, True
    if isinstance(error, ai_errors.ModelConnectionError):
        return "protocol", text, True
    if isinstance(error, ai_errors.UnexpectedModelBehavior):
        return "protocol", text, False
    if isinstance(error, json.JSONDecodeError | UnicodeDecodeError):
        return "protocol", f"{type(error).__name__}: {text}", False
    module = type(error).__module__.partition(".")[0]
    name = type(error).__name__
    if module in ("httpx", "httpx2", "httpcore"):
        if "Timeout" in name:
            return "timeout", f"{name}: {text}", True
        return "protocol", f"{name}: {text}", True
    if module in ("openai", "anthropic"):
        status = getattr(error, "status_code", None)
        if isinstance(status, int):
            return _status_crash(status, text)
        if "Timeout" in name:
            return "timeout", f"{name}: {text}", True
        if "Connection" in name:
            return "protocol", f"{name}: {text}", True
    if module == "google":  # google-genai's own, out of pydantic-ai's GoogleModel stream
        code = getattr(error, "code", None)
        if isinstance(code, int):
            return _status_crash(code, text, getattr(error, "details", None))
        if name == "UnknownApiResponseError":  # a frame or body that is not JSON
            return "protocol", f"{name}: {text}", False
    cause = error.__cause__
    if cause is not None and isinstance(error, ai_errors.ModelAPIError):
        return crash_of(cause)
    return "internal", f"{name}: {text}", False


class PydanticAIProvider:
    """Runs ``agent`` for each prompt; ``sessions`` holds each session's message history.

    ``run_options`` are passed to ``agent.run_stream_events`` (``deps``, ``model_settings``,
    ``usage_limits``…). ``clock`` and ``ids`` default to the seams in force.
    """

    __test__ = False

    def __init__(
        self,
        agent: AbstractAgent[Any, Any],
        *,
        name: str = "pydantic-ai",
        sessions: MutableMapping[str, list[ModelMessage]] | None = None,
        session_id: str | None = None,
        run_options: dict[str, Any] | None = None,
        clock: Any = None,
        ids: Any = None,
    ) -> None:
        self.agent = agent
        self._name = name
        self.sessions: MutableMapping[str, list[ModelMessage]] = (
            sessions if sessions is not None else {}
        )
        self.run_options = dict(run_options or {})
        self.clock = clock if clock is not None else current_clock()
        self.ids = ids if ids is not None else current_ids()
        self._session_id = session_id if session_id is not None else self.ids.new("session")
        self.runs: list[PydanticAIRun] = []
        model = getattr(agent, "model", None)
        self.model: str | None = getattr(model, "model_name", None) or (
            model if isinstance(model, str) else None
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> Capabilities:
        return CAPABILITIES

    @property
    def session_id(self) -> str:
        return self._session_id

    def start(self, prompt: str, *, resume: str | None = None) -> PydanticAIRun:
        if resume is not None:
            if resume not in self.sessions:
                known = ", ".join(sorted(self.sessions)) or "none"
                raise UsageError(
                    f"no session {resume!r} to resume in this provider's sessions (known: "
                    f"{known}); pass the same sessions mapping the first provider used"
                )
            self._session_id = resume
        history = list(self.sessions.get(self._session_id, []))
        run = PydanticAIRun(self, self.ids.new("run"), prompt, history)
        self.runs.append(run)
        return run

    async def aclose(self) -> None:
        for run in self.runs:
            await run.aclose()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(agent={self.agent!r}, session_id={self._session_id!r})"


class PydanticAIRun:
    """One agent run: pulls pydantic-ai events on demand and hands out normalized ones."""

    __test__ = False

    def __init__(
        self,
        provider: PydanticAIProvider,
        run_id: str,
        prompt: str,
        history: list[ModelMessage],
    ) -> None:
        self._provider = provider
        self._run_id = run_id
        self._session_id = provider.session_id
        self.prompt = prompt
        self.history = history
        self.events: list[Event] = []
        self._pending: list[Event] = []
        self._started = False
        self._killed: str | None = None
        self.finished = False
        self._context: Any = None
        self._stream: Any = None
        self._items: dict[int, tuple[str, bool]] = {}  # part index → (item id, is text)
        self._tools: set[str] = set()  # tool calls started (and maybe completed)
        self._approvals: dict[str, tuple[str, str | None]] = {}  # request → (call, decision)
        self._answered: Any = None
        self._deferred: list[ModelMessage] | None = None  # history to continue after approvals
        self._reopen = False
        self._tokens = [0, 0]

    @property
    def run_id(self) -> str:
        return self._run_id

    @property
    def session_id(self) -> str:
        return self._session_id

    def __aiter__(self) -> PydanticAIRun:
        return self

    def _event(self, cls: type[Any], **fields: Any) -> Event:
        event: Event = cls(run_id=self._run_id, ts=self._provider.clock.now(), **fields)
        return event

    async def __anext__(self) -> Event:
        if self.finished:
            raise StopAsyncIteration
        if not self._started:
            self._started = True
            provider = self._provider
            return self._deliver(
                self._event(
                    RunStarted,
                    session_id=self._session_id,
                    provider=provider.name,
                    model=provider.model,
                )
            )
        while not self._pending:
            if self._killed is not None:
                await self._close_stream()
                self._pending.append(self._event(RunKilled, reason=self._killed))
                break
            if any(decision is None for _, decision in self._approvals.values()):
                self._answered = anyio.Event()
                await self._answered.wait()  # respond() or interrupt()
                continue
            await self._pull()
        return self._deliver(self._pending.pop(0))

    @property
    def open_requests(self) -> dict[str, str]:
        """Approvals waiting for ``respond()``: request id → ``"approval"``."""
        return {rid: "approval" for rid, (_, d) in self._approvals.items() if d is None}

    def _deliver(self, event: Event) -> Event:
        self.events.append(event)
        if event.terminal:
            self.finished = True
        return told(event)

    async def _pull(self) -> None:
        """Read one pydantic-ai event into ``_pending`` (or end the run)."""
        try:
            if self._stream is None:
                self._context = self._open()
                self._stream = await self._context.__aenter__()
            raw = await anext(self._stream)
        except ai_errors.RunCancelled:
            self._killed = self._killed or "cancelled"
            return
        except StopAsyncIteration:
            await self._close_stream()
            self._pending.append(
                self._event(
                    RunCrashed,
                    kind="protocol",
                    message="the agent's event stream ended without a result",
                    retryable=False,
                )
            )
            return
        except Exception as error:
            await self._close_stream()
            if self._killed is not None:
                return
            kind, message, retryable = crash_of(error)
            self._pending.append(
                self._event(RunCrashed, kind=kind, message=message, retryable=retryable)
            )
            return
        self._translate(raw)
        if self._reopen:  # the agent stopped for approvals: its next run continues after them
            self._reopen = False
            await self._close_stream()

    def _open(self) -> Any:
        agent = self._provider.agent
        options = dict(self._provider.run_options)
        if self._deferred is None:
            return agent.run_stream_events(
                self.prompt, message_history=self.history or None, **options
            )
        answers: dict[str, Any] = {
            call: True if decision == "allow" else ToolDenied(_DENIED)
            for call, decision in self._approvals.values()
        }
        history, self._deferred, self._approvals = self._deferred, None, {}
        return agent.run_stream_events(
            None,
            message_history=history,
            deferred_tool_results=DeferredToolResults(approvals=answers),
            **options,
        )

    def _translate(self, raw: Any) -> None:
        add = self._pending.append
        if isinstance(raw, PartStartEvent):
            part = raw.part
            if isinstance(part, TextPart | ThinkingPart):
                is_text = isinstance(part, TextPart)
                item_id = self._provider.ids.new("msg" if is_text else "reasoning")
                self._items[raw.index] = (item_id, is_text)
                if part.content:
                    first = MessageDelta if is_text else ReasoningDelta
                    add(self._event(first, item_id=item_id, text=part.content))
        elif isinstance(raw, PartDeltaEvent):
            item = self._items.get(raw.index)
            change = raw.delta
            if item is None:
                return
            if isinstance(change, TextPartDelta) and item[1] and change.content_delta:
                add(self._event(MessageDelta, item_id=item[0], text=change.content_delta))
            elif isinstance(change, ThinkingPartDelta) and not item[1] and change.content_delta:
                add(self._event(ReasoningDelta, item_id=item[0], text=change.content_delta))
        elif isinstance(raw, PartEndEvent):
            item = self._items.pop(raw.index, None)
            part = raw.part
            if item is not None and isinstance(part, TextPart | ThinkingPart):
                completed = MessageCompleted if item[1] else ReasoningCompleted
                add(self._event(completed, item_id=item[0], text=part.content))
        elif isinstance(raw, FunctionToolCallEvent):
            call = raw.part
            if call.tool_call_id in self._tools:
                return  # announced again when the agent continues after an approval
            self._tools.add(call.tool_call_id)
            add(
                self._event(
                    ToolStarted,
                    tool_call_id=call.tool_call_id,
                    name=call.tool_name,
                    input=call.args_as_dict(),
                )
            )
        elif isinstance(raw, FunctionToolResultEvent):
            result = raw.part
            add(
                self._event(
                    ToolCompleted,
                    tool_call_id=result.tool_call_id,
                    output=result.content if raw.content is None else raw.content,
                    is_error=getattr(result, "outcome", "success") != "success",
                )
            )
        elif isinstance(raw, AgentRunResultEvent):
            self._finish(raw)

    def _finish(self, raw: AgentRunResultEvent[Any]) -> None:
        result = raw.result
        messages = result.all_messages()
        usage = result.usage
        self._tokens[0] += usage.input_tokens
        self._tokens[1] += usage.output_tokens
        output = result.output
        if isinstance(output, DeferredToolRequests):
            self._ask(output, messages)
            return
        self._provider.sessions[self._session_id] = messages
        if any(self._tokens):
            self._pending.append(
                self._event(Usage, input_tokens=self._tokens[0], output_tokens=self._tokens[1])
            )
        last = next((m for m in reversed(messages) if isinstance(m, ModelResponse)), None)
        reason = getattr(last, "finish_reason", None)
        stop = "end_turn" if reason in (None, "stop") else str(reason)
        self._pending.append(self._event(RunCompleted, stop_reason=stop))

    def _ask(self, requests: DeferredToolRequests, messages: list[ModelMessage]) -> None:
        """The agent stopped for tool calls that need approval: ask for each."""
        if requests.calls or not requests.approvals:
            names = ", ".join(call.tool_name for call in requests.calls) or "none"
            self._pending.append(
                self._event(
                    RunCrashed,
                    kind="internal",
                    message=f"the agent deferred tool calls for external execution ({names}); "
                    f"PydanticAIProvider answers approvals only",
                    retryable=False,
                )
            )
            self._reopen = True
            return
        self._deferred = messages
        self._reopen = True
        for call in requests.approvals:
            request_id = self._provider.ids.new("approval")
            self._approvals[request_id] = (call.tool_call_id, None)
            if call.tool_call_id not in self._tools:
                self._tools.add(call.tool_call_id)
                self._pending.append(
                    self._event(
                        ToolStarted,
                        tool_call_id=call.tool_call_id,
                        name=call.tool_name,
                        input=call.args_as_dict(),
                    )
                )
            self._pending.append(
                self._event(
                    ApprovalRequested,
                    request_id=request_id,
                    tool_call_id=call.tool_call_id,
                    tool=call.tool_name,
                    input=call.args_as_dict(),
                )
            )

    async def _close_stream(self) -> None:
        context, self._context, self._stream = self._context, None, None
        if context is not None:
            await context.__aexit__(None, None, None)

    async def interrupt(self, reason: str = "interrupted") -> None:
        """End the run: it finishes with ``run.killed`` (a no-op once it has ended)."""
        if self.finished or self._killed is not None:
            return
        self._killed = reason
        if self._answered is not None:
            self._answered.set()
        stream = self._stream
        if stream is not None:
            stream.cancel()

    async def respond(self, request_id: str, decision: str) -> None:
        """Answer an approval: ``"allow"`` runs the tool, ``"deny"`` tells the model no."""
        call, answered = self._approvals.get(request_id, ("", "unknown"))
        if answered is not None:
            open_ = ", ".join(self.open_requests) or "none"
            raise UsageError(
                f"run {self._run_id!r} has no open request {request_id!r} (open: {open_}); "
                f"respond to the request_id of an approval.requested event"
            )
        if decision not in ("allow", "deny"):
            raise UsageError(f"approval {request_id!r} takes 'allow' or 'deny', got {decision!r}")
        self._approvals[request_id] = (call, decision)
        self._pending.append(
            self._event(ApprovalResolved, request_id=request_id, decision=decision)
        )
        if self._answered is not None:
            self._answered.set()

    async def aclose(self) -> None:
        """Stop the run for good: the agent's task is cancelled and drained."""
        if not self.finished and self._killed is None:
            self._killed = "closed"
        await self._close_stream()
