"""Tool calls in a turn of the fake ``codex app-server``: the item each becomes
(``commandExecution``, ``fileChange``, ``webSearch``, ``plan``, ``mcpToolCall``), its result,
its approval (asked of the client, declined under ``never``, or approved by the automatic
reviewer), and questions (``item/tool/requestUserInput`` in Plan mode; refused, unseen, in
Default mode).

Runs in the fake process (built-ins only, see ``_runtime``), on an ``app_turn.Turn``, loaded
when a turn's first tool op plays. Shapes as codex-cli 0.163.0 writes them (protocols.md
§6.6): approvals are server → client requests, then ``serverRequest/resolved``; the automatic
reviewer shows as ``item/autoApprovalReview/started``/``completed``.
"""

from __future__ import annotations

from stuntset.doubles.cli.codex._process.common import text_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli.codex._process.app_state import ToolTurn as Turn

__all__ = ["play_tool_op"]


def play_tool_op(turn: Turn, op: tuple[Any, ...]) -> bool:
    """Render a tool op: a tool call's item, its result, its approval, or a question. True
    if the client cancelled the turn (an approval answered ``cancel``)."""
    kind = op[0]
    if kind == "tool":
        _start_tool(turn, op)
    elif kind == "result":
        turn.after_results = True
        _, output, is_error, call_id = op
        target = call_id or (turn.waiting[0] if turn.waiting else None)
        if target is not None and target in turn.calls:
            _finish_tool(turn, target, output, bool(is_error))
    elif kind == "approval":
        return _approval(turn, op)
    else:
        # the model's request_user_input call: asked in Plan mode, refused in Default mode
        # (nothing shown); either way its output ends the model response
        if turn.thread.get("mode") == "plan":
            _ask(turn, op[1])
        turn.after_results = True
    return False


def _start_tool(turn: Turn, op: tuple[Any, ...]) -> None:
    _, call_id, kind, _name, tool_input, details = op
    turn.tools_called = True
    key = call_id or f"call-{len(turn.calls) + 1}"
    item_id = "call_" + turn.item_ids.hex(24)
    if kind == "command":
        item = {
            "type": "commandExecution",
            "id": item_id,
            "command": details["command"],
            "commandActions": [{"type": "unknown", "command": details["command"]}],
            "cwd": turn.thread["cwd"],
            "processId": None,
            "source": "agent",
            "status": "inProgress",
            "aggregatedOutput": None,
            "exitCode": None,
            "durationMs": None,
        }
    elif kind == "file_change":
        changes = [
            {"path": c["path"], "kind": {"type": c["kind"]}, "diff": c["diff"]}
            for c in details["changes"]
        ]
        item = {"type": "fileChange", "id": item_id, "changes": changes, "status": "inProgress"}
    elif kind == "web_search":
        query = details["query"]
        item = {
            "type": "webSearch",
            "id": item_id,
            "query": query,
            "action": {"type": "search", "query": query, "queries": None},
        }
    elif kind == "todo":
        plan = [
            {"step": entry["text"], "status": "completed" if entry["completed"] else "pending"}
            for entry in details["items"]
        ]
        turn.notify("turn/plan/updated", explanation=None, plan=plan)
        item = {"type": "plan", "id": item_id, "text": ""}
    else:
        item = {
            "type": "mcpToolCall",
            "id": item_id,
            "server": details["server"],
            "tool": details["tool"],
            "status": "inProgress",
            "arguments": tool_input,
            "result": None,
            "error": None,
            "durationMs": None,
        }
    turn.calls[key] = {"item": item, "kind": kind, "declined": False}
    turn.waiting.append(key)
    turn.last_call = key
    if kind != "todo":
        turn.item("item/started", item)


def _finish_tool(turn: Turn, key: str, output: Any, is_error: bool) -> None:
    call = turn.calls[key]
    if key in turn.waiting:
        turn.waiting.remove(key)
    if call["declined"] or call.get("done"):
        return
    call["done"] = True
    item = call["item"]
    status = "failed" if is_error else "completed"
    kind = item["type"]
    if kind == "plan":
        return
    if kind == "commandExecution":
        text = text_of(output)
        if text:
            turn.notify("item/commandExecution/outputDelta", itemId=item["id"], delta=text)
        item.update(aggregatedOutput=text, exitCode=1 if is_error else 0, durationMs=0)
        item["status"] = status
    elif kind == "fileChange":
        item["status"] = status
    elif kind == "mcpToolCall":
        if is_error:
            item["error"] = {"message": text_of(output)}
        else:
            content = [{"type": "text", "text": text_of(output)}]
            item["result"] = {"content": content, "structuredContent": None}
        item.update(status=status, durationMs=0)
    turn.item("item/completed", item)


