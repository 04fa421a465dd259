"""The Gemini CLI double: a fake ``gemini`` for its headless mode (``-p``, ``--output-format
text|json|stream-json``), as ``@google/gemini-cli`` 0.61.0 behaves over the model double's
Gemini wire (observed, docs/protocol-gemini-cli.md).

``install_cli("gemini", script, bin_dir=tmp_path)`` compiles the script here, in the test
process, into a plan of plain tuples (text split into deltas, faults resolved to what the CLI
shows); the executable (``_process.run``) only renders it. How each step looks:

================  ===========================================================================
text              stream-json: a ``message`` (``role: "assistant"``, ``delta: true``) per
                  delta; json: joined into ``response``; text: written as it comes
reasoning         nothing (the headless CLI shows no thoughts)
tool_call         stream-json ``tool_use`` (``tool_name``, ``tool_id`` = ``<name>__<call id>``,
                  ``parameters``); the model response ends there. The catalog's tools are
                  played as gemini's own (``_neutral``: ``read_file`` with ``file_path``,
                  ``run_shell_command``, ``list_directory``). A call the CLI would not
                  run gets its ``tool_result`` error (on stderr too) and the scripted result is
                  skipped: one of its tools that needs approval (``run_shell_command``,
                  ``write_file``, ``replace``, ``web_fetch``…) without ``--yolo`` /
                  ``--approval-mode yolo`` (edit tools: ``auto_edit`` too), or a name that is
                  none of its tools while no ``mcpServers`` are configured:
                  ``tool_not_registered`` ("Tool "X" not found. Did you mean one of: …?");
                  its own tool without a required parameter: ``invalid_tool_params``
                  ("params must have required property 'file_path'")
tool_result       ``tool_result`` (``status`` success/error, ``output``: the scripted output; none
                  for an output of ``None``, as the CLI shows a display that is not text)
approval_request, input_request
                  nothing: the model double's Gemini wire has neither, so the real CLI never
                  sees one (headless, it asks nobody)
usage             the stats' token counts (summed over the run)
delay             a real pause, times ``time_scale``
rate_limit, overloaded, http_error 429/499/5xx
                  first in a model response: retried as the CLI retries (``general.maxAttempts``
                  in ``~/.gemini/settings.json``, default 10): "Attempt N failed with status S.
                  Retrying with backoff..." on stderr, the script's retry-after (not the CLI's
                  5 s backoff), and the next scripted turn answers; once spent, the error
auth_expired, other http_error
                  the error at once (the Developer API's expired key is a 400
                  ``API_KEY_INVALID``): stream-json a ``result`` with ``status: "error"``
                  (``[API Error: …]``), json the error object on stderr, text "An unexpected
                  critical error occurred:[object Object]"; exit status = HTTP status mod 256
                  (json/stream-json; 429 → 173, 400 → 144) or 1 (text)
stream_cut        the content stays, then ``[API Error: terminated]``, exit 1; ``clean``
                  (the stream ends without a finish reason): retried silently, as ``garbage``
malformed_json    the content stays, then the ``JSON.parse`` error (``[API Error: Unexpected
                  end of JSON input]``…), exit 1
garbage           the CLI skips it; the stream has no finish reason, so it retries silently (at
                  most 4 attempts): the content stays, the next scripted turn answers
out_of_order      text after the finishing chunk: the CLI shows it (``out of order``) and ends
... with cli=True the CLI itself breaks, then exits 1: ``stream_cut`` half the next line (exit 0
                  with ``clean``), ``malformed_json`` the text as a line, ``garbage`` the bytes
                  as given, ``out_of_order`` a ``tool_result`` for a call never made, the
                  result, then more content
stall             nothing more; SIGTERM then ends the process with status 0 and no more output
                  (observed)
exit              stderr, then the process exits with the code, mid-turn
spawn_failure     (first turn only) no executable at all
================  ===========================================================================

What runs where: this module (the wire, the plan compiler, ``GEMINI``) in the test process;
``_process`` in the fake process (built-ins and ``stuntset.doubles.cli._runtime`` only).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, assert_never

from stuntset.doubles.cli._install import CliProgram
from stuntset.doubles.cli._neutral import native_tools
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
    "DEFAULT_MODEL",
    "GEMINI",
    "GEMINI_CLI_WIRE",
    "VERSION",
    "GeminiProgram",
    "v8_json_error",
]

#: The ``@google/gemini-cli`` version the double reports.
VERSION = "0.61.0"
#: What ``-m`` selects when not given: the real CLI's default is ``auto`` (a router request to
#: a small model first); the double plays one model and reports this one.
DEFAULT_MODEL = "gemini-2.5-pro"
#: The program's name (``install_cli`` key, executable name).
NAME = "gemini"

GEMINI_CLI_WIRE = Wire(
    name="gemini-cli", renders=frozenset(STEP_KINDS), require_tool_results=True, cli_faults=True
)

#: The model double's Gemini error ``status`` per HTTP status (google.rpc names).
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
#: The double's messages for the default fault messages (the API's own wording).
_RATE_LIMITED = "Resource has been exhausted (e.g. check quota)."
_OVERLOADED = "The model is overloaded. Please try again later."
_KEY_EXPIRED = "API key expired. Please renew the API key."
#: What the CLI adds to a 429 it gave up on (API-key auth).
QUOTA_HINT = (
    "Please wait and try again later. To increase your limits, request a quota increase "
    "through AI Studio, or switch to another /auth method"
)


def _google_status(status: int) -> str:
    if status in _GOOGLE_STATUS:
        return _GOOGLE_STATUS[status]
    if status >= 500:
        return "INTERNAL"
    return "FAILED_PRECONDITION" if status < 500 else "UNKNOWN"


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _error_body(status: int, message: str, error_type: str | None, expired: bool) -> str:
    """The model double's error body for the fault, compact, key order as it sends them (what
    the CLI quotes as the ``ApiError``'s message)."""
    import json

    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": error_type or _google_status(status),
    }
    if expired:
        error["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            },
            {
                "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
                "locale": "en-US",
                "message": message,
            },
        ]
    return json.dumps({"error": error}, separators=(",", ":"), ensure_ascii=False)


