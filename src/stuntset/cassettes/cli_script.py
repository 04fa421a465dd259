"""A recorded CLI run read back as script turns: one turn per agent turn (a prompt and
everything up to its result), so a real ``claude`` or ``codex`` session becomes a scenario the
fake CLIs — or, through turn segmentation, the model doubles — can play.

=====================  ======================================================================
claude (stream-json)   ``assistant`` text / thinking / tool_use blocks → ``Text`` /
                       ``Reasoning`` / ``ToolCall``; a ``user`` tool_result → ``ToolResult``
                       (not for a call the client denied: the fake makes that one itself);
                       ``can_use_tool`` → ``ApprovalRequest``, for ``AskUserQuestion`` →
                       ``InputRequest``; the ``result`` → ``Usage`` (its cost: the process's
                       running ``total_cost_usd`` less the earlier turns'), and ``HttpError``
                       for an API error; each ``result`` ends a turn
codex exec (JSONL)     ``item.started`` / ``item.completed``: ``agent_message`` / ``reasoning`` → ``Text`` /
                       ``Reasoning``; command, MCP, file-change, web-search and plan items →
                       ``ToolCall`` + ``ToolResult``, named as codex's own tools
                       (``exec_command``, ``mcp__<server>__<tool>``, ``apply_patch``,
                       ``web_search``, ``update_plan``); ``turn.completed`` → ``Usage`` (the
                       thread's running total, less the earlier turns'); ``turn.failed`` →
                       ``HttpError``
codex app-server       the same items from ``item/started`` / ``item/completed``;
                       ``requestApproval`` → ``ApprovalRequest``; ``requestUserInput`` →
                       ``InputRequest``; ``thread/tokenUsage/updated`` → ``Usage``;
                       ``turn/completed`` ends a turn (``failed`` → ``HttpError``,
                       ``interrupted`` → ``Stall``: the client had to stop it)
=====================  ======================================================================

A line that is not JSON ends its turn with ``MalformedJson``, a line the process died in the
middle of with ``StreamCut``; a run that ends mid-turn ends its last turn with ``StreamCut``
(exit 0) or ``Exit`` (the recorded status). These are the CLI's own stdout breaking, so the
steps say ``cli=True``: a fake CLI replays them as they were recorded (a model double
refuses them: the model stream never broke). Chunking and timing are not kept (replay the cassette itself
for those).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from typing import Any

from stuntset.cassettes.format import CassetteError, Interaction
from stuntset.script import (
    ApprovalRequest,
    Exit,
    HttpError,
    InputRequest,
    MalformedJson,
    Reasoning,
    Stall,
    Step,
    StreamCut,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)

__all__ = ["cli_turns"]


class _Turns:
    """Steps gathered into turns as a run is read."""

    def __init__(self, interaction: Interaction) -> None:
        self.interaction = interaction
        self.turns: list[Turn] = []
        self.steps: list[Step] = []

    def end(self, *last: Step) -> None:
        """End the current turn (with ``last`` steps)."""
        self.turns.append(Turn(steps=(*self.steps, *last)))
        self.steps = []

    def messages(self) -> Iterator[Any]:
        """Each stdout line parsed; a line that is not JSON, or cut, ends its turn with the
        fault it stands for."""
        status = self.interaction.response.status
        for frame in self.interaction.response.frames or []:
            if frame.event == "partial":
                self.end(StreamCut(clean=status == 0, cli=True))
                continue
            try:
                message = json.loads(frame.data)
            except ValueError:
                self.end(MalformedJson(frame.data, cli=True))
                continue
            yield message

    def result(self) -> list[Turn]:
        """The turns, the last one ended as the run ended if it was still open."""
        if self.steps:
            status = self.interaction.response.status
            self.end(Exit(code=status) if status > 0 else StreamCut(clean=True, cli=True))
        return self.turns


def _stdin(interaction: Interaction) -> list[Any]:
    body = interaction.request.body
    out = []
    for line in body.get("stdin", []) if isinstance(body, dict) else []:
        try:
            out.append(json.loads(line["data"]))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def _text_of(content: Any) -> Any:
    """A tool result's content as the script holds it (text blocks joined)."""
    if isinstance(content, list) and all(isinstance(c, dict) for c in content):
        texts = [str(c.get("text", "")) for c in content if c.get("type") == "text"]
        if len(texts) == len(content):
            return "".join(texts)
    return content


# --- claude ------------------------------------------------------------------------------------


