"""The Gemini CLI's headless runs, as observed on the real ``@google/gemini-cli`` 0.61.0 over the
model double's Gemini wire (2026-12-02, docs/protocol-gemini-cli.md): each case's script,
command line and settings, and what the CLI showed — stdout and the stderr lines that say
something, without what differs by nature (timestamps, the session id, call ids' clock part,
latencies, the report file's path, stack traces). The fake is held to the same transcripts
(test_gemini_cli_fake.py) and the real binary is checked against them again in the node tier
(test_gemini_cli_real.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stuntset.script import (
    AuthExpired,
    Garbage,
    HttpError,
    MalformedJson,
    OutOfOrder,
    Overloaded,
    RateLimit,
    Script,
    StreamCut,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)

#: The real CLI's routing model (``auto``) asks a second model first; a fixed model does not.
MODEL = ("-m", "gemini-2.5-flash")


@dataclass(frozen=True)
class Case:
    script: Script
    args: tuple[str, ...]
    #: What the CLI showed: the normalized stdout (a list of JSON lines, one JSON object, or
    #: text), the stderr lines that matter, the exit status.
    stdout: Any
    stderr: tuple[str, ...]
    code: int
    files: dict[str, str] = field(default_factory=dict)
    #: ``general.maxAttempts`` (the real default, 10, waits minutes of backoff on a 429)
    attempts: int | None = 2
    #: How many model requests the double answered on the real side.
    requests: int = 1


def prompt(text: str, output: str, *more: str) -> tuple[str, ...]:
    return ("-p", text, *MODEL, "--output-format", output, *more)


def _stats(given: int = 0, made: int = 0, calls: int = 0, duration: bool = True) -> dict[str, Any]:
    tokens = {
        "total_tokens": given + made,
        "input_tokens": given,
        "output_tokens": made,
        "cached": 0,
        "input": given,
    }
    return {
        **tokens,
        "duration_ms": "…" if duration else 0,
        "tool_calls": calls,
        "models": {MODEL[1]: tokens},
    }


def _head(text: str) -> list[dict[str, Any]]:
    return [
        {"type": "init", "session_id": "…", "model": MODEL[1]},
        {"type": "message", "role": "user", "content": text},
    ]


def _say(*deltas: str) -> list[dict[str, Any]]:
    return [{"type": "message", "role": "assistant", "content": d, "delta": True} for d in deltas]


def _ok(**stats: Any) -> dict[str, Any]:
    return {"type": "result", "status": "success", "stats": _stats(**stats)}


def _error(message: str) -> dict[str, Any]:
    return {
        "type": "result",
        "status": "error",
        "error": {"type": "unknown", "message": message},
        "stats": _stats(duration=False),
    }


def _json_error(message: str, code: int) -> tuple[str, ...]:
    text = json.dumps(
        {"session_id": "…", "error": {"type": "Error", "message": message, "code": code}},
        indent=2,
        ensure_ascii=False,
    )
    return tuple(text.splitlines())


HELLO = Script.of([Text("Hello there."), Usage(input_tokens=5, output_tokens=3)])
READ = Script(
    turns=(
        Turn(
            steps=(
                Text("Reading."),
                ToolCall("read_file", {"file_path": "a.txt"}),
                ToolResult(""),  # the real tool's display of a read: nothing
                Text("It says hi."),
                Usage(input_tokens=9, output_tokens=4),
            )
        ),
    )
)
SHELL = Script(
    turns=(
        Turn(
            steps=(
                ToolCall("run_shell_command", {"command": "echo hi"}),
                ToolResult("hi"),
                Text("Done."),
            )
        ),
    )
)
NOT_FOUND = (
    'Tool "run_shell_command" not found. Did you mean one of: "update_topic", "grep_search", '
    '"invoke_agent"?'
)
YOLO = "YOLO mode is enabled. All tool calls will be automatically approved."
RATE_BODY = (
    '{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).",'
    '"status":"RESOURCE_EXHAUSTED"}}'
)
RATE = "Resource has been exhausted (e.g. check quota)."
QUOTA_HINT = (
    "Please wait and try again later. To increase your limits, request a quota increase "
    "through AI Studio, or switch to another /auth method"
)
KEY_BODY = (
    '{"error":{"code":400,"message":"API key expired. Please renew the API key.",'
    '"status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo",'
    '"reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":'
    '"generativelanguage.googleapis.com"}},{"@type":"type.googleapis.com/google.rpc.'
    'LocalizedMessage","locale":"en-US","message":"API key expired. Please renew the API key."}]}}'
)
FORBIDDEN = '{"error":{"code":403,"message":"Forbidden","status":"PERMISSION_DENIED"}}'
INTERNAL = '{"error":{"code":500,"message":"Internal Server Error","status":"INTERNAL"}}'
TALKING = "Error when talking to Gemini API "
CRITICAL = "An unexpected critical error occurred:[object Object]"


def _json_ok(response: str, requests: int = 1, calls: int = 0, **tokens: int) -> dict[str, Any]:
    return {"session_id": "…", "response": response, "requests": requests, "tool_calls": calls}


CASES: dict[str, Case] = {
    "text_stream": Case(
        HELLO,
        prompt("say hello", "stream-json"),
        [*_head("say hello"), *_say("Hello", " there."), _ok(given=5, made=3)],
        (),
        0,
    ),
    "text_json": Case(
        HELLO, prompt("say hello", "json"), _json_ok("Hello there.", given=5, made=3), (), 0
    ),
    "text_text": Case(HELLO, prompt("say hello", "text"), "Hello there.\n", (), 0),
    "read_yolo_stream": Case(
        READ,
        prompt("read a.txt", "stream-json", "--yolo"),
        [
            *_head("read a.txt"),
            *_say("Reading."),
            {
                "type": "tool_use",
                "tool_name": "read_file",
                "tool_id": "read_file__read_file_…",
                "parameters": {"file_path": "a.txt"},
            },
            {
                "type": "tool_result",
                "tool_id": "read_file__read_file_…",
                "status": "success",
                "output": "",
            },
            *_say("It", " says", " hi."),
            _ok(given=9, made=4, calls=1),
        ],
        (YOLO, YOLO),
        0,
        files={"a.txt": "hi\n"},
        requests=2,
    ),
    "read_yolo_text": Case(
        READ,
        prompt("read a.txt", "text", "--yolo"),
        "Reading.\nIt says hi.\n",
        (YOLO, YOLO),
        0,
        files={"a.txt": "hi\n"},
        requests=2,
    ),
    "shell_refused": Case(
        SHELL,
        prompt("run echo", "stream-json"),
        [
            *_head("run echo"),
            {
                "type": "tool_use",
                "tool_name": "run_shell_command",
                "tool_id": "run_shell_command__run_shell_command_…",
                "parameters": {"command": "echo hi"},
            },
            {
                "type": "tool_result",
                "tool_id": "run_shell_command__run_shell_command_…",
                "status": "error",
                "output": NOT_FOUND,
                "error": {"type": "tool_not_registered", "message": NOT_FOUND},
            },
            *_say("Done."),
            _ok(calls=1),
        ],
        (f"Error executing tool run_shell_command: {NOT_FOUND}",),
        0,
        requests=2,
    ),
    "shell_yolo": Case(
        SHELL,
        prompt("run echo", "stream-json", "--approval-mode", "yolo"),
        [
            *_head("run echo"),
            {
                "type": "tool_use",
                "tool_name": "run_shell_command",
                "tool_id": "run_shell_command__run_shell_command_…",
                "parameters": {"command": "echo hi"},
            },
            {
                "type": "tool_result",
                "tool_id": "run_shell_command__run_shell_command_…",
                "status": "success",
                "output": "hi",
            },
            *_say("Done."),
            _ok(calls=1),
        ],
        (YOLO, YOLO),
        0,
        requests=2,
    ),
    "rate_limited_then_ok": Case(
        Script(turns=(Turn(steps=(RateLimit(),)), Turn(steps=(Text("ok"),)))),
        prompt("hi", "stream-json"),
        [*_head("hi"), *_say("ok"), _ok()],
        (f"Attempt 1 failed with status 429. Retrying with backoff... _ApiError: {RATE_BODY}",),
        0,
        requests=2,
    ),
    "rate_limited_spent": Case(
        Script(turns=(Turn(steps=(RateLimit(),), times=2),)),
        prompt("hi", "stream-json"),
        [*_head("hi"), _error(f"[API Error: {RATE}]\n{QUOTA_HINT}")],
        (
            f"Attempt 1 failed with status 429. Retrying with backoff... _ApiError: {RATE_BODY}",
            f"Attempt 2 failed: {RATE}. Max attempts reached",
            f"{TALKING}RetryableQuotaError: {RATE}",
        ),
        173,
        requests=2,
    ),
    "rate_limited_spent_json": Case(
        Script(turns=(Turn(steps=(RateLimit(),), times=2),)),
        prompt("hi", "json"),
        "",
        (
            f"Attempt 1 failed with status 429. Retrying with backoff... _ApiError: {RATE_BODY}",
            f"Attempt 2 failed: {RATE}. Max attempts reached",
            f"{TALKING}RetryableQuotaError: {RATE}",
            *_json_error(RATE, 429),
        ),
        173,
        requests=2,
    ),
    "rate_limited_spent_text": Case(
        Script(turns=(Turn(steps=(RateLimit(),), times=2),)),
        prompt("hi", "text"),
        "",
        (
            f"Attempt 1 failed with status 429. Retrying with backoff... _ApiError: {RATE_BODY}",
            f"Attempt 2 failed: {RATE}. Max attempts reached",
            f"{TALKING}RetryableQuotaError: {RATE}",
            CRITICAL,
        ),
        1,
        requests=2,
    ),
    "auth_expired": Case(
        Script.of([AuthExpired()]),
        prompt("hi", "stream-json"),
        [*_head("hi"), _error(f"[API Error: {KEY_BODY}]")],
        (f"{TALKING}_ApiError: {KEY_BODY}",),
        144,
    ),
    "forbidden_json": Case(
        Script.of([HttpError(403)]),
        prompt("hi", "json"),
        "",
        (f"{TALKING}_ApiError: {FORBIDDEN}", *_json_error(FORBIDDEN, 403)),
        147,
    ),
    "internal_spent": Case(
        Script(turns=(Turn(steps=(HttpError(500),), times=2),)),
        prompt("hi", "stream-json"),
        [*_head("hi"), _error(f"[API Error: {INTERNAL}]")],
        (
            f"Attempt 1 failed with status 500. Retrying with backoff... _ApiError: {INTERNAL}",
            f"Attempt 2 failed: {INTERNAL}. Max attempts reached",
            f"{TALKING}_ApiError: {INTERNAL}",
        ),
        244,
        requests=2,
    ),
    "overloaded_then_ok": Case(
        Script(turns=(Turn(steps=(Overloaded(),)), Turn(steps=(Text("ok"),)))),
        prompt("hi", "json"),
        {"session_id": "…", "response": "ok", "requests": 2, "tool_calls": 0},
        (
            "Attempt 1 failed with status 503. Retrying with backoff... _ApiError: "
            '{"error":{"code":503,"message":"The model is overloaded. Please try again later.",'
            '"status":"UNAVAILABLE"}}',
        ),
        0,
        requests=2,
    ),
    "stream_cut": Case(
        Script(turns=(Turn(steps=(Text("partial answer"), StreamCut())),)),
        prompt("hi", "stream-json"),
        [*_head("hi"), *_say("partial", " answer"), _error("[API Error: terminated]")],
        (f"{TALKING}TypeError: terminated",),
        1,
    ),
    "stream_cut_json": Case(
        Script(turns=(Turn(steps=(Text("partial answer"), StreamCut())),)),
        prompt("hi", "json"),
        "",
        (f"{TALKING}TypeError: terminated", *_json_error("terminated", 1)),
        1,
    ),
    "stream_cut_text": Case(
        Script(turns=(Turn(steps=(Text("partial answer"), StreamCut())),)),
        prompt("hi", "text"),
        "partial answer",  # no newline before the error
        (f"{TALKING}TypeError: terminated", CRITICAL),
        1,
    ),
    "clean_cut_retried": Case(
        Script(
            turns=(Turn(steps=(Text("partial"), StreamCut(clean=True))), Turn(steps=(Text("ok"),)))
        ),
        prompt("hi", "stream-json"),
        [*_head("hi"), *_say("partial", "ok"), _ok()],
        (),
        0,
        requests=2,
    ),
    "malformed": Case(
        Script(turns=(Turn(steps=(Text("partial"), MalformedJson())),)),
        prompt("hi", "stream-json"),
        [
            *_head("hi"),
            *_say("partial"),
            _error("[API Error: Unterminated string in JSON at position 56]"),
        ],
        (f"{TALKING}SyntaxError: Unterminated string in JSON at position 56",),
        1,
    ),
    "malformed_json": Case(
        Script(turns=(Turn(steps=(Text("partial"), MalformedJson('{"a": tru'))),)),
        prompt("hi", "json"),
        "",
        (
            f"{TALKING}SyntaxError: Unexpected end of JSON input",
            *_json_error("Unexpected end of JSON input", 1),
        ),
        1,
    ),
    "garbage_retried": Case(
        Script(turns=(Turn(steps=(Text("partial"), Garbage())), Turn(steps=(Text("ok"),)))),
        prompt("hi", "stream-json"),
        [*_head("hi"), *_say("partial", "ok"), _ok()],
        (),
        0,
        requests=2,
    ),
    "garbage_spent": Case(
        Script(turns=(Turn(steps=(Text("p"), Garbage()), times=4),)),
        prompt("hi", "stream-json"),
        [
            *_head("hi"),
            *_say("p", "p", "p", "p"),
            _error("[API Error: Incomplete JSON segment at the end]"),
        ],
        (f"{TALKING}Error: Incomplete JSON segment at the end",),
        1,
        attempts=None,
        requests=4,
    ),
    "out_of_order": Case(
        Script(turns=(Turn(steps=(Text("partial"), OutOfOrder())),)),
        prompt("hi", "stream-json"),
        [*_head("hi"), *_say("partial", "out of order"), _ok()],
        (),
        0,
    ),
    "no_prompt": Case(
        HELLO,
        ("-p", "", *MODEL, "--output-format", "json"),
        "",
        (
            "No input provided via stdin. Input can be provided by piping data into gemini or "
            "using the --prompt option.",
        ),
        42,
        requests=0,
    ),
    "version": Case(HELLO, ("--version",), "0.61.0\n", (), 0, requests=0),
}

#: stderr lines kept (the rest is stack traces, object dumps and start-up notices)
_KEPT = re.compile(
    r"^(Attempt \d|Error when talking|Error executing tool|YOLO mode|An unexpected critical"
    r"|No input provided|Unknown argument|Invalid values|[{}]$|  }$|  \"|    \")"
)
_REPORT = re.compile(r"Full report available at: \S+\.json ")


def normalized_stderr(text: str) -> tuple[str, ...]:
    kept = []
    for line in text.splitlines():
        if not _KEPT.match(line):
            continue
        line = _REPORT.sub("", line)
        if line.startswith('  "session_id"'):
            line = '  "session_id": "…",'
        kept.append(line)
    # a lone "}" closes a dumped error object, not a JSON error
    shown: list[str] = []
    in_json = False
    for line in kept:
        if line == "{":
            in_json = True
        if in_json or line not in ("}", "  }"):
            shown.append(line)
        if line == "}":
            in_json = False
    return tuple(shown)


def _event(line: dict[str, Any]) -> dict[str, Any]:
    line.pop("timestamp", None)
    if "session_id" in line:
        line["session_id"] = "…"
    if "tool_id" in line:
        line["tool_id"] = re.sub(r"_\d+_\d+$", "_…", line["tool_id"])
    stats = line.get("stats")
    if isinstance(stats, dict) and stats.get("duration_ms"):
        stats["duration_ms"] = "…"
    return line


def normalized_stdout(text: str, output: str) -> Any:
    if output == "stream-json":
        return [_event(json.loads(line)) for line in text.splitlines()]
    if output == "json" and text.strip():
        whole = json.loads(text)
        model = whole["stats"]["models"][MODEL[1]]
        return {
            "session_id": "…",
            "response": whole["response"],
            "requests": model["api"]["totalRequests"],
            "tool_calls": whole["stats"]["tools"]["totalCalls"],
        }
    return text


def output_of(case: Case) -> str:
    args = case.args
    return args[args.index("--output-format") + 1] if "--output-format" in args else "text"


#: The suite's coverage settings (empty unless it measures): a fake started with a bare
#: environment still measures itself, as the other fakes do (measurement only).
MEASURING = {k: v for k, v in os.environ.items() if k.startswith("STUNTSET_COVERAGE")}


def lay_out(where: Path, case: Case) -> tuple[Path, dict[str, str]]:
    """A working directory with the case's files and a CLI home with its settings: (cwd,
    environment without the base URL)."""
    work = where / "work"
    work.mkdir(parents=True, exist_ok=True)
    for name, text in case.files.items():
        (work / name).write_text(text)
    home = where / "home"
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    settings: dict[str, Any] = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }
    if case.attempts is not None:
        settings["general"]["maxAttempts"] = case.attempts
    (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    env = {
        **MEASURING,
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GEMINI_API_KEY": "fake",
        "GEMINI_CLI_NO_RELAUNCH": "1",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    return work, env


def run(
    executable: str, case: Case, cwd: Path, env: dict[str, str]
) -> tuple[Any, tuple[str, ...], int]:
    """Run the case's command line: (normalized stdout, kept stderr lines, exit status)."""
    done = subprocess.run(
        [executable, *case.args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return (
        normalized_stdout(done.stdout, output_of(case)),
        normalized_stderr(done.stderr),
        done.returncode,
    )
