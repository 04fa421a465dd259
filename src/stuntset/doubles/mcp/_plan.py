"""Deciding what a tool call gets, before the SDK sees it.

Both transports hand every client message to ``Dispatcher.on_message`` first. It records the
message in the journal and, for ``tools/call``, chooses the script's turn and makes a
``Plan``: a pause, then a result (or error result, or JSON-RPC error) that the SDK's
``tools/call`` handler returns, or a fault that the transport renders itself, below the SDK
(a malformed line, a crash, a dropped connection, a 401). No ``mcp`` import here.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
from typing import Any, NoReturn, assert_never

import msgspec

from stuntset.errors import ScriptExhausted
from stuntset.script import (
    ApprovalRequest,
    AuthExpired,
    Delay,
    Exit,
    FaultStep,
    HttpError,
    InputRequest,
    Overloaded,
    RateLimit,
    Reasoning,
    ScriptPlayer,
    Step,
    Text,
    ToolCall,
    ToolResult,
    TurnRequest,
    Usage,
    kind_of,
)

from .journal import JournalWriter, McpCall
from .spec import McpServerSpec

__all__ = [
    "HTTP_ONLY_FAULTS",
    "META_KEY",
    "Dispatcher",
    "Plan",
    "exit_as_scripted",
    "with_token",
]

#: The ``_meta`` key a transport adds to a ``tools/call`` it forwards, naming its plan.
META_KEY = "io.stuntset/plan"
#: JSON-RPC codes (the MCP spec's): an unknown tool is invalid params; anything else internal.
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: Faults that are HTTP statuses; over stdio they are JSON-RPC errors.
HTTP_ONLY_FAULTS = (HttpError, AuthExpired, RateLimit, Overloaded)


def with_token(message: dict[str, Any], token: str) -> dict[str, Any]:
    """``message`` with the plan's ``token`` in ``params._meta`` (params that are not an
    object are replaced: their plan already answers them with an invalid-params error)."""
    params = message.get("params")
    params = dict(params) if isinstance(params, dict) else {}
    meta = params.get("_meta")
    params["_meta"] = {**(meta if isinstance(meta, dict) else {}), META_KEY: token}
    return {**message, "params": params}


def exit_as_scripted(fault: Exit) -> NoReturn:
    """End this process now, as a crash does (``os._exit``: no cleanup, no ``atexit``), with
    ``fault``'s stderr and code. A coverage measurement in progress (stuntset's own suite
    measures the servers it starts) is saved first: ``atexit`` would have saved it."""
    if fault.stderr:
        sys.stderr.write(fault.stderr.rstrip("\n") + "\n")
    sys.stderr.flush()
    coverage = sys.modules.get("coverage")
    current = coverage.Coverage.current() if coverage is not None else None
    if current is not None:  # pragma: no branch - the suite measures every server it starts
        current.stop()
        current.save()  # pragma: no cover - nothing is measured once stopped
    os._exit(fault.code)  # pragma: no cover - nor here


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    """What one tool call gets: ``delay`` seconds of silence, then ``fault`` (rendered by the
    transport) or ``error`` (a JSON-RPC error) or ``result`` (a ``CallToolResult``, as the
    dict the SDK validates)."""

    delay: float = 0.0
    result: dict[str, Any] | None = None
    error: tuple[int, str] | None = None
    fault: FaultStep | None = None
    id: str | int | None = None


def _content(output: Any) -> dict[str, Any]:
    if isinstance(output, str):
        return {"content": [{"type": "text", "text": output}]}
    if isinstance(output, list) and all(isinstance(b, dict) and "type" in b for b in output):
        return {"content": output}
    text = json.dumps(output)
    if isinstance(output, dict):
        return {"content": [{"type": "text", "text": text}], "structured_content": output}
    return {"content": [{"type": "text", "text": text}]}


def _error_message(step: Step) -> str:
    if isinstance(step, HttpError):
        return step.message or f"HTTP {step.status}"
    return str(getattr(step, "message", kind_of(step)))


def plan_turn(steps: tuple[Step, ...], *, transport: str, time_scale: float) -> Plan:
    """Play a turn's steps up to its ``ToolResult`` or fault."""
    delay = 0.0
    texts: list[str] = []
    for step in steps:
        if isinstance(step, Delay):
            delay += step.seconds
        elif isinstance(step, Text):
            texts.append(step.text)
            delay += step.interval * max(len(step.deltas()) - 1, 0)
        elif isinstance(step, ToolResult):
            result = _content(step.output)
            if step.is_error:
                result["is_error"] = True
            return Plan(delay=delay * time_scale, result=result)
        elif isinstance(step, FaultStep):
            if transport == "stdio" and isinstance(step, HTTP_ONLY_FAULTS):
                return Plan(delay=delay * time_scale, error=(INTERNAL_ERROR, _error_message(step)))
            return Plan(delay=delay * time_scale, fault=step)
        elif isinstance(step, ToolCall | Reasoning | Usage | ApprovalRequest | InputRequest):
            pass  # ToolCall names the tool the turn answers; usage and reasoning are the model's
        else:
            assert_never(step)
    text = "".join(texts)
    return Plan(delay=delay * time_scale, result=_content(text) if texts else {"content": []})


