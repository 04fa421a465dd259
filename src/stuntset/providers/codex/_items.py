"""What a Codex turn's notifications say, as normalized events: text and reasoning deltas,
tool items started and completed, the turn's usage and its end (the table in the package
docs). The items themselves are read by ``providers._codex_turn_items`` (shared with drift's
``codex exec`` reader) under the app-server's names below. Runs on the run's driver thread;
every event goes out through ``emit``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stuntset.events import RunCompleted, RunCrashed, RunKilled
from stuntset.providers._codex_turn_items import ItemNames, TurnItems
from stuntset.providers.codex._crash import OutOfOrder, turn_crash

__all__ = ["APP_SERVER", "Translator"]

#: The app-server's (v2, camelCase) names for what ``TurnItems`` reads.
APP_SERVER = ItemNames(
    message="agentMessage",
    tools={
        "commandExecution": "command_execution",
        "fileChange": "file_change",
        "mcpToolCall": "mcp_tool_call",
        "webSearch": "web_search",
    },
    aggregated_output="aggregatedOutput",
    exit_code="exitCode",
    input_tokens="inputTokens",
    output_tokens="outputTokens",
    command_input=("command", "cwd"),
    reasoning_text=("summary", "content"),
    text_started=True,
    change_status=True,
    mcp_text=True,
)


class Translator:
    """One turn's notifications in, normalized events out (``emit(cls, **fields)``).
    ``killed`` tells the reason the run is being ended, if it is (an interrupted turn's
    ``run.killed`` carries it). Raises ``OutOfOrder`` on an impossible order."""

    def __init__(self, emit: Callable[..., None], killed: Callable[[], str | None]) -> None:
        self._emit = emit
        self._killed = killed
        self._items = TurnItems(APP_SERVER, emit, OutOfOrder)
        self._usage_reports = 0
        #: What ``turn/completed`` said beyond the events (empty until it came): ``status``,
        #: ``error`` (``codexErrorInfo``: its name, or ``name httpStatusCode``), ``usage``
        #: (whether any ``thread/tokenUsage/updated`` came).
        self.result_fields: dict[str, Any] = {}

    def handle(self, method: str, params: dict[str, Any]) -> bool:
        """One notification; True once the turn is over (its terminal emitted)."""
        if method == "item/agentMessage/delta":
            self._delta("text", params)
        elif method in ("item/reasoning/summaryTextDelta", "item/reasoning/textDelta"):
            self._delta("reasoning", params)
        elif method == "item/started":
            self._items.started(params.get("item") or {})
        elif method == "item/completed":
            self._items.completed(params.get("item") or {})
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
        self._usage_reports += 1
        self._items.add_usage((params.get("tokenUsage") or {}).get("last") or {})

    def _delta(self, kind: str, params: dict[str, Any]) -> None:
        item_id = str(params.get("itemId") or "")
        self._items.delta(kind, item_id, str(params.get("delta") or ""))

    def _completed(self, turn: dict[str, Any]) -> None:
        """The turn's end. Not shared with exec's reader: the app-server says how a turn ended
        in ``status`` (an interrupt included) and names a failure with ``codexErrorInfo``;
        exec has no interrupted turn and only a failure's text."""
        status = turn.get("status")
        self.result_fields = {
            "status": status,
            "error": error_info(turn.get("error")),
            "usage": self._usage_reports > 0,
        }
        self._items.report_usage()
        if status == "completed":
            self._emit(RunCompleted, stop_reason="end_turn")
        elif status == "interrupted":
            self._emit(RunKilled, reason=self._killed() or "interrupted")
        else:
            kind, message, retryable = turn_crash(turn.get("error"))
            self._emit(RunCrashed, kind=kind, message=message, retryable=retryable)


def error_info(error: Any) -> str | None:
    """A failed turn's ``codexErrorInfo`` in a few words: ``usageLimitExceeded``,
    ``responseStreamDisconnected 401`` (with its ``httpStatusCode``); ``None`` without one."""
    info = error.get("codexErrorInfo") if isinstance(error, dict) else None
    if isinstance(info, str):
        return info
    if isinstance(info, dict) and info:
        name, detail = next(iter(info.items()))
        status = detail.get("httpStatusCode") if isinstance(detail, dict) else None
        return str(name) if status is None else f"{name} {status}"
    return None
