"""What a Codex turn's items say, as normalized events — the one mapping behind both wires
Codex speaks: ``codex app-server``'s camelCase notifications (``agentMessage``,
``commandExecution``; read by ``providers.codex._items``) and ``codex exec --json``'s
snake_case lines (``agent_message``, ``command_execution``; read by ``drift.codex_exec``).

The wires carry the same items under other names; each reader hands ``TurnItems`` its
``ItemNames`` table and calls it with the items and token counts it found, wherever its wire
puts them. How a turn *ends* stays with each reader: the app-server names a failure with
``codexErrorInfo`` and reports an interrupt, exec gives only a message's text and its reader
holds the end until stdout closes. Nothing here imports the ``openai-codex`` SDK, so the exec
reader works without the ``codex`` extra.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from stuntset.events import (
    MessageCompleted,
    MessageDelta,
    ReasoningCompleted,
    ReasoningDelta,
    ToolCompleted,
    ToolStarted,
    Usage,
)

__all__ = ["ItemNames", "TurnItems"]


@dataclass(frozen=True, kw_only=True)
class ItemNames:
    """What one wire calls the items and fields ``TurnItems`` reads, and the few ways its
    reader renders them."""

    #: The agent message item's type (the reasoning item is ``reasoning`` on both wires).
    message: str
    #: The tool items' types → the tool name of ``tool.started`` (``command_execution``,
    #: ``file_change``, ``mcp_tool_call`` and ``web_search`` on either wire; an MCP call is
    #: named by its ``tool``).
    tools: Mapping[str, str]
    aggregated_output: str
    exit_code: str
    input_tokens: str
    output_tokens: str
    #: The command item's fields that are the tool's input (exec's item has no ``cwd``).
    command_input: tuple[str, ...]
    #: The reasoning item's fields that hold its text, the first one set wins (a list is
    #: joined by lines); none set: the text its deltas streamed.
    reasoning_text: tuple[str, ...]
    #: Text items are started before their deltas and completion: a completion of one never
    #: started is out of order. Exec streams no deltas and only completes them.
    text_started: bool
    #: A file change's output carries its ``status`` beside its ``changes``.
    change_status: bool
    #: An MCP call's output is its result's text parts joined (else the result as it is).
    mcp_text: bool


class TurnItems:
    """One turn's items in, normalized events out (``emit(cls, **fields)``). An impossible
    order (a delta or a completion for an item never started) raises ``out_of_order`` with a
    message naming the item."""

    def __init__(
        self, names: ItemNames, emit: Callable[..., None], out_of_order: type[Exception]
    ) -> None:
        self._names = names
        self._emit = emit
        self._out_of_order = out_of_order
        self._texts: dict[str, str] = {}  # open text item id → the text streamed so far
        self._tools_open: set[str] = set()
        self._usage = (0, 0)  # the turn's tokens (in, out) reported so far

    def delta(self, kind: str, item_id: str, text: str) -> None:
        """A ``text`` or ``reasoning`` delta for the open item ``item_id``."""
        if item_id not in self._texts:
            raise self._out_of_order(
                f"a {kind} delta for item {item_id!r}, which was never started"
            )
        self._texts[item_id] += text
        if text:
            self._emit(
                MessageDelta if kind == "text" else ReasoningDelta, item_id=item_id, text=text
            )

    def started(self, item: Mapping[str, Any]) -> None:
        kind = str(item.get("type"))
        item_id = str(item.get("id") or "")
        if kind in (self._names.message, "reasoning"):
            self._texts[item_id] = ""
        elif kind in self._names.tools and item_id not in self._tools_open:
            self._tools_open.add(item_id)
            tool = self._names.tools[kind]
            name, tool_input = self._tool_call(tool, item)
            server = item.get("server") if tool == "mcp_tool_call" else None
            self._emit(
                ToolStarted,
                tool_call_id=item_id,
                name=name,
                input=tool_input,
                server=str(server) if server else None,
            )

    def completed(self, item: Mapping[str, Any]) -> None:
        kind = str(item.get("type"))
        item_id = str(item.get("id") or "")
        if kind in (self._names.message, "reasoning"):
            if item_id not in self._texts and self._names.text_started:
                raise self._out_of_order(f"a {kind} item {item_id!r} completed, never started")
            so_far = self._texts.pop(item_id, "")
            delta: type[Any]
            completed: type[Any]
            if kind == self._names.message:
                text = str(item.get("text") or "")
                delta, completed = MessageDelta, MessageCompleted
            else:
                said = _text_of(item, self._names.reasoning_text)
                text = so_far if said is None else said
                delta, completed = ReasoningDelta, ReasoningCompleted
            if not so_far and text:  # nothing streamed: said whole
                self._emit(delta, item_id=item_id, text=text)
            self._emit(completed, item_id=item_id, text=text)
        elif kind in self._names.tools:
            if item_id not in self._tools_open:
                raise self._out_of_order(f"a {kind} item {item_id!r} completed, never started")
            self._tools_open.discard(item_id)
            output, is_error = self._tool_result(self._names.tools[kind], item)
            self._emit(ToolCompleted, tool_call_id=item_id, output=output, is_error=is_error)

    def add_usage(self, breakdown: Mapping[str, Any]) -> None:
        """Add one report of tokens (the wire's ``input_tokens`` / ``output_tokens``)."""
        tokens_in = int(breakdown.get(self._names.input_tokens) or 0)
        tokens_out = int(breakdown.get(self._names.output_tokens) or 0)
        self._usage = (self._usage[0] + tokens_in, self._usage[1] + tokens_out)

    def report_usage(self) -> None:
        """The turn's ``usage`` event, when any tokens were reported."""
        if any(self._usage):
            tokens_in, tokens_out = self._usage
            self._emit(Usage, input_tokens=tokens_in, output_tokens=tokens_out)

    def _tool_call(self, kind: str, item: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        if kind == "command_execution":
            return kind, {field: item.get(field) for field in self._names.command_input}
        if kind == "file_change":
            return kind, {"changes": item.get("changes") or []}
        if kind == "web_search":
            return kind, {"query": item.get("query")}
        arguments = item.get("arguments")
        tool_input = arguments if isinstance(arguments, dict) else {"arguments": arguments}
        return str(item.get("tool") or "mcp_tool"), tool_input

    def _tool_result(self, kind: str, item: Mapping[str, Any]) -> tuple[Any, bool]:
        names = self._names
        status = item.get("status")
        failed = status in ("failed", "declined")
        if kind == "command_execution":
            exit_code = item.get(names.exit_code)
            return item.get(names.aggregated_output), failed or exit_code not in (0, None)
        if kind == "file_change":
            changes = {"changes": item.get("changes") or []}
            return ({**changes, "status": status} if names.change_status else changes), failed
        if kind == "mcp_tool_call":
            error = item.get("error")
            if error:
                return (error.get("message") if isinstance(error, dict) else error), True
            if not names.mcp_text:
                return item.get("result"), failed
            content = (item.get("result") or {}).get("content") or []
            texts = [str(c.get("text")) for c in content if isinstance(c, dict) and "text" in c]
            return ("".join(texts) if texts else content), failed
        return item.get("query"), failed


def _text_of(item: Mapping[str, Any], fields: tuple[str, ...]) -> str | None:
    """The first of ``fields`` that is set, as text (a list's parts one a line); else None."""
    for field in fields:
        value = item.get(field)
        if value:
            return "\n".join(str(part) for part in value) if isinstance(value, list) else str(value)
    return None
