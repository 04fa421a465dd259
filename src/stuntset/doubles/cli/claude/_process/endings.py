"""How a turn of the fake ``claude`` ends: the ``system/init`` it opens with and the
``result`` it closes with (success, a prompt a hook blocked, an error), the Stop hooks that
may ask the model again, and the exceptions that end a turn early.

Runs in the fake process (built-ins only, see ``_runtime``), on a ``turn.TurnRun`` (through its
face ``faces.TurnState``). Shapes as CLI 2.1.332 writes them (protocols.md §5.7). Durations
come from the script (its delays, and 10 ms per model response), never the clock.
"""

from __future__ import annotations

import time

from stuntset.doubles.cli._runtime import give_back as give_turn_back
from stuntset.doubles.cli.claude._process.common import choose_turn, usage

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli.claude._process.faces import TurnState

__all__ = [
    "HookStopped",
    "MaxTurns",
    "NoTurn",
    "OverBudget",
    "durations",
    "finish",
    "finish_blocked",
    "finish_error",
    "init_message",
    "stamp",
    "stop_hooks",
]

#: Timestamps the double writes start here (2026-01-01T00:00:00Z) and advance by the script.
_BASE_TIME = 1767225600


class MaxTurns(Exception):
    """``--max-turns`` reached."""


class NoTurn(Exception):
    """The model was asked again (a Stop hook's feedback) and the script has no turn for it."""


class OverBudget(Exception):
    """``--max-budget-usd`` spent."""


class HookStopped(Exception):
    """A hook ended the turn after the action it checked (``continue: false``, or a prompt
    hook's ``ok: false``)."""


def init_message(run: TurnState) -> dict[str, Any]:
    s = run.s
    return {
        "type": "system",
        "subtype": "init",
        "cwd": s.cwd,
        "session_id": s.session_id,
        "tools": s.tools,
        "mcp_servers": [
            {"name": m["name"], "status": m["status"], "source": m["source"]} for m in s.mcp_servers
        ],
        "model": s.model,
        "permissionMode": s.permission_mode,
        "slash_commands": [],
        "apiKeySource": "none",
        "claude_code_version": s.rt.plan["version"],
        "output_style": "default",
        "agents": [],
        "skills": [],
        "plugins": [],
    }


def durations(run: TurnState) -> tuple[int, int]:
    api = 10 * run.api_messages
    return int(run.delay_ms) + api + 1, api


def finish(run: TurnState, *, stopped: bool = False) -> None:
    """The success result; ``stopped``: a hook ended the turn after an action (observed:
    no ``result`` text, ``stop_reason: "tool_use"``, the next model request counted)."""
    s = run.s
    duration, api = durations(run)
    model_usage = {
        s.model: {
            "inputTokens": run.input_tokens,
            "outputTokens": run.output_tokens,
            "cacheReadInputTokens": 0,
            "cacheCreationInputTokens": 0,
            "webSearchRequests": 0,
            "costUSD": s.spent,
            "contextWindow": 200000,
        }
    }
    run.emit(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "duration_ms": duration,
            "duration_api_ms": api,
            "num_turns": run.api_messages + 1 if stopped else max(1, run.api_messages),
            "result": "" if stopped else run.final_text,
            "stop_reason": "tool_use" if stopped else "end_turn",
            # Observed (2.1.332): total_cost_usd and modelUsage's cost are the process's
            # running total; usage is this turn's
            "total_cost_usd": s.spent,
            "usage": usage(run.input_tokens, run.output_tokens),
            "modelUsage": model_usage,
            "permission_denials": run.denials,
            "terminal_reason": "hook_stopped" if stopped else "completed",
        },
        final=True,
    )
    s.rt.exit_code = 0
    s.state_changed("idle", run.ids)


def stamp(run: TurnState) -> str:
    """The ``timestamp`` of a synthetic message: the script's time so far, from
    ``_BASE_TIME``."""
    at = _BASE_TIME + run.delay_ms / 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at * 1000) % 1000:03d}Z"


def stop_hooks(run: TurnState) -> dict[str, Any] | None:
    """Run the Stop hooks; if one exited 2, hand its feedback to the model as the CLI does
    and return the scripted turn that answers it (``None``: the turn is over)."""
    run.hooks(
        "Stop",
        None,
        {
            "stop_hook_active": run.stop_hook_active,
            "last_assistant_message": run.final_text,
            "background_tasks": [],
            "session_crons": [],
        },
    )
    feedback = run.stop_feedback
    if feedback is None:
        return None
    run.stop_hook_active = True
    # Observed (2.1.332): a synthetic user message, then a notification, then the model
    # is called again with the feedback (inside a system-reminder).
    run.emit(
        {
            "type": "user",
            "message": {"role": "user", "content": [{"type": "text", "text": feedback}]},
            "timestamp": stamp(run),
            "isSynthetic": True,
        }
    )
    run.emit(
        {
            "type": "system",
            "subtype": "notification",
            "key": "stop-hook-error",
            "text": "stop hook problem \u00b7 ctrl+o to see",
            "priority": "immediate",
        }
    )
    run.index, turn, error = choose_turn(run.s, feedback, False)
    if turn is None:
        raise NoTurn(str(error))
    return turn


def finish_blocked(run: TurnState, informational: dict[str, Any]) -> None:
    """A prompt a hook blocked: no model request (the scripted turn is given back)."""
    s = run.s
    if run.index >= 0:

        def give_back(state: dict[str, Any]) -> None:
            give_turn_back(state, s.rt, run.index)

        s.rt.state.update(give_back)
    run.emit(dict(informational))
    duration, _ = durations(run)
    run.emit(
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "duration_ms": duration,
            "duration_api_ms": 0,
            "num_turns": 0,
            "result": informational["content"],
            "stop_reason": None,
            "total_cost_usd": s.spent,
            "usage": usage(0, 0),
            "modelUsage": {},
            "permission_denials": [],
        },
        final=True,
    )
    s.rt.exit_code = 0
    s.state_changed("idle", run.ids)


def finish_error(run: TurnState, subtype: str, errors: list[str], **extra: Any) -> None:
    s = run.s
    message = s.result_error(subtype, errors, max(1, run.api_messages), run.ids, **extra)
    duration, api = durations(run)
    message.update(duration_ms=duration, duration_api_ms=api, permission_denials=run.denials)
    message["session_id"] = s.session_id
    s.send(message)
    s.rt.exit_code = 1
    s.state_changed("idle", run.ids)