def _claude_turns(interaction: Interaction) -> list[Turn]:
    denied = {
        m["response"].get("request_id")
        for m in _stdin(interaction)
        if isinstance(m, dict)
        and m.get("type") == "control_response"
        and isinstance(m.get("response"), dict)
        and (m["response"].get("response") or {}).get("behavior") == "deny"
    }
    turns = _Turns(interaction)
    questions: dict[str, str] = {}  # AskUserQuestion tool_use id → the question
    skip: set[str] = set()  # tool_use ids whose result the fake makes itself (a denial)
    spent = [0.0]  # the process's running total_cost_usd so far
    for message in turns.messages():
        steps = turns.steps
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "assistant":
            for block in message.get("message", {}).get("content", []):
                step = _claude_block(block, questions)
                if step is not None:
                    steps.append(step)
        elif kind == "user":
            content = message.get("message", {}).get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") != "tool_result" or block.get("tool_use_id") in skip:
                    continue
                if block.get("tool_use_id") in questions:
                    continue  # its InputRequest stands for it
                steps.append(
                    ToolResult(
                        _text_of(block.get("content", "")),
                        is_error=bool(block.get("is_error")),
                        tool_call_id=block.get("tool_use_id"),
                    )
                )
        elif kind == "control_request":
            request = message.get("request", {})
            if request.get("subtype") != "can_use_tool":
                continue
            if request.get("tool_name") == "AskUserQuestion":
                steps.append(InputRequest(questions.get(request.get("tool_use_id"), "")))
                continue
            steps.append(
                ApprovalRequest(
                    tool=request.get("tool_name"),
                    input=request.get("input"),
                    tool_call_id=request.get("tool_use_id"),
                )
            )
            if message.get("request_id") in denied:
                skip.add(request.get("tool_use_id"))
        elif kind == "result":
            turns.end(*_claude_result(message, spent))
    return turns.result()


def _claude_block(block: dict[str, Any], questions: dict[str, str]) -> Step | None:
    kind = block.get("type")
    if kind == "text":
        return Text(block.get("text", ""))
    if kind == "thinking":
        return Reasoning(block.get("thinking", ""), signature=block.get("signature"))
    if kind == "tool_use":
        if block.get("name") == "AskUserQuestion":
            asked = (block.get("input") or {}).get("questions") or [{}]
            questions[block.get("id", "")] = str(asked[0].get("question", ""))
            return None
        return ToolCall(block.get("name", ""), block.get("input") or {}, id=block.get("id"))
    return None


def _claude_result(message: dict[str, Any], spent: list[float]) -> list[Step]:
    steps: list[Step] = []
    usage = message.get("usage") or {}
    total = float(message.get("total_cost_usd") or 0.0)
    cost = round(total - spent[0], 10)
    spent[0] = total
    tokens = int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)
    if any(tokens) or cost:
        steps.append(Usage(input_tokens=tokens[0], output_tokens=tokens[1], cost=cost or None))
    status = message.get("api_error_status")
    if message.get("is_error") and isinstance(status, int):
        steps.append(HttpError(status, message=str(message.get("result") or "") or None))
    return steps


# --- codex ------------------------------------------------------------------------------------

_BASH = re.compile(r"^/bin/(?:ba)?sh -lc (.+)$", re.DOTALL)


def _command(text: str) -> str:
    """``/bin/bash -lc 'make test'`` → ``make test`` (as the script's tool input had it)."""
    found = _BASH.match(text)
    if found:
        parts = shlex.split(found.group(1))
        if len(parts) == 1:
            return parts[0]
    return text


def _codex_call(item: dict[str, Any]) -> ToolCall | None:
    """The tool call an item stands for (``None``: not a tool: text, reasoning, the prompt)."""
    kind = item.get("type", "")
    ident = item.get("id")
    if kind in ("command_execution", "commandExecution"):
        command = _command(str(item.get("command", "")))
        return ToolCall("exec_command", {"cmd": command}, id=ident)
    if kind in ("mcp_tool_call", "mcpToolCall"):
        name = f"mcp__{item.get('server', '')}__{item.get('tool', '')}"
        return ToolCall(name, item.get("arguments") or {}, id=ident)
    if kind in ("file_change", "fileChange"):
        changes = [
            {"path": c.get("path"), "kind": _kind(c.get("kind"))} for c in item.get("changes", [])
        ]
        return ToolCall("apply_patch", {"changes": changes}, id=ident)
    if kind in ("web_search", "webSearch"):
        return ToolCall("web_search", {"query": item.get("query", "")}, id=ident)
    if kind == "todo_list":
        plan = [
            {"step": i.get("text"), "status": "completed" if i.get("completed") else "pending"}
            for i in item.get("items", [])
        ]
        return ToolCall("update_plan", {"plan": plan}, id=ident)
    return None


def _kind(value: Any) -> str:
    return str(value.get("type")) if isinstance(value, dict) else str(value or "update")


