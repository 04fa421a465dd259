"""What a Codex turn's notifications say, as normalized events: text and reasoning deltas,
tool items started and completed, the turn's usage and its end (the table in the package
docs). Runs on the run's driver thread; every event goes out through ``emit``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stuntset.events import (
    MessageCompleted,
    MessageDelta,
    ReasoningCompleted,
    ReasoningDelta,
    RunCompleted,
    RunCrashed,
    RunKilled,
    ToolCompleted,
    ToolStarted,
    Usage,
)
from stuntset.providers.codex._crash import OutOfOrder, turn_crash

__all__ = ["Translator"]

_TOOL_ITEMS = frozenset({"commandExecution", "fileChange", "mcpToolCall", "webSearch"})


class Translator:
    """One turn's notifications in, normalized events out (``emit(cls, **fields)``).
    ``killed`` tells the reason the run is being ended, if it is (an interrupted turn's
    ``run.killed`` carries it). Raises ``OutOfOrder`` on an impossible order."""

    def __init__(self, emit: Callable[..., None], killed: Callable[[], str | None]) -> None:
        self._emit = emit
        self._killed = killed
        self._texts: dict[str, tuple[str, str]] = {}  # item id → ("text"/"reasoning", so far)
        self._tools_open: set[str] = set()
        #: The turn's own tokens: the sum of each model response's ``last`` (None: none
        #: reported).
        self._usage: tuple[int, int] | None = None

    def handle(self, method: str, params: dict[str, Any]) -> bool:
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
            self._add_usage(params)
        elif method == "turn/completed":
            self._completed(params.get("turn") or {})
            return True
        return False

    def _add_usage(self, params: dict[str, Any]) -> None:
        """Codex sends ``thread/tokenUsage/updated`` after each model response of the turn
        (a tool round trip, a retry, a steer's follow-up make several): ``last`` is that
        response's tokens, ``total`` the thread's running total — which counts earlier turns
        too, also those of a thread resumed from another process, where no total before the
        turn is known. So the turn's own usage is the sum of its ``last`` values."""
        last = (params.get("tokenUsage") or {}).get("last") or {}
        tokens_in = int(last.get("inputTokens") or 0)
        tokens_out = int(last.get("outputTokens") or 0)
        so_far_in, so_far_out = self._usage or (0, 0)
        self._usage = (so_far_in + tokens_in, so_far_out + tokens_out)

    def _delta(self, kind: str, params: dict[str, Any]) -> None:
        item_id = str(params.get("itemId") or "")
        text = str(params.get("delta") or "")
        if item_id not in self._texts:
            raise OutOfOrder(f"a {kind} delta for item {item_id!r}, which was never started")
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
                raise OutOfOrder(f"a {kind} item {item_id!r} completed, never started")
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
                raise OutOfOrder(f"a {kind} item {item_id!r} completed, never started")
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
            self._emit(RunKilled, reason=self._killed() or "interrupted")
        else:
            kind, message, retryable = turn_crash(turn.get("error"))
            self._emit(RunCrashed, kind=kind, message=message, retryable=retryable)


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
