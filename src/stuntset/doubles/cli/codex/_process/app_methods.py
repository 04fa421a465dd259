"""The JSON-RPC methods of the fake ``codex app-server`` past ``initialize``: threads
(``thread/start``, ``thread/resume``, ``thread/read``, ``thread/list``), turns (``turn/start``
queues one, ``turn/interrupt``, ``turn/steer``), ``model/list`` and ``account/read``; what
each answers and refuses, in the real server's order of checks (codex-cli 0.163.0,
protocols.md §6.6).

Runs in the fake process (built-ins only, see ``_runtime``). Each method is a function of the
``app_server.Server`` whose loop dispatches to it (``HANDLERS``) and whose state it reads
and changes (threads loaded, their settings, the turn queue), through its face
``app_state.ServerState``; the queued turns play in ``app_turn``.
"""

from __future__ import annotations

import posix

from stuntset.doubles.cli.codex._process.app_state import Queued
from stuntset.doubles.cli.codex._process.app_turn import turn_object
from stuntset.doubles.cli.codex._process.common import (
    BASE_TIME,
    choose_turn,
    input_refusal,
    scripted_refusal,
)
from stuntset.doubles.cli.codex._process.requests import (
    RpcError,
    check_input,
    input_text,
    invalid,
    parse_thread_id,
    require,
    serde_found,
    texts,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli.codex._process.app_state import ServerState

__all__ = ["HANDLERS", "thread_object"]


def thread_object(server: ServerState, thread_id: str, *, turns: bool = False) -> dict[str, Any]:
    thread = server.loaded.get(thread_id) or server.threads.get(thread_id) or {}
    created = BASE_TIME + int(thread.get("number", 0))
    active = server.active is not None and server.active.thread["id"] == thread_id
    cwd = thread.get("cwd", "/")
    return {
        "id": thread_id,
        "environments": [{"environmentId": "local", "cwd": cwd, "runtimeWorkspaceRoots": [cwd]}],
        "extra": None,
        "sessionId": thread_id,
        "forkedFromId": None,
        "parentThreadId": None,
        "preview": thread.get("preview", ""),
        "ephemeral": bool(thread.get("ephemeral")),
        "section": None,
        "sectionEnteredAt": None,
        "projectId": None,
        "historyMode": "paginated",
        "modelProvider": "openai",
        "model": thread.get("model"),
        "reasoningEffort": None,
        "createdAt": created,
        "updatedAt": created + int(thread.get("turns", 0)),
        "recencyAt": created + int(thread.get("turns", 0)),
        "status": {"type": "active", "activeFlags": []} if active else {"type": "idle"},
        "path": None
        if thread.get("ephemeral")
        else f"{server.rt.plan['state_dir']}/sessions/rollout-{thread_id}.jsonl",
        "cwd": cwd,
        "cliVersion": server.rt.plan["version"],
        "originator": server.client_name,
        "source": "vscode",
        "canAcceptDirectInput": True,
        "threadSource": None,
        "agentNickname": None,
        "agentRole": None,
        "gitInfo": None,
        "name": None,
        "daybreakEnabled": None,
        "turns": list(thread.get("history", [])) if turns else [],
    }


def _thread_settings(server: ServerState, thread_id: str, params: dict[str, Any]) -> dict[str, Any]:
    previous = server.settings.get(thread_id, {})
    policy = params.get("approvalPolicy") or previous.get("approvalPolicy") or "on-request"
    reviewer = params.get("approvalsReviewer") or previous.get("approvalsReviewer") or "user"
    sandbox = params.get("sandbox") or previous.get("sandboxMode") or "read-only"
    settings = {"approvalPolicy": policy, "approvalsReviewer": reviewer, "sandboxMode": sandbox}
    server.settings[thread_id] = settings
    thread = server.loaded[thread_id]
    policies = {
        "read-only": {"type": "readOnly", "networkAccess": False},
        "workspace-write": {
            "type": "workspaceWrite",
            "writableRoots": [],
            "networkAccess": False,
            "excludeTmpdirEnvVar": False,
            "excludeSlashTmp": False,
        },
        "danger-full-access": {"type": "dangerFullAccess"},
    }
    return {
        "thread": thread_object(server, thread_id),
        "model": thread["model"],
        "modelProvider": "openai",
        "serviceTier": None,
        "disabledPluginIds": [],
        "cwd": thread["cwd"],
        "runtimeWorkspaceRoots": [thread["cwd"]],
        "instructionSources": [],
        "approvalPolicy": policy,
        "approvalsReviewer": reviewer,
        "sandbox": policies.get(str(sandbox), policies["read-only"]),
        "reasoningEffort": None,
    }


def _count(server: ServerState, key: str) -> int:
    """The next value of a counter in the double's shared state (ids unique across
    invocations, and the same on every run)."""

    def change(state: dict[str, Any]) -> int:
        state[key] = value = int(state.get(key, 0)) + 1
        return value

    result: int = server.rt.state.update(change)
    return result


def thread_start(server: ServerState, params: dict[str, Any]) -> dict[str, Any]:
    cwd = params.get("cwd") or posix.getcwd()
    model = params.get("model") or server.rt.plan["model"]
    thread = server.threads.create(str(cwd), str(model), bool(params.get("ephemeral")))
    server.loaded[thread["id"]] = thread
    return _thread_settings(server, thread["id"], params)


def _find_thread(server: ServerState, params: dict[str, Any]) -> dict[str, Any]:
    thread_id = require(params, "threadId")
    thread = server.loaded.get(thread_id) or server.threads.get(str(thread_id))
    if thread is None:
        raise invalid(f"no rollout found for thread id {thread_id}")
    server.loaded[thread["id"]] = thread
    return thread


def thread_resume(server: ServerState, params: dict[str, Any]) -> dict[str, Any]:
    thread = _find_thread(server, params)
    if params.get("model"):
        thread["model"] = str(params["model"])
    return _thread_settings(server, thread["id"], params)


def thread_read(server: ServerState, params: dict[str, Any]) -> dict[str, Any]:
    thread = _find_thread(server, params)
    return {"thread": thread_object(server, thread["id"], turns=bool(params.get("includeTurns")))}


def thread_list(server: ServerState, params: dict[str, Any]) -> dict[str, Any]:
    data = [thread_object(server, t["id"]) for t in reversed(server.threads.all())]
    return {"data": data, "nextCursor": None, "backwardsCursor": None}


def turn_start(server: ServerState, params: dict[str, Any]) -> dict[str, Any]:
    """Start a turn, in the real server's order of checks: the params' shape, the thread
    id, the thread loaded here (``thread/resume`` first for an earlier process's), the
    input's size, then the script (which may refuse the turn). A thread whose turn is
    still running gets the input steered into that turn, and its id back."""
    thread_id = require(params, "threadId")
    items = require(params, "input")
    if not isinstance(thread_id, str):
        raise invalid(f"Invalid request: invalid type: {serde_found(thread_id)}, expected a string")
    check_input(items)
    thread = server.loaded.get(parse_thread_id(thread_id))
    if thread is None:
        raise invalid(f"thread not found: {parse_thread_id(thread_id)}")
    prompt = input_text(items)
    refused = input_refusal(sum(len(t) for t in texts(items)))
    if refused is not None:
        raise RpcError(*refused)
    busy = _busy_turn(server, thread["id"])
    if busy is not None:
        _steer(server, busy, items)
        return {"turn": turn_object(busy, [], "inProgress", None, None, None, "notLoaded")}
    if params.get("model"):
        thread["model"] = str(params["model"])
    mode = params.get("collaborationMode")
    if isinstance(mode, dict) and mode.get("mode") in ("plan", "default"):
        thread["mode"] = mode["mode"]  # for this turn and the thread's next ones
    chosen, error = choose_turn(server.rt, prompt, thread["model"])
    refused = scripted_refusal(chosen)
    if refused is not None:
        raise RpcError(*refused)
    turn_id = server.rt.ids(f"turn/{_count(server, 'turns_started')}").uuid()
    if params.get("approvalPolicy") or params.get("approvalsReviewer"):
        _thread_settings(server, thread["id"], params)
    server.queue.append(Queued(thread, turn_id, prompt, items, chosen, error))
    return {"turn": turn_object(turn_id, [], "inProgress", None, None, None, "notLoaded")}


def _busy_turn(server: ServerState, thread_id: str) -> str | None:
    """The id of the thread's running (or queued) turn, if it has one."""
    active = server.active
    if active is not None and not active.ended and active.thread["id"] == thread_id:
        return active.id
    for queued in server.queue:
        if queued.thread["id"] == thread_id:
            return queued.turn_id
    return None


def _steer(server: ServerState, turn_id: str, items: list[Any]) -> None:
    """Input for a running turn: it ends the model response in progress (or, that one
    having called tools, waits for its end), then shows as a user message item and the
    next scripted turn answers the follow-up request (``Turn.play_turn``); a queued turn
    takes it with its own input."""
    active = server.active
    if active is not None and active.id == turn_id:
        active.steers.append(list(items))
        return
    for queued in server.queue:
        if queued.turn_id == turn_id:
            queued.items = list(queued.items) + list(items)


def turn_interrupt(server: ServerState, params: dict[str, Any]) -> dict[str, Any]:
    require(params, "threadId")
    turn_id = require(params, "turnId")
    _find_thread(server, params)
    active = server.active
    if active is None or active.thread["id"] != params["threadId"]:
        raise invalid("no active turn to interrupt")
    if turn_id != active.id:
        raise invalid(f"expected active turn id {turn_id} but found {active.id}")
    active.interrupted = True
    return {}


def turn_steer(server: ServerState, params: dict[str, Any]) -> dict[str, Any]:
    items = require(params, "input")
    check_input(items)  # before the thread is looked for (observed)
    _find_thread(server, params)
    expected = require(params, "expectedTurnId")
    active = server.active
    if active is None or active.ended:
        raise invalid("no active turn to steer")
    if expected != active.id:
        raise invalid(f"expected active turn id {expected} but found {active.id}")
    _steer(server, active.id, items)
    return {"turnId": active.id}


def model_list(server: ServerState, params: dict[str, Any]) -> dict[str, Any]:
    model = server.rt.plan["model"]
    efforts = [
        {"reasoningEffort": effort, "description": f"{effort} reasoning"}
        for effort in ("low", "medium", "high")
    ]
    entry = {
        "id": model,
        "model": model,
        "displayName": model,
        "description": "stuntset fake codex model",
        "hidden": False,
        "isDefault": True,
        "defaultReasoningEffort": "medium",
        "supportedReasoningEfforts": efforts,
    }
    return {"data": [entry], "nextCursor": None}


def account_read(server: ServerState, params: dict[str, Any]) -> dict[str, Any]:
    return {"account": {"type": "apiKey"}, "requiresOpenaiAuth": True}


HANDLERS: dict[str, Any] = {
    "thread/start": thread_start,
    "thread/resume": thread_resume,
    "thread/read": thread_read,
    "thread/list": thread_list,
    "turn/start": turn_start,
    "turn/interrupt": turn_interrupt,
    "turn/steer": turn_steer,
    "model/list": model_list,
    "account/read": account_read,
}
