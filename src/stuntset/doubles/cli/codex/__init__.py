"""The Codex double: a fake ``codex`` for ``codex exec --json`` and ``codex app-server``.

``install_cli("codex", script, bin_dir=tmp_path)`` compiles the script here, in the test
process, into a plan of plain tuples (text split into deltas, each tool call classified into
the Codex item it becomes, faults resolved to what the CLI shows); the executable
(``_process.run`` → ``_process.exec`` / ``_process.app_server`` + ``_process.app_methods``
+ ``_process.app_turn``) only renders it. One script serves both modes: ``codex exec
--json`` (JSONL events, what ``@openai/codex-sdk`` drives) and ``codex app-server --listen
stdio://`` (JSON-RPC, what the ``openai-codex`` Python SDK drives).

How each step looks (exec JSONL item type / app-server item type):

================  ===========================================================================
text              ``agent_message`` (``item.completed`` only) / ``agentMessage`` with
                  ``item/agentMessage/delta`` per delta
reasoning         ``reasoning`` / ``reasoning`` with ``item/reasoning/summaryTextDelta``
tool_call         by name (or input): a shell tool (``bash``, ``shell``, ``exec_command``…, or
                  an input with ``command``/``cmd``) → ``command_execution`` /
                  ``commandExecution``; an edit tool (``apply_patch``, ``edit``, ``write``…, or
                  ``changes``) → ``file_change`` / ``fileChange``; ``web_search`` →
                  ``web_search`` / ``webSearch``; a plan tool (``todo_write``,
                  ``update_plan``) → ``todo_list`` / ``turn/plan/updated``; any other tool →
                  ``mcp_tool_call`` / ``mcpToolCall`` (server ``stuntset``, or ``mcp__S__T``)
tool_result       completes that item: output, exit code 0 (1 with ``is_error``), status
approval_request  app-server: ``item/commandExecution/requestApproval`` (a file change:
                  ``item/fileChange/requestApproval``; other tools are asked as a command),
                  answered by the client; ``decline`` skips the scripted result (status
                  ``declined``), ``cancel`` also interrupts the turn. Policy ``never``:
                  declined unasked; reviewer ``auto_review`` (the SDK's default): approved by
                  the automatic reviewer. exec asks nobody: a call the script asks about
                  shows no item (as the real exec shows none for a command its safety check
                  would ask about), its result only ends the model response
input_request     the model calling codex's ``request_user_input`` (so does a scripted
                  ``tool_call`` of that name), which ends its model response. In Default
                  mode (codex's default) codex refuses it ("request_user_input is
                  unavailable in Default mode"): nothing is shown, and the text after it is
                  a new message. In Plan mode (app-server ``turn/start`` with
                  ``collaborationMode`` ``plan``, ``CodexProvider(collaboration_mode=
                  "plan")``): ``item/tool/requestUserInput``, answered by the client. exec
                  never asks (observed, codex-cli 0.163 over the model double)
usage             ``turn.completed.usage`` — the thread's running total, as the real CLI
                  reports it / ``thread/tokenUsage/updated`` after each model response:
                  ``last`` that response's tokens, ``total`` the thread's
delay             a real pause, times ``time_scale``
http_error, rate_limit, overloaded, auth_expired
                  what the CLI shows once its own retries are spent: exec ``error`` then
                  ``turn.failed``, exit 1; app-server ``error`` then ``turn/completed`` with
                  status ``failed`` and ``turn.error`` (``codexErrorInfo`` as Codex classifies
                  it). Both modes retry a 5xx that is its response's first thing as codex
                  does: the next scripted turn answers each retry (``request_max_retries``,
                  default 4, silently; then ``stream_max_retries``, default 5, each announced:
                  exec an ``error`` line "Reconnecting... n/m (<why>)", app-server an ``error``
                  "Reconnecting... n/m" with ``willRetry``; both settings the model provider's
                  in use, from ``$CODEX_HOME/config.toml`` under ``-c`` options)
http_error with an app-server ``error_type`` (first step of its turn only)
                  the server refuses the turn: ``invalid_request`` (-32600), ``invalid_params``
                  (-32602), ``method_not_found`` (-32601), ``internal_error`` (-32603) or
                  ``server_overloaded`` (-32001, "Server overloaded; retry later.").
                  app-server: ``turn/start`` is answered with that JSON-RPC error and no turn
                  starts; exec: ``thread.started``, then ``Error: turn/start: turn/start
                  failed: <message> (code N)`` on stderr, exit 1
auth_expired      a 401 (and an ``http_error`` 401): retried as codex-cli 0.163 retries it,
                  announced at once (``stream_max_retries``, no silent retries); once spent,
                  "unexpected status 401 Unauthorized: …" (app-server: ``auth``)
stream_cut, malformed_json, garbage
                  the model API's stream breaks, as codex meets it: the content before it
                  stays, then a retry announced as above with the reason codex gives ("stream
                  disconnected before completion: …"); once spent, that reason fails the turn
out_of_order      the model API's content for an item never started: codex ignores it, the
                  response ends with no usage and the turn completes
... with cli=True the CLI itself breaks, then exits 1: ``stream_cut`` half a line (exit 0
                  with ``clean``), ``malformed_json`` the text as a stdout line, ``garbage``
                  the bytes as given (invalid UTF-8, half line…), ``out_of_order`` content for
                  an item never started, the terminal event, then more content
stall             nothing more until interrupted (``turn/interrupt``, a signal) or killed
exit              stderr, then the process exits with the code, mid-turn
spawn_failure     (first turn only) no executable at all: the client's not-found error
================  ===========================================================================

A turn's (or the script's) ``rate_limits`` are what app-server's ``account/rateLimits/updated``
carries after each of the turn's model responses (as codex shows the Responses API's
``x-codex-*`` headers; none given: every field null). ``turn/steer`` on a running turn ends
the model response in progress (or waits for its tools), shows the input as a
``userMessage`` and plays the next scripted turn as the follow-up model request of the same
turn, as the real server over the model double.

What runs where:

* test process (imports ``stuntset`` freely): this module (the wire, the plan compiler,
  ``CODEX``) and ``_demo`` (its section of ``stuntset demo``);
* fake process (built-ins and ``stuntset.doubles.cli._runtime`` only): ``_process``, the
  executable's program: ``run`` (top-level command line), ``exec``, ``app_server`` with
  ``app_methods``, ``app_turn`` (with ``app_tools``) and ``requests``, and ``common`` (what
  both modes share). The launcher maps
  this package in without running this module, and the test process imports ``_process``
  only to warm its bytecode.
"""

