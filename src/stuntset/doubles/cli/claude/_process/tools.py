"""Tool calls in a turn of the fake ``claude``: the ``tool_use`` block, the permission check
(hooks, the permission rules, ``can_use_tool``), the tool's result message, and the
``AskUserQuestion`` tool a scripted question becomes.

Runs in the fake process (built-ins only, see ``_runtime``), on a ``turn.TurnRun`` (through its
face ``faces.TurnState``). Shapes as CLI 2.1.332 writes them (protocols.md §5.7): a deny skips
the scripted result, the tool result is the deny message, as an error; PostToolUse hooks run
(and write their events) before the tool's result.
"""

from __future__ import annotations

from stuntset.doubles.cli._runtime import dumps
from stuntset.doubles.cli.claude._process.common import Abort
from stuntset.doubles.cli.claude._process.endings import HookStopped

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli.claude._process.faces import TurnState

__all__ = ["play_tool_op", "tool_message"]

_ASK_TOOL = "AskUserQuestion"


def _content(output: Any) -> Any:
    """A tool result's ``content``: text, a list of content blocks, or other data as JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(b, dict) and "type" in b for b in output):
        return output
    return dumps(output)


def play_tool_op(run: TurnState, op: tuple[Any, ...]) -> None:
    """Render a tool op: a ``tool_use`` block, a tool's result (its permission checked first,
    if no approval op did), an approval, or a question (``ask``)."""
    kind = op[0]
    if kind == "tool_use":
        _, call_id, name, tool_input = op
        _tool_use(run, call_id or run.ids.token("toolu_01"), name, tool_input)
    elif kind == "tool_result":
        run.close_message()
        _, output, is_error, call_id = op
        target = call_id or (run.waiting[0] if run.waiting else None)
        if target is not None and target not in run.done:
            _run_tool(run, target, output, bool(is_error))
    elif kind == "approval":
        run.close_message()
        _, tool, tool_input, call_id = op
        target = call_id or run.last_call
        alone = target is None or target not in run.calls  # an approval of its own, no call
        if target is None or target not in run.calls:
            target = target or run.ids.token("toolu_01")
            run.calls[target] = {"name": tool or "unknown", "input": tool_input or {}}
            run.waiting.append(target)
        if alone or not _unavailable(run, run.calls[target]["name"]):
            _check_permission(run, target)  # the CLI asks nothing for a call of no such tool
    else:
        _ask(run, op[1])


def _tool_use(run: TurnState, call_id: str, name: str, tool_input: dict[str, Any]) -> None:
    run.calls[call_id] = {"name": name, "input": tool_input}
    run.waiting.append(call_id)
    run.last_call = call_id
    arguments = dumps(tool_input)
    third = max(1, len(arguments) // 3)
    pieces = [arguments[i : i + third] for i in range(0, len(arguments), third)]
    run.block_out(
        {"type": "tool_use", "id": call_id, "name": name, "input": tool_input},
        {"type": "tool_use", "id": call_id, "name": name, "input": {}},
        [{"type": "input_json_delta", "partial_json": p} for p in pieces],
        0.0,
    )
    run.message_has_tool = True


def tool_message(run: TurnState, call_id: str, content: Any, is_error: bool, extra: Any) -> None:
    if call_id in run.waiting:
        run.waiting.remove(call_id)
    run.done.add(call_id)
    run.emit(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": call_id,
                        "type": "tool_result",
                        "content": content,
                        "is_error": is_error,
                    }
                ],
            },
            "tool_use_result": extra,
        }
    )


def _unavailable(run: TurnState, name: str) -> bool:
    """Whether the real CLI lacks the tool ``name``: not a built-in it offers (``--tools``
    narrows them), nor a tool of a connected MCP server (``system/init``'s ``tools``). It
    answers such a call "No such tool available" (observed, 2.1.332), without hooks or a
    permission check."""
    return name not in run.s.tools and name not in run.s.unlisted


def _run_tool(run: TurnState, call_id: str, output: Any, is_error: bool) -> None:
    call = run.calls.get(call_id, {"name": "unknown", "input": {}})
    if _unavailable(run, call["name"]):
        error = f"Error: No such tool available: {call['name']}"
        tool_message(run, call_id, f"<tool_use_error>{error}</tool_use_error>", True, error)
        return
    if call_id not in run.checked and not _check_permission(run, call_id, ask=False):
        return
    content = _content(output)
    extra = {"input": call["input"], "output": output}
    # observed: PostToolUse hooks run (and write their events) before the tool's result
    run.hooks(
        "PostToolUse",
        call["name"],
        {
            "tool_name": call["name"],
            "tool_input": call["input"],
            "tool_response": output,
            "tool_use_id": call_id,
            "duration_ms": 0,
        },
    )
    tool_message(run, call_id, content, is_error, extra)
    if run.hook_stop:
        raise HookStopped


def _deny(run: TurnState, call_id: str, message: str) -> None:
    call = run.calls[call_id]
    run.denials.append(
        {"tool_name": call["name"], "tool_use_id": call_id, "tool_input": call["input"]}
    )
    tool_message(run, call_id, message, True, f"Error: {message}")


def _check_permission(run: TurnState, call_id: str, ask: bool = True) -> bool:
    """Hooks, then the permission rules, then (``ask``) ``can_use_tool``; False if the
    tool was denied (its denial already written)."""
    run.checked.add(call_id)
    call = run.calls[call_id]
    name = call["name"]
    decision = run.hooks(
        "PreToolUse",
        name,
        {"tool_name": name, "tool_input": call["input"], "tool_use_id": call_id},
    )
    if decision == "deny":
        _deny(run, call_id, run.hook_denial or f"Hook PreToolUse denied this tool ({name})")
        if run.hook_stop:
            raise HookStopped
        return False
    if not ask or decision == "allow":
        return True
    s = run.s
    if s.permission_mode == "bypassPermissions" or name in s.allowed:
        return True
    if name in s.disallowed or s.permission_mode == "dontAsk" or not s.stdio_prompt:
        _deny(
            run,
            call_id,
            f"Claude requested permissions to use {name}, but you haven't granted it yet.",
        )
        return False
    answer = s.request(
        {
            "subtype": "can_use_tool",
            "tool_name": name,
            "display_name": name,
            "input": call["input"],
            "permission_suggestions": [],
            "tool_use_id": call_id,
        }
    )
    return _apply_answer(run, call_id, answer)


def _apply_answer(run: TurnState, call_id: str, answer: dict[str, Any] | None) -> bool:
    if answer is None:
        _deny(run, call_id, "Stream closed")
        return False
    if answer.get("subtype") == "error":
        _deny(run, call_id, f"Tool permission request failed: {answer.get('error')}")
        return False
    body = answer.get("response")
    body = body if isinstance(body, dict) else {}
    allowed = body.get("behavior") == "allow" or body.get("allow") is True
    if allowed:
        updated = body.get("updatedInput", body.get("input"))
        if isinstance(updated, dict):
            run.calls[call_id]["input"] = updated
        return True
    _deny(run, call_id, str(body.get("message") or body.get("reason") or "Permission denied"))
    if body.get("interrupt"):
        raise Abort
    return False


def _ask(run: TurnState, prompt: str) -> None:
    call_id = run.ids.token("toolu_01")
    question = {"question": prompt, "header": "Question", "options": [], "multiSelect": False}
    _tool_use(run, call_id, _ASK_TOOL, {"questions": [question]})
    run.close_message()
    run.checked.add(call_id)
    if not run.s.stdio_prompt:
        _deny(
            run,
            call_id,
            f"Claude requested permissions to use {_ASK_TOOL}, but you haven't granted it yet.",
        )
        return
    answer = run.s.request(
        {
            "subtype": "can_use_tool",
            "tool_name": _ASK_TOOL,
            "display_name": _ASK_TOOL,
            "input": {"questions": [question]},
            "permission_suggestions": [],
            "tool_use_id": call_id,
        }
    )
    if not _apply_answer(run, call_id, answer):
        return
    answers = run.calls[call_id]["input"].get("answers")
    reply = answers.get(prompt, "") if isinstance(answers, dict) else ""
    text = (
        f'User has answered your questions: "{prompt}"="{reply}". You can now continue '
        f"with the user's answers in mind."
    )
    tool_message(run, call_id, text, False, {"questions": [question], "answers": answers})