def _api_error(step: Step) -> tuple[Any, ...]:
    """``("api_error", status, body, quota message or None)``: a 429 the CLI gave up on is its
    quota error, whose message is the API's message; anything else the body itself."""
    if isinstance(step, RateLimit):
        message = _RATE_LIMITED if step.message == RateLimit().message else step.message
        return ("api_error", 429, _error_body(429, message, None, False), message)
    if isinstance(step, Overloaded):
        message = _OVERLOADED if step.message == Overloaded().message else step.message
        return ("api_error", 503, _error_body(503, message, None, False), None)
    if isinstance(step, AuthExpired):
        message = _KEY_EXPIRED if step.message == AuthExpired().message else step.message
        return ("api_error", 400, _error_body(400, message, "INVALID_ARGUMENT", True), None)
    assert isinstance(step, HttpError)
    message = step.message or _phrase(step.status)
    body = _error_body(step.status, message, step.error_type, False)
    return ("api_error", step.status, body, message if step.status == 429 else None)


def _retryable(status: int) -> bool:
    return status in (429, 499) or 500 <= status < 600


def v8_json_error(text: str) -> str:
    """What ``JSON.parse(text)`` throws in Node 20 for a malformed frame, for the common cases
    (a truncated string, a truncated document, a stray character)."""
    import json

    try:
        json.loads(text)
    except json.JSONDecodeError as error:
        if error.msg.startswith("Unterminated string"):
            return f"Unterminated string in JSON at position {len(text)}"
        rest = text[error.pos :].rstrip()
        if not rest or any(word.startswith(rest) for word in ("true", "false", "null")):
            return "Unexpected end of JSON input"  # V8 reads a cut literal to the end
        if error.msg.startswith("Extra data"):
            return f"Unexpected non-whitespace character after JSON at position {error.pos}"
        shown = text if len(text) <= 30 else text[:10] + "..." + text[-10:]
        return f"Unexpected token '{text[error.pos]}', \"{shown}\" is not valid JSON"
    return "Unexpected end of JSON input"  # it parsed: the frame was cut after it


def _op(step: Step, content: bool) -> tuple[Any, ...] | None:
    if isinstance(step, Text):
        return ("text", list(step.deltas()), step.interval)
    if isinstance(step, Reasoning):
        return None  # thoughts are not shown headless
    if isinstance(step, ToolCall):
        return ("tool", step.id, step.name, dict(step.input))
    if isinstance(step, ToolResult):
        return ("result", step.output, step.is_error)
    if isinstance(step, ApprovalRequest):
        return ("approval", step.tool)
    if isinstance(step, InputRequest):
        return ("ask", step.prompt)
    if isinstance(step, Usage):
        return ("usage", step.input_tokens, step.output_tokens)
    if isinstance(step, Delay):
        return ("delay", step.seconds)
    if isinstance(step, HttpError | RateLimit | Overloaded | AuthExpired):
        op = _api_error(step)
        retry = _retryable(op[1]) and not content
        delay = 0.0
        if retry and isinstance(step, RateLimit | HttpError):
            delay = (
                step.retry_after_ms / 1000
                if step.retry_after_ms is not None
                else (step.retry_after or 0.0)
            )
        elif retry and isinstance(step, Overloaded):
            delay = (step.retry_after_ms or 0) / 1000
        return (*op, delay if retry else None)
    if isinstance(step, StreamCut) and not step.cli:
        return ("invalid_stream",) if step.clean else ("stream_error", "terminated")
    if isinstance(step, Exit) and not step.cli:  # the model API's connection dropped
        return ("stream_error", "terminated")
    if isinstance(step, MalformedJson) and not step.cli:
        return ("stream_error", v8_json_error(step.text))
    if isinstance(step, Garbage) and not step.cli:
        return ("invalid_stream",)
    if isinstance(step, OutOfOrder) and not step.cli:
        return ("text", ["out of order"], 0.0)  # what the double sends after the finish
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


def _ops(turn: Turn) -> list[tuple[Any, ...]]:
    ops = []
    content = False
    for step in turn.steps:
        op = _op(step, content)
        if op is not None:
            ops.append(op)
        if isinstance(step, ToolResult):
            content = False
        elif isinstance(step, Text | ToolCall):
            content = True
    return ops


class GeminiProgram:
    """The ``gemini`` program for ``install``: its wire, plan compiler and runtime module."""

    name = NAME
    module = "stuntset.doubles.cli.gemini._process.run"
    warm: tuple[str, ...] = (
        "stuntset.doubles.cli._runtime",
        "stuntset.doubles.cli.gemini._process.run",
    )
    wire = GEMINI_CLI_WIRE
    journal_env: tuple[str, ...] = (
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
        "GEMINI_MODEL",
        "GEMINI_CLI_TRUST_WORKSPACE",
        "GEMINI_CLI_HOME",
        "HOME",
        "PWD",
    )

    def compile(self, script: Script) -> dict[str, Any]:
        script = native_tools(script, "gemini")
        turns = []
        for turn in script.turns:
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
                    "ops": _ops(turn),
                }
            )
        return {
            "version": VERSION,
            "model": DEFAULT_MODEL,
            "quota_hint": QUOTA_HINT,
            "turns": turns,
        }


#: The program ``install_cli("gemini", …)`` installs.
GEMINI: CliProgram = GeminiProgram()