from __future__ import annotations

import hashlib
import math
import shlex
from typing import Any, assert_never

from stuntset.doubles.cli._install import CliProgram
from stuntset.doubles.cli._neutral import native_tools
from stuntset.doubles.cli.codex._process.common import HIGH_DEMAND
from stuntset.errors import ScriptError
from stuntset.script import (
    ApprovalRequest,
    AuthExpired,
    Delay,
    Exit,
    Garbage,
    HttpError,
    InputRequest,
    MalformedJson,
    OutOfOrder,
    Overloaded,
    RateLimit,
    RateLimits,
    RateLimitWindow,
    Reasoning,
    Script,
    SpawnFailure,
    Stall,
    Step,
    StreamCut,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
    Wire,
)
from stuntset.script._steps import STEP_KINDS

__all__ = [
    "CODEX",
    "CODEX_WIRE",
    "DEFAULT_MODEL",
    "REFUSALS",
    "VERSION",
    "CodexProgram",
    "classify_tool",
]

#: The Codex CLI version the double reports (the one ``openai-codex`` 0.163.0 pins).
VERSION = "0.163.0"
DEFAULT_MODEL = "gpt-5.1-codex"

CODEX_WIRE = Wire(
    name="codex", renders=frozenset(STEP_KINDS), require_tool_results=True, cli_faults=True
)

#: Codex's own tools and the item each call becomes (codex-cli 0.163 with a codex model; its
#: shell tool takes ``cmd``, its edit tool ``apply_patch``). Codex answers a call of any other
#: name "unsupported call" to the model and shows the client nothing (observed).
_COMMAND_TOOLS = frozenset({"exec_command", "shell_command"})
_FILE_TOOLS = {"apply_patch": "update"}
_SEARCH_TOOLS = frozenset({"web_search"})
_PLAN_TOOLS = frozenset({"update_plan"})