def _codex_result(item: dict[str, Any]) -> ToolResult:
    kind = item.get("type", "")
    ident = item.get("id")
    if kind in ("command_execution", "commandExecution"):
        output = item.get("aggregated_output", item.get("aggregatedOutput")) or ""
        code = item.get("exit_code", item.get("exitCode"))
        return ToolResult(output, is_error=code not in (0, None), tool_call_id=ident)
    if kind in ("mcp_tool_call", "mcpToolCall"):
        error = item.get("error")
        if error:
            return ToolResult(str(error.get("message", "")), is_error=True, tool_call_id=ident)
        result = item.get("result") or {}
        return ToolResult(_text_of(result.get("content", "")), tool_call_id=ident)
    return ToolResult("", is_error=item.get("status") == "failed", tool_call_id=ident)


def _content_step(item: dict[str, Any]) -> Step | None:
    kind = item.get("type")
    if kind in ("agent_message", "agentMessage"):
        return Text(str(item.get("text", "")))
    if kind == "reasoning":
        summary = item.get("summary")
        text = "".join(summary) if isinstance(summary, list) else str(item.get("text", ""))
        return Reasoning(text)
    return None


def _error_step(message: str) -> HttpError:
    found = re.search(r"\b([45]\d\d)\b", message)
    return HttpError(int(found.group(1)) if found else 500, message=message or None)


class _Items:
    """Item lifecycle → steps: a tool's call when it starts, its result when it completes (so
    parallel calls read as calls, then results); text and reasoning when complete."""

    def __init__(self) -> None:
        self.started: set[Any] = set()

    def start(self, item: dict[str, Any], steps: list[Step]) -> None:
        call = _codex_call(item)
        if call is not None:
            self.started.add(item.get("id"))
            steps.append(call)

    def complete(self, item: dict[str, Any], steps: list[Step]) -> None:
        call = _codex_call(item)
        if call is not None:
            if item.get("id") not in self.started:
                steps.append(call)
            steps.append(_codex_result(item))
        elif (step := _content_step(item)) is not None:
            steps.append(step)


class _Usage:
    """The thread's running token total, turned into each turn's share."""

    def __init__(self) -> None:
        self.seen = (0, 0)

    def step(self, total: tuple[int, int]) -> list[Step]:
        share = (total[0] - self.seen[0], total[1] - self.seen[1])
        self.seen = total
        return [Usage(input_tokens=share[0], output_tokens=share[1])] if any(share) else []


def _codex_exec_turns(interaction: Interaction) -> list[Turn]:
    turns = _Turns(interaction)
    usage = _Usage()
    items = _Items()
    for message in turns.messages():
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "item.started":
            items.start(message.get("item") or {}, turns.steps)
        elif kind == "item.completed":
            items.complete(message.get("item") or {}, turns.steps)
        elif kind == "turn.completed":
            used = message.get("usage") or {}
            turns.end(
                *usage.step(
                    (int(used.get("input_tokens") or 0), int(used.get("output_tokens") or 0))
                )
            )
        elif kind == "turn.failed":
            turns.end(_error_step(str((message.get("error") or {}).get("message", ""))))
    return turns.result()


def _codex_app_server_turns(interaction: Interaction) -> list[Turn]:
    turns = _Turns(interaction)
    usage: list[Step] = []
    items = _Items()
    for message in turns.messages():
        steps = turns.steps
        if not isinstance(message, dict) or "method" not in message:
            continue  # a response to one of the client's requests
        method, params = message["method"], message.get("params") or {}
        item = params.get("item") or {}
        if method == "item/started":
            items.start(item, steps)
        elif method == "item/completed":
            items.complete(item, steps)
        elif method.endswith("/requestApproval"):
            steps.append(ApprovalRequest(tool_call_id=params.get("itemId")))
        elif method == "item/tool/requestUserInput":
            asked = params.get("questions") or [{}]
            steps.append(InputRequest(str(asked[0].get("question", ""))))
        elif method == "thread/tokenUsage/updated":
            last = (params.get("tokenUsage") or {}).get("last") or {}
            used = int(last.get("inputTokens") or 0), int(last.get("outputTokens") or 0)
            usage = [Usage(input_tokens=used[0], output_tokens=used[1])] if any(used) else []
        elif method == "turn/completed":
            turn = params.get("turn") or {}
            status = turn.get("status")
            ending: list[Step] = []  # a fault last: it ends the turn
            if status == "failed":
                ending = [_error_step(str((turn.get("error") or {}).get("message", "")))]
            elif status == "interrupted":
                ending = [Stall()]
            turns.end(*usage, *ending)
            usage = []
    return turns.result()


def cli_turns(interaction: Interaction) -> list[Turn]:
    """The script turns a recorded ``claude`` or ``codex`` run holds."""
    if interaction.wire == "claude-cli":
        return _claude_turns(interaction)
    if interaction.wire == "codex-cli":
        argv = interaction.request.body.get("argv", []) if interaction.request.body else []
        if "app-server" in argv:
            return _codex_app_server_turns(interaction)
        return _codex_exec_turns(interaction)
    raise CassetteError(
        f"interaction {interaction.id}: a {interaction.wire} transcript cannot be read as a "
        f"script (known: claude-cli, codex-cli)"
    )
