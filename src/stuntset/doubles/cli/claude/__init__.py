"""The Claude Code double: a fake ``claude`` that speaks stream-json and the control protocol.

``install_cli("claude", script, bin_dir=tmp_path)`` compiles the script here, in the test
process, into a plan of plain tuples (text already split into deltas, signatures made,
faults resolved to what the CLI shows); the executable (``_process.run`` / ``_process.turn``)
only renders it. How each step looks on this wire:

================  ===========================================================================
text, reasoning   ``assistant`` messages with ``text`` / ``thinking`` blocks (+ partials)
tool_call         an ``assistant`` ``tool_use`` block; the model response ends there. A
                  catalog tool (``read_file``, ``bash``, ``list_files``) is played as the
                  CLI's own ``Read`` / ``Bash`` (``_neutral``); a name the real CLI lacks
                  (not in ``DEFAULT_TOOLS``, ``UNLISTED_TOOLS``, ``--tools``, nor a
                  connected MCP server's) is answered as the real one answers it: the
                  result ``<tool_use_error>Error: No such tool available: …``, ``is_error``,
                  no hook or permission asked, the scripted result skipped
tool_result       a ``user`` message with the ``tool_result`` block (the tool "ran"); its
                  ``tool_use_result`` is ``{"input": <the input it ran with>, "output": …}``,
                  so an input changed by an approval shows there
approval_request  ``can_use_tool`` (``--permission-prompt-tool stdio``); a deny skips the
                  scripted result; without a prompt tool the tool is denied, as headless
input_request     Claude Code's ``AskUserQuestion`` tool, answered through ``can_use_tool``
usage             the result's ``usage`` / ``total_cost_usd``; its ``cost`` is what
                  ``--max-budget-usd`` counts (checked when a model response ends, as the
                  real CLI checks: place the step after the response that should overspend)
delay             a real pause, times ``time_scale``
rate_limit, overloaded, http_error (408, 409, 429, 5xx)
                  first in a model response: what the real CLI does, it retries by itself:
                  ``system/api_retry`` (``attempt``, ``max_retries``, ``retry_delay_ms``,
                  ``error_status``, ``error``), waits the script's retry-after, and the
                  retried request takes the next scripted turn; retries spent
                  (``CLAUDE_CODE_MAX_RETRIES``, default 10) or no turn left: as below
auth_expired      a 401: retried like the statuses above (``error: "authentication_failed"``);
                  once given up, "Failed to authenticate. API Error: 401 …"
other http_error  what the CLI shows once it gives up: a synthetic ``assistant`` (model
                  ``<synthetic>``, ``error``) and an ``is_error`` result with
                  ``api_error_status``; exit 1
stream_cut, malformed_json, garbage, out_of_order
                  the model API's stream breaks, as the real CLI meets it: after content of
                  the response it keeps that content and asks the model to resume (a
                  synthetic ``user`` message); before any, ``system/api_retry`` with no
                  status (out of order: silently) and the request again; the next scripted
                  turn answers, none left: the model double's 500 as an API error
... with cli=True the CLI itself breaks, then exits 1: ``stream_cut`` half a line (exit 0
                  with ``clean``), ``malformed_json`` the text as a stdout line (the SDK
                  raises ``CLIJSONDecodeError``), ``garbage`` the bytes as given (invalid
                  UTF-8, half line…), ``out_of_order`` a tool result for a call never made,
                  the result, then more content
stall             nothing more until ``interrupt`` (or the process is killed)
exit              stderr, then the process exits with the code, mid-turn
spawn_failure     (first turn only) no executable at all: the client's not-found error
================  ===========================================================================

Hooks come from the settings files the real CLI reads and from ``initialize``
(``_process.hooks``); a ``prompt`` or ``agent`` hook's model request takes the next scripted
turn that accepts it (its text, or a ``StructuredOutput`` tool call, is the verdict).

What runs where:

* test process (imports ``stuntset`` freely): this module (the wire, the plan compiler,
  ``CLAUDE``), ``_client`` (a minimal stream-json client of the fake) and ``_demo`` (its
  section of ``stuntset demo``);
* fake process (built-ins and ``stuntset.doubles.cli._runtime`` only): ``_process``, the
  executable's program: ``run`` (command line, session loop, control protocol), ``turn``
  (with ``tools`` and ``endings``), ``args``, ``common``, ``faults``, ``hooks`` and ``mcp``.
  The launcher maps this package in without running this module, and the test process imports ``_process`` only to warm its bytecode.
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

__all__ = ["CLAUDE", "CLAUDE_WIRE", "DEFAULT_MODEL", "VERSION", "ClaudeProgram"]

#: The Claude Code version the double reports (the one claude-agent-sdk 0.2.189 bundles).
VERSION = "2.1.332"
DEFAULT_MODEL = "claude-sonnet-4-5"
#: The tools the real 2.1.332 lists in ``system/init`` (observed over the model double, ``-p``
#: with an API key); a call of any other name is answered "No such tool available".
DEFAULT_TOOLS = (
    "Task",
    "Bash",
    "CronCreate",
    "CronDelete",
    "CronList",
    "Edit",
    "EnterWorktree",
    "ExitWorktree",
    "ListAgents",
    "Monitor",
    "NotebookEdit",
    "Read",
    "ReportFindings",
    "ScheduleWakeup",
    "SendMessage",
    "Skill",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskStop",
    "TaskUpdate",
    "ToolSearch",
    "WebFetch",
    "WebSearch",
    "Workflow",
    "Write",
)
#: Tools the real CLI offers the model without listing them in ``system/init`` (observed in
#: its first model request).
UNLISTED_TOOLS = ("Agent", "AskUserQuestion")

CLAUDE_WIRE = Wire(
    name="claude",
    renders=frozenset(STEP_KINDS),
    require_tool_results=True,
    answer_tools=frozenset({"StructuredOutput"}),
    cli_faults=True,
)


def _api_error(status: int, message: str | None, error_type: str | None) -> tuple[Any, ...]:
    """(status, Anthropic error type, message, the assistant message's ``error``)."""
    if status == 401 or status == 403:
        kind, assistant = "authentication_error", "authentication_failed"
    elif status == 402:
        kind, assistant = "billing_error", "billing_error"
    elif status == 429:
        kind, assistant = "rate_limit_error", "rate_limit"
    elif status == 529:
        kind, assistant = "overloaded_error", "server_error"
    elif status >= 500:
        kind, assistant = "api_error", "server_error"
    else:
        kind, assistant = "invalid_request_error", "invalid_request"
    if not message:  # the model double's message for the status (its phrase)
        message = "Overloaded" if status == 529 else _phrase(status) or kind
    return ("api_error", status, error_type or kind, message, assistant)


def _phrase(status: int) -> str | None:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return None


def _retry_after(step: Step) -> float | None:
    """The seconds the real ``claude`` retries ``step`` after, as far as the script says (its
    ``retry_after_ms``, else ``retry_after``, else 0), or ``None`` if it does not retry it.

    Observed (2.1.332 over the model double): it retries 401 (``AuthExpired``), 408, 409, 429,
    529 and the other 5xx unless ``x-should-retry: false``; it waits its own backoff (0.5 s
    doubling to 32 s, plus up to 25%) or the ``retry-after`` seconds when longer, and ignores
    ``retry-after-ms``. The fake waits what the script says (``retry-after-ms: 1`` by default;
    none for a 401): a test's clock, not the real binary's.
    """
    if isinstance(step, RateLimit | HttpError):
        if isinstance(step, HttpError) and (
            step.should_retry is False
            or not (step.status in (401, 408, 409, 429) or step.status >= 500)
        ):
            return None
        if step.retry_after_ms is not None:
            return step.retry_after_ms / 1000
        return step.retry_after or 0.0
    if isinstance(step, Overloaded):
        return (step.retry_after_ms or 0) / 1000
    if isinstance(step, AuthExpired):  # observed: a 401 is retried like a 5xx
        return 0.0
    return None


def _op(step: Step, seed: int, turn: int, position: int) -> tuple[Any, ...] | None:
    if isinstance(step, Text):
        return ("text", step.text, step.deltas(), step.interval)
    if isinstance(step, Reasoning):
        signature = step.signature or f"stuntset-signature-{seed}-{turn}-{position}"
        return ("thinking", step.text, signature, step.deltas(), step.interval)
    if isinstance(step, ToolCall):
        return ("tool_use", step.id, step.name, dict(step.input))
    if isinstance(step, ToolResult):
        return ("tool_result", step.output, step.is_error, step.tool_call_id)
    if isinstance(step, ApprovalRequest):
        return ("approval", step.tool, step.input, step.tool_call_id)
    if isinstance(step, InputRequest):
        return ("ask", step.prompt)
    if isinstance(step, Usage):
        return ("usage", step.input_tokens, step.output_tokens, step.cost)
    if isinstance(step, Delay):
        return ("delay", step.seconds)
    if isinstance(step, HttpError):
        return _api_error(step.status, step.message, step.error_type)
    if isinstance(step, RateLimit):
        return _api_error(429, step.message, None)
    if isinstance(step, Overloaded):
        return _api_error(529, step.message, None)
    if isinstance(step, AuthExpired):
        return _api_error(401, step.message, None)
    if _model_stream_fault(step):
        # the model API's stream breaks: the real CLI asks again (``_stream_fault``)
        return ("stream_fault", "silent" if isinstance(step, OutOfOrder) else "retry")
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


def _in_responses(turn: Turn) -> list[tuple[Step, float | None, bool]]:
    """Each step of ``turn`` with the retry-after the real ``claude`` retries it after (a
    status fault first in its model response; after content the model double sends it
    in-band, and the CLI gives up at once), and whether its response follows a tool result
    (its request carries tool results)."""
    steps = []
    content = after_result = False
    for step in turn.steps:
        retry = _retry_after(step)
        if _model_stream_fault(step):  # retried at once, or (after content) resumed
            retry = 0.0
        steps.append((step, None if content else retry, after_result))
        if isinstance(step, ToolResult):
            content, after_result = False, True
        elif isinstance(step, Text | Reasoning | ToolCall):
            content = True
    return steps


def _model_stream_fault(step: Step) -> bool:
    """A fault of the model API's stream (not the CLI's own stdout or process: ``cli=True``):
    a dropped connection (``Exit``) is a broken stream to the real CLI."""
    return (
        isinstance(step, StreamCut | MalformedJson | Garbage | OutOfOrder | Exit) and not step.cli
    )


def retried(turn: Turn) -> bool:
    """Whether ``turn`` ends in a failed request the fake ``claude`` retries by itself (the
    next scripted turn answers the retried request, within the same prompt): a retryable
    status first in its response, or a broken model stream anywhere (after content the CLI
    asks the model to resume, which the next turn answers too)."""
    steps = _in_responses(turn)
    return bool(steps) and (steps[-1][1] is not None or _model_stream_fault(steps[-1][0]))


class ClaudeProgram:
    """The ``claude`` program for ``install``: its wire, plan compiler and runtime module."""

    name = "claude"
    module = "stuntset.doubles.cli.claude._process.run"
    warm: tuple[str, ...] = (
        "stuntset.doubles.cli._runtime",
        "stuntset.doubles.cli.claude._process.args",
        "stuntset.doubles.cli.claude._process.common",
        "stuntset.doubles.cli.claude._process.run",
        "stuntset.doubles.cli.claude._process.turn",
        "stuntset.doubles.cli.claude._process.tools",
        "stuntset.doubles.cli.claude._process.endings",
        "stuntset.doubles.cli.claude._process.faults",
        "stuntset.doubles.cli.claude._process.hook_settings",
        "stuntset.doubles.cli.claude._process.hooks",
        "stuntset.doubles.cli.claude._process.mcp",
    )
    wire = CLAUDE_WIRE
    journal_env: tuple[str, ...] = (
        "CLAUDE_CODE_ENTRYPOINT",
        "CLAUDE_AGENT_SDK_VERSION",
        "CLAUDE_CODE_SDK_READS_SESSION_STATE",
        "CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING",
        "CLAUDE_AGENT_SDK_CLIENT_APP",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "PWD",
    )

    def compile(self, script: Script) -> dict[str, Any]:
        script = native_tools(script, "claude")
        tools = list(DEFAULT_TOOLS)
        turns = []
        for index, turn in enumerate(script.turns):
            ops = []
            for position, (step, retry, after_result) in enumerate(_in_responses(turn)):
                op = _op(step, script.seed, index, position)
                if op is not None and op[0] == "api_error":
                    op = (*op, retry, after_result)
                elif op is not None and op[0] == "stream_fault":
                    # content of its response came first (``retry`` is None): the real CLI
                    # keeps it and asks the model to resume; otherwise it retries the request
                    op = ("stream_fault", op[1] if retry is not None else "resume", after_result)
                if op is not None:
                    ops.append(op)
                # an MCP server's tool is listed if its server connects (``_process.mcp``)
                named = step.name if isinstance(step, ToolCall) else ""
                if named.startswith("mcp__") and named not in tools:
                    tools.append(named)
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
                }
            )
        return {
            "version": VERSION,
            "model": DEFAULT_MODEL,
            "tools": tools,
            "unlisted_tools": list(UNLISTED_TOOLS),
            "turns": turns,
        }


#: The program ``install_cli("claude", …)`` installs.
CLAUDE: CliProgram = ClaudeProgram()