def _command_text(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return shlex.join(value)
    return f"/bin/bash -lc {shlex.quote(str(value))}"


def _changes(name: str, tool_input: dict[str, Any]) -> list[dict[str, str]]:
    given = tool_input.get("changes")
    if isinstance(given, list) and all(isinstance(c, dict) and "path" in c for c in given):
        return [
            {"path": str(c["path"]), "kind": str(c.get("kind") or "update"), "diff": ""}
            for c in given
        ]
    path = tool_input.get("path") or tool_input.get("file_path") or tool_input.get("file") or ""
    return [{"path": str(path), "kind": _FILE_TOOLS.get(name, "update"), "diff": ""}]


def _plan_items(tool_input: dict[str, Any]) -> list[dict[str, Any]]:
    raw = tool_input.get("todos") or tool_input.get("items") or tool_input.get("plan") or []
    items = []
    for entry in raw if isinstance(raw, list) else []:
        if isinstance(entry, dict):
            text = entry.get("text") or entry.get("content") or entry.get("step") or ""
            done = entry.get("completed") is True or entry.get("status") == "completed"
            items.append({"text": str(text), "completed": bool(done)})
        else:
            items.append({"text": str(entry), "completed": False})
    return items


def classify_tool(name: str, tool_input: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The Codex item a scripted call of codex's tool ``name`` becomes: (kind, details).

    ``command`` (details: ``command``, from ``exec_command``'s ``cmd``), ``file_change``
    (``changes``, from ``apply_patch``), ``web_search`` (``query``), ``todo`` (``items``, from
    ``update_plan``), ``mcp`` (``server``, ``tool``: an ``mcp__S__T`` name, or ``S/T``, the
    namespace form) or ``unsupported``: a tool codex lacks, which it answers "unsupported
    call" and shows nothing of (details: ``{}``). The catalog's neutral tools are played as
    ``exec_command`` before this (``_neutral``).
    """
    if name in _FILE_TOOLS:
        return "file_change", {"changes": _changes(name, tool_input)}
    if name in _SEARCH_TOOLS:
        return "web_search", {"query": str(tool_input.get("query") or tool_input.get("q") or "")}
    if name in _PLAN_TOOLS:
        return "todo", {"items": _plan_items(tool_input)}
    if name in _COMMAND_TOOLS:
        command = tool_input.get("cmd", tool_input.get("command"))
        return "command", {"command": _command_text(command if command is not None else "")}
    if name.startswith("mcp__") and name.count("__") >= 2:
        _, server, tool = name.split("__", 2)
        return "mcp", {"server": server, "tool": tool}
    server, slash, tool = name.partition("/")
    if slash and server and tool:
        return "mcp", {"server": server.removeprefix("mcp__"), "tool": tool}
    return "unsupported", {}


#: The call id of a result that answers no item: it only ends the model response (the
#: processes' ``_UNSHOWN``).
UNSHOWN = "stuntset-unshown-call"


def _unsupported(ops: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``ops`` with each call of a tool codex lacks played as codex plays it: nothing shown
    (no item, no approval asked), its scripted result only ending the model response (codex
    answers the model "unsupported call: <name>"; the text after it is a new message)."""
    out: list[tuple[Any, ...]] = []
    waiting: list[tuple[Any, bool]] = []  # (call id, unsupported) of calls awaiting results
    for op in ops:
        if op[0] == "tool":
            unsupported = op[2] == "unsupported"
            waiting.append((op[1], unsupported))
            if unsupported:
                continue
        elif op[0] == "approval" and waiting:
            named = [w for w in waiting if op[3] is not None and w[0] == op[3]]
            if (named or waiting)[-1][1]:
                continue  # codex asks nothing for a call it does not run
        elif op[0] == "result" and waiting:
            named = [w for w in waiting if op[3] is not None and w[0] == op[3]]
            call = (named or waiting)[0]
            waiting.remove(call)
            if call[1]:
                op = ("result", None, True, UNSHOWN)
        out.append(op)
    return out


def _status_text(status: int) -> str:
    texts = {
        400: "400 Bad Request",
        401: "401 Unauthorized",
        403: "403 Forbidden",
        404: "404 Not Found",
        429: "429 Too Many Requests",
        500: "500 Internal Server Error",
        502: "502 Bad Gateway",
        503: "503 Service Unavailable",
        529: "529 <unknown status code>",
    }
    return texts.get(status, str(status))


#: Where the errors say the request went (the real CLI names its provider's URL).
RESPONSES_URL = "https://api.openai.com/v1/responses"
#: Why codex-cli 0.163.0 says a model stream broke (observed over the model double): a cut
#: connection, a stream that ends without ``response.completed`` (a malformed frame is
#: skipped), undecodable bytes.
_CUT = "stream disconnected before completion: Transport error: network error: error decoding response body"
_UNFINISHED = "stream disconnected before completion: stream closed before response.completed"
_NOT_UTF8 = (
    "stream disconnected before completion: UTF8 error: invalid utf-8 sequence of 1 bytes "
    "from index 0"
)


def _api_error(status: int, message: str | None, request_id: str) -> tuple[Any, ...]:
    """(op, message, ``codexErrorInfo``, additional details) for an API error the CLI gave up
    on, worded as codex-cli 0.163.0 words it (observed against a fake Responses server): a 429
    is "exceeded retry limit", anything else "unexpected status" with the URL."""
    if status == 429:
        text = (
            f"exceeded retry limit, last status: {_status_text(status)}, request id: {request_id}"
        )
        return ("api_error", text, {"responseTooManyFailedAttempts": {"httpStatusCode": 429}}, None)
    if status == 500:
        return ("api_error", HIGH_DEMAND, "internalServerError", None)
    body = message or _status_text(status).partition(" ")[2]
    text = (
        f"unexpected status {_status_text(status)}: {body}, url: {RESPONSES_URL}, "
        f"request id: {request_id}"
    )
    return ("api_error", text, {"httpConnectionFailed": {"httpStatusCode": status}}, None)


#: ``HttpError.error_type`` values that make the codex app-server refuse the turn itself (the
#: request that would start it) rather than relay a model API error: the JSON-RPC error code
#: and the message used when the step gives none (the real server's, where it has one).
REFUSALS: dict[str, tuple[int, str]] = {
    "invalid_request": (-32600, "Invalid request"),
    "method_not_found": (-32601, "Method not found"),
    "invalid_params": (-32602, "Invalid params"),
    "internal_error": (-32603, "Internal error"),
    "server_overloaded": (-32001, "Server overloaded; retry later."),
}


#: Codex's own question tool: a scripted call of it is a question (``InputRequest``).
_QUESTION_TOOL = "request_user_input"


def _questions(ops: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``ops`` with each scripted call of codex's question tool (``_QUESTION_TOOL``) played as
    the question it asks (an ``ask`` op, its first question's text), and the result the
    script gives that call left out: codex itself answers it (the user's answer, or its
    refusal in Default mode)."""
    out: list[tuple[Any, ...]] = []
    waiting: list[tuple[Any, bool]] = []  # (call id, a question) of calls awaiting results
    for op in ops:
        if op[0] == "tool":
            question = op[3] == _QUESTION_TOOL
            waiting.append((op[1], question))
            if question:
                out.append(("ask", _question_text(op[4])))
                continue
        elif op[0] == "result" and waiting:
            named = [w for w in waiting if op[3] is not None and w[0] == op[3]]
            call = (named or waiting)[0]
            waiting.remove(call)
            if call[1]:
                continue
        out.append(op)
    return out


def _question_text(arguments: dict[str, Any]) -> str:
    questions = arguments.get("questions")
    first = questions[0] if isinstance(questions, list) and questions else None
    if isinstance(first, dict) and isinstance(first.get("question"), str):
        return str(first["question"])
    return str(arguments.get("question", ""))


def _op(step: Step, request_id: str) -> tuple[Any, ...] | None:
    if isinstance(step, Text):
        return ("text", step.text, step.deltas(), step.interval)
    if isinstance(step, Reasoning):
        return ("reasoning", step.text, step.deltas(), step.interval)
    if isinstance(step, ToolCall):
        kind, details = classify_tool(step.name, dict(step.input))
        return ("tool", step.id, kind, step.name, dict(step.input), details)
    if isinstance(step, ToolResult):
        return ("result", step.output, step.is_error, step.tool_call_id)
    if isinstance(step, ApprovalRequest):
        tool_input = None if step.input is None else dict(step.input)
        classified = None if step.tool is None else classify_tool(step.tool, tool_input or {})
        if classified is not None and classified[0] == "unsupported":
            # an approval of its own, for no call: asked as a command (its input's, if any)
            given = (tool_input or {}).get("cmd", (tool_input or {}).get("command"))
            command = _command_text(given if given is not None else step.tool)
            classified = ("command", {"command": command})
        return ("approval", step.tool, tool_input, step.tool_call_id, classified)
    if isinstance(step, InputRequest):
        return ("ask", step.prompt)
    if isinstance(step, Usage):
        return ("usage", step.input_tokens, step.output_tokens)
    if isinstance(step, Delay):
        return ("delay", step.seconds)
    if isinstance(step, HttpError):
        if step.error_type in REFUSALS:
            code, default = REFUSALS[step.error_type]
            return ("refuse", code, step.message or default, None)
        return _api_error(step.status, step.message, request_id)
    if isinstance(step, RateLimit):
        return _api_error(429, step.message, request_id)
    if isinstance(step, Overloaded):
        return _api_error(503, step.message, request_id)
    if isinstance(step, AuthExpired):
        return _api_error(401, step.message, request_id)
    if isinstance(step, OutOfOrder) and not step.cli:
        return ("ignored",)  # codex drops content for an item never started
    if (why := _stream_broke(step)) is not None:
        # once the retries are spent the reason fails the turn (app-server: ``internal``)
        return ("api_error", why, "other", None)
    if isinstance(step, StreamCut):
        return ("cut", step.clean)
    if isinstance(step, MalformedJson):
        return ("malformed", step.text)
    if isinstance(step, Garbage):
        return ("garbage", step.payload())
    if isinstance(step, OutOfOrder):
        return ("out_of_order",)
    if isinstance(step, Stall):
        return ("stall",)
    if isinstance(step, Exit):
        return ("exit", step.code, step.stderr)
    if isinstance(step, SpawnFailure):
        return None
    assert_never(step)


def _stream_broke(step: Step) -> str | None:
    """Why codex says the model stream broke, for a stream fault of the model API's (``None``
    for any other step, and for the CLI itself breaking: ``cli=True``)."""
    if isinstance(step, StreamCut) and not step.cli:
        return _UNFINISHED if step.clean else _CUT
    if isinstance(step, Exit) and not step.cli:  # the model API's connection dropped
        return _CUT
    if isinstance(step, MalformedJson) and not step.cli:
        return _UNFINISHED
    if isinstance(step, Garbage) and not step.cli:
        return _NOT_UTF8 if step.invalid_utf8 else _UNFINISHED
    return None


def _retry(turn: Turn) -> dict[str, Any] | None:
    """How codex retries the turn's closing fault, when it does: a 5xx status (what the model
    double sends when the fault is the first thing of its response; after content it is an
    in-band failure) — the ``codexErrorInfo`` and details of its "Reconnecting..." notice;
    a broken model stream (after content too) or a 401: announced retries only
    (``streams``), observed on codex-cli 0.163."""
    fault = turn.steps[-1] if turn.steps else None
    if fault is not None and (why := _stream_broke(fault)) is not None:
        broke: dict[str, Any] = {"responseStreamDisconnected": {"httpStatusCode": None}}
        return {"info": broke, "details": why, "streams": True}
    auth = isinstance(fault, AuthExpired) or (isinstance(fault, HttpError) and fault.status == 401)
    if auth and not any(
        isinstance(step, Text | Reasoning | ToolCall) for step in turn.segments()[-1]
    ):
        unauthorized: dict[str, Any] = {"responseStreamDisconnected": {"httpStatusCode": 401}}
        return {"info": unauthorized, "details": None, "streams": True}
    if isinstance(fault, Overloaded):
        status = 503
    elif isinstance(fault, HttpError) and fault.status >= 500 and fault.error_type not in REFUSALS:
        status = fault.status
    else:
        return None
    if any(isinstance(step, Text | Reasoning | ToolCall) for step in turn.segments()[-1]):
        return None
    return {
        "info": {
            "responseStreamDisconnected": {"httpStatusCode": None if status == 500 else status}
        },
        "details": HIGH_DEMAND if status == 500 else None,
        "streams": False,
    }


def _round_percent(value: float) -> int:
    """A percentage as codex shows it: rounded half away from zero (Rust's ``f64::round``)."""
    whole = math.floor(value)
    return int(whole) + (1 if value - whole >= 0.5 else 0)


def _window(window: RateLimitWindow | None) -> dict[str, Any] | None:
    # codex drops a window that says nothing (0 % used, no length, no reset time)
    if window is None or (
        window.used_percent == 0 and window.window_minutes is None and window.resets_at is None
    ):
        return None
    return {
        "usedPercent": _round_percent(window.used_percent),
        "windowDurationMins": window.window_minutes,
        "resetsAt": window.resets_at,
    }


def rate_limit_snapshot(limits: RateLimits | None) -> dict[str, Any]:
    """``account/rateLimits/updated``'s ``rateLimits`` as codex-cli 0.163.0 shows the
    Responses API's ``x-codex-*`` headers for ``limits`` (``None``: no such headers)."""
    credits = limits.credits if limits is not None else None
    return {
        "limitId": "codex",
        "limitName": None,
        "normalModelSlug": None,
        "primary": _window(limits.primary if limits is not None else None),
        "secondary": _window(limits.secondary if limits is not None else None),
        "credits": None
        if credits is None
        else {
            "hasCredits": credits.has_credits,
            "unlimited": credits.unlimited,
            "balance": credits.balance,
        },
        "individualLimit": None,
        "spendControlReached": None,
        "planType": None,
        "rateLimitReachedType": None,
    }


def _request_id(seed: int, turn: int, position: int) -> str:
    """A ``req-`` id like the ones the real errors quote, the same on every run."""
    digest = hashlib.sha256(f"{seed}/{turn}/{position}".encode()).hexdigest()
    return f"req-{digest[:12]}"


class CodexProgram:
    """The ``codex`` program for ``install``: its wire, plan compiler and runtime module."""

    name = "codex"
    module = "stuntset.doubles.cli.codex._process.run"
    warm: tuple[str, ...] = (
        "stuntset.doubles.cli._runtime",
        "stuntset.doubles.cli.codex._process.common",
        "stuntset.doubles.cli.codex._process.config",
        "stuntset.doubles.cli.codex._process.run",
        "stuntset.doubles.cli.codex._process.exec",
        "stuntset.doubles.cli.codex._process.requests",
        "stuntset.doubles.cli.codex._process.app_server",
        "stuntset.doubles.cli.codex._process.app_state",
        "stuntset.doubles.cli.codex._process.app_methods",
        "stuntset.doubles.cli.codex._process.app_turn",
        "stuntset.doubles.cli.codex._process.app_tools",
    )
    wire = CODEX_WIRE
    journal_env: tuple[str, ...] = (
        "CODEX_HOME",
        "CODEX_API_KEY",
        "OPENAI_API_KEY",
        "CODEX_INTERNAL_ORIGINATOR_OVERRIDE",
        "PWD",
    )

    def compile(self, script: Script) -> dict[str, Any]:
        script = native_tools(script, "codex")
        turns = []
        for index, turn in enumerate(script.turns):
            ops = _unsupported(
                _questions(
                    [
                        op
                        for position, step in enumerate(turn.steps)
                        if (op := _op(step, _request_id(script.seed, index, position))) is not None
                    ]
                )
            )
            late = [
                position
                for position, step in enumerate(turn.steps)
                if position and isinstance(step, HttpError) and step.error_type in REFUSALS
            ]
            if late:
                raise ScriptError(
                    "an http_error whose error_type refuses the turn "
                    f"({', '.join(REFUSALS)}) must be the turn's first step: the server "
                    "refuses the request that would start the turn, before anything of it "
                    "happens",
                    source=script.source,
                    turn=index,
                    step=late[0],
                    wire=CODEX_WIRE.name,
                )
            turns.append(
                {
                    "name": turn.name,
                    "times": turn.times,
                    "match": None
                    if turn.match is None
                    else {
                        "contains": turn.match.contains,
                        "model": turn.match.model,
                        "retry_count": turn.match.retry_count,
                        "tool_result": turn.match.tool_result,
                    },
                    "describe": turn.describe(),
                    "ops": ops,
                    "rate_limits": rate_limit_snapshot(script.rate_limits_of(turn)),
                    "retry": _retry(turn),
                }
            )
        return {"version": VERSION, "model": DEFAULT_MODEL, "turns": turns}


#: The program ``install_cli("codex", …)`` installs.
CODEX: CliProgram = CodexProgram()