def _approval(turn: Turn, op: tuple[Any, ...]) -> bool:
    """Ask for (or decide) the approval of a tool call; True if the client cancelled the
    turn (``Interrupted``, raised by the turn)."""
    _, tool, tool_input, call_id, details = op
    key = call_id or turn.last_call
    if key is None or key not in turn.calls:
        key = key or f"approval-{len(turn.calls) + 1}"
        kind, info = details if details is not None else ("command", {"command": str(tool)})
        _start_tool(turn, ("tool", key, kind, tool, tool_input or {}, info))
    call = turn.calls[key]
    item = call["item"]
    settings = turn.server.settings.get(turn.thread["id"], {})
    policy = settings.get("approvalPolicy")
    if policy == "never":
        decision: Any = "decline"
    elif settings.get("approvalsReviewer") in ("auto_review", "guardian_subagent"):
        decision = "accept"
        _auto_review(turn, item)
    else:
        params = {
            "threadId": turn.thread["id"],
            "turnId": turn.id,
            "itemId": item["id"],
            "startedAtMs": turn.server.clock.tick(),
            "reason": None,
        }
        if item["type"] == "fileChange":
            method = "item/fileChange/requestApproval"
            params["grantRoot"] = None
        else:
            method = "item/commandExecution/requestApproval"
            command = item.get("command") or f"{item.get('tool', tool)} {tool_input or {}}"
            params.update(
                approvalId=None,
                command=command,
                cwd=turn.thread["cwd"],
                commandActions=[{"type": "unknown", "command": command}],
                proposedExecpolicyAmendment=None,
            )
        answer = turn.server.server_request(method, params)
        request_id = turn.server.next_request - 1
        turn.resolved(request_id)
        result = answer.get("result") if isinstance(answer, dict) else None
        decision = result.get("decision") if isinstance(result, dict) else "decline"
    if decision in ("accept", "acceptForSession") or (
        isinstance(decision, dict)
        and (
            "acceptWithExecpolicyAmendment" in decision or "applyNetworkPolicyAmendment" in decision
        )
    ):
        return False
    call["declined"] = True
    if key in turn.waiting:
        turn.waiting.remove(key)
    if item["type"] in ("commandExecution", "fileChange"):
        item["status"] = "declined"
    else:
        item.update(status="failed", error={"message": "user rejected the tool call"})
    turn.item("item/completed", item)
    return bool(decision == "cancel")


def _auto_review(turn: Turn, item: dict[str, Any]) -> None:
    """The automatic reviewer (``approvalsReviewer: auto_review``, the SDK's default
    ``ApprovalMode``) approves the action instead of asking the client."""
    cwd = turn.thread["cwd"]
    if item["type"] == "fileChange":
        files = [
            c["path"] if c["path"].startswith("/") else f"{cwd}/{c['path']}"
            for c in item["changes"]
        ]
        action: dict[str, Any] = {"type": "applyPatch", "cwd": cwd, "files": files}
    elif item["type"] == "mcpToolCall":
        action = {"type": "mcpToolCall", "server": item["server"], "toolName": item["tool"]}
    else:
        command = str(item.get("command"))
        action = {"type": "command", "command": command, "cwd": cwd, "source": "shell"}
    review_id = turn.new_id()
    started = turn.server.clock.tick()
    common = {"reviewId": review_id, "targetItemId": item["id"], "action": action}
    turn.notify(
        "item/autoApprovalReview/started",
        **common,
        startedAtMs=started,
        review={"status": "inProgress"},
    )
    turn.notify(
        "item/autoApprovalReview/completed",
        **common,
        startedAtMs=started,
        completedAtMs=turn.server.clock.tick(),
        decisionSource="agent",
        review={"status": "approved", "riskLevel": "low", "rationale": "stuntset: scripted"},
    )


def _ask(turn: Turn, prompt: str) -> None:
    item_id = "call_" + turn.item_ids.hex(24)
    question = {
        "id": "q_1",
        "header": "Question",
        "question": prompt,
        "isOther": True,
        "isSecret": False,
        "options": None,
    }
    params = {
        "threadId": turn.thread["id"],
        "turnId": turn.id,
        "itemId": item_id,
        "questions": [question],
        "isBlocking": True,
    }
    answer = turn.server.server_request("item/tool/requestUserInput", params)
    turn.resolved(turn.server.next_request - 1)
    turn.rt.journal.write("answer", message=answer)