def _outcome(plan: Plan) -> str:
    if plan.fault is not None:
        return f"fault:{kind_of(plan.fault)}"
    if plan.error is not None:
        return "error"
    return "error_result" if plan.result and plan.result.get("is_error") else "result"


class Dispatcher:
    """Records every client message and plans every tool call (thread-safe)."""

    def __init__(
        self,
        spec: McpServerSpec,
        journal: JournalWriter,
        *,
        transport: str,
        time_scale: float = 1.0,
        player: ScriptPlayer | None = None,
    ) -> None:
        self.spec = spec
        self.journal = journal
        self.transport = transport
        self.time_scale = time_scale
        self.player = player if player is not None else ScriptPlayer(spec.call_script())
        self.tools = {tool.name for tool in spec.listed_tools()}
        self.exhausted: list[str] = []
        self._plans: dict[str, Plan] = {}
        self._tokens = itertools.count(1)
        self._lock = threading.Lock()

    def unparsed(self, raw: bytes | str, session: str) -> None:
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
        self.journal.write(
            McpCall(
                transport=self.transport,
                session=session,
                method=None,
                outcome="unparsed",
                params=text[:1000],
            )
        )

    def on_message(
        self, message: Any, session: str, *, outcome: str | None = None
    ) -> tuple[str, Plan] | None:
        """Record ``message`` (a decoded JSON-RPC message); for a ``tools/call``, return the
        token and plan of its answer."""
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            if isinstance(message, dict) and ("result" in message or "error" in message):
                kind = "response"
            else:
                kind = "unparsed"
            self.journal.write(
                McpCall(
                    transport=self.transport,
                    session=session,
                    method=None,
                    outcome=outcome or kind,
                    id=message.get("id") if isinstance(message, dict) else None,
                    params=message,
                )
            )
            return None
        method: str = message["method"]
        params = message.get("params")
        ident = message.get("id")
        base = McpCall(
            transport=self.transport,
            session=session,
            method=method,
            outcome=outcome or ("notification" if ident is None else "request"),
            id=ident,
            params=params,
        )
        if outcome is not None or method != "tools/call" or ident is None:
            self.journal.write(base)
            return None
        malformed = params is not None and not isinstance(params, dict)
        params = params if isinstance(params, dict) else {}
        tool = params.get("name")
        arguments = params.get("arguments") or {}
        turn: int | None = None
        if malformed:  # a JSON-RPC error, as the SDK answers; no scripted turn is played
            plan = Plan(error=(INVALID_PARAMS, "Invalid params: params must be an object"))
            recorded = "invalid_params"
        elif tool not in self.tools:
            plan = Plan(error=(INVALID_PARAMS, f"Unknown tool: {tool}"))
            recorded = "unknown_tool"
        else:
            request = TurnRequest(
                input_text=json.dumps(arguments, sort_keys=True),
                model=str(tool),
                wire="mcp",
                body=params,
            )
            try:
                played = self.player.next_turn(request)
            except ScriptExhausted as error:
                with self._lock:
                    self.exhausted.append(str(error))
                plan = Plan(error=(INTERNAL_ERROR, f"stuntset: {error}"))
                recorded = "exhausted"
            else:
                turn = played.index
                plan = plan_turn(
                    played.turn.steps, transport=self.transport, time_scale=self.time_scale
                )
                recorded = _outcome(plan)
        plan = msgspec.structs.replace(plan, id=ident)
        self.journal.write(
            msgspec.structs.replace(
                base,
                outcome=recorded,
                tool=tool,
                arguments=arguments,
                turn=turn,
                result=plan.result if plan.result is not None else plan.error,
            )
        )
        token = f"{session}:{next(self._tokens)}"
        with self._lock:
            self._plans[token] = plan
        return token, plan

    def take(self, token: str) -> Plan | None:
        """The plan a transport forwarded with its call (once)."""
        with self._lock:
            return self._plans.pop(token, None)
