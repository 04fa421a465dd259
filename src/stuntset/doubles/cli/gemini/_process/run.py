"""The fake ``gemini`` process: ``@google/gemini-cli`` 0.61.0's headless mode, from a plan.

Runs inside the installed executable (see ``_runtime``: built-ins only). The plan was compiled
from a script at install time by ``stuntset.doubles.cli.gemini``. What the real CLI does, as
observed over the model double (docs/protocol-gemini-cli.md):

* ``gemini -p PROMPT`` (or a positional query, or stdin alone when it is not a terminal) runs
  one prompt to its end and exits. stdin, when it is not a terminal and has data within
  500 ms, is read to EOF and comes first: ``<stdin>\\n\\n<prompt>``. No prompt at all: "No input
  provided via stdin. …", exit 42.
* ``--output-format text`` (default) writes the answer as it streams; ``json`` one
  pretty-printed object (``session_id``, ``response``, ``stats``) at the end; ``stream-json``
  one JSON line per event: ``init``, the user ``message``, assistant ``message`` deltas,
  ``tool_use`` / ``tool_result``, ``result``.
* Start-up refusals: an untrusted folder (no ``--skip-trust``, no
  ``GEMINI_CLI_TRUST_WORKSPACE=true``, not in ``~/.gemini/trustedFolders.json``) exit 55; no
  or a wrong auth method (``GOOGLE_GEMINI_BASE_URL`` alone selects the ``gateway`` method,
  which this version refuses: "Invalid auth method selected.") exit 41 — the JSON error object
  on stderr with ``--output-format json``. Bad flags: yargs' text, exit 1.
* Model API errors: see the package's table. SIGTERM ends the process with status 0.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]
import posix
import time

from stuntset.doubles.cli._runtime import take_turn

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli._runtime import Runtime

__all__ = ["run"]

#: 2026-12-01T00:00:00Z: where the fake's clock starts (timestamps and call ids).
BASE_MS = 1796083200000

_FORMATS = ("text", "json", "stream-json")
_MODES = ("default", "auto_edit", "yolo", "plan")
#: name → (key, takes a value, choices); ``array`` options take values up to the next flag.
_OPTIONS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "-p": ("prompt", "string", ()),
    "--prompt": ("prompt", "string", ()),
    "-m": ("model", "string", ()),
    "--model": ("model", "string", ()),
    "-o": ("output-format", "string", _FORMATS),
    "--output-format": ("output-format", "string", _FORMATS),
    "-y": ("yolo", "boolean", ()),
    "--yolo": ("yolo", "boolean", ()),
    "--approval-mode": ("approval-mode", "string", _MODES),
    "-d": ("debug", "boolean", ()),
    "--debug": ("debug", "boolean", ()),
    "--skip-trust": ("skip-trust", "boolean", ()),
    "-s": ("sandbox", "boolean", ()),
    "--sandbox": ("sandbox", "boolean", ()),
    "-v": ("version", "boolean", ()),
    "--version": ("version", "boolean", ()),
    "-h": ("help", "boolean", ()),
    "--help": ("help", "boolean", ()),
    "-i": ("prompt-interactive", "string", ()),
    "--prompt-interactive": ("prompt-interactive", "string", ()),
    "-r": ("resume", "string", ()),
    "--resume": ("resume", "string", ()),
    "--session-id": ("session-id", "string", ()),
    "-e": ("extensions", "array", ()),
    "--extensions": ("extensions", "array", ()),
    "-l": ("list-extensions", "boolean", ()),
    "--list-extensions": ("list-extensions", "boolean", ()),
    "--include-directories": ("include-directories", "array", ()),
    "--allowed-tools": ("allowed-tools", "array", ()),
    "--allowed-mcp-server-names": ("allowed-mcp-server-names", "array", ()),
    "--policy": ("policy", "array", ()),
    "--admin-policy": ("admin-policy", "array", ()),
    "--raw-output": ("raw-output", "boolean", ()),
    "--accept-raw-output-risk": ("accept-raw-output-risk", "boolean", ()),
    "--screen-reader": ("screen-reader", "boolean", ()),
}

_USAGE = """Usage: gemini [options] [command]

Gemini CLI - Defaults to interactive mode. Use -p/--prompt for non-interactive (headless) mode.

Options:
  -m, --model                     Model  [string]
  -p, --prompt                    Run in non-interactive (headless) mode with the given prompt. Appended to input on stdin (if any).  [string]
  -y, --yolo                      Automatically accept all actions  [boolean] [default: false]
      --approval-mode             Set the approval mode  [string] [choices: "default", "auto_edit", "yolo", "plan"]
  -o, --output-format             The format of the CLI output.  [string] [choices: "text", "json", "stream-json"]
  -v, --version                   Show version number  [boolean]
  -h, --help                      Show help  [boolean]

(stuntset fake gemini: the headless mode is simulated)
"""

#: Tools registered in headless mode without approvals, in registry order (observed).
_ALWAYS = (
    "update_topic",
    "list_directory",
    "read_file",
    "grep_search",
    "glob",
    "google_web_search",
    "enter_plan_mode",
    "invoke_agent",
)
_EDIT_TOOLS = ("replace", "write_file")
#: Parameters the CLI's own tools' schemas require (its bundle; a call without one is refused,
#: observed for ``read_file``).
_REQUIRED: dict[str, tuple[str, ...]] = {
    "read_file": ("file_path",),
    "run_shell_command": ("command",),
    "write_file": ("file_path", "content"),
    "replace": ("file_path", "instruction", "old_string", "new_string"),
    "glob": ("pattern",),
    "grep_search": ("pattern",),
    "list_directory": ("dir_path",),
}
_YOLO_ORDER = (
    "update_topic",
    "list_directory",
    "read_file",
    "grep_search",
    "glob",
    "activate_skill",
    "replace",
    "write_file",
    "web_fetch",
    "run_shell_command",
    "list_background_processes",
    "read_background_output",
    "google_web_search",
    "write_todos",
    "enter_plan_mode",
    "invoke_agent",
)


class ArgumentError(Exception):
    pass


class _End(Exception):
    """The prompt's run has ended (its output written)."""


def parse(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """yargs' reading of the command line: options and positionals."""
    options: dict[str, Any] = {}
    positionals: list[str] = []
    unknown: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        index += 1
        if arg == "--":
            positionals.extend(argv[index:])
            break
        if not arg.startswith("-") or arg == "-":
            positionals.append(arg)
            continue
        name, has_value, inline = arg.partition("=")
        spec = _OPTIONS.get(name)
        if spec is None:
            if name.startswith("--no-") and ("--" + name[5:]) in _OPTIONS:
                options[_OPTIONS["--" + name[5:]][0]] = False
                continue
            unknown.append(name.lstrip("-"))
            continue
        key, kind, choices = spec
        if kind == "boolean":
            options[key] = inline not in ("false", "0") if has_value else True
            continue
        if kind == "array":
            values = [inline] if has_value else []
            while index < len(argv) and not argv[index].startswith("-"):
                values.append(argv[index])
                index += 1
            options.setdefault(key, []).extend(values)
            continue
        if has_value:
            value = inline
        elif index < len(argv) and not argv[index].startswith("-"):
            value = argv[index]
            index += 1
        else:
            value = ""
        if choices and value not in choices:
            shown = ", ".join(f'"{c}"' for c in choices)
            raise ArgumentError(
                f'Invalid values:\n  Argument: {key}, Given: "{value}", Choices: {shown}'
            )
        options[key] = value
    if unknown:
        noun = "argument" if len(unknown) == 1 else "arguments"
        raise ArgumentError(f"Unknown {noun}: {', '.join(unknown)}")
    if options.get("yolo") and "approval-mode" in options:
        raise ArgumentError(
            "Cannot use both --yolo (-y) and --approval-mode together. "
            "Use --approval-mode=yolo instead."
        )
    return options, positionals


def _read_json(path: str) -> dict[str, Any]:
    from stuntset.doubles.cli._runtime import loads

    try:
        with open(path, "rb") as file:
            value = loads(file.read().decode("utf-8", "replace"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _setting(settings: dict[str, Any], *keys: str) -> Any:
    value: Any = settings
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _trusted(rt: Runtime, options: dict[str, Any], settings: dict[str, Any], home: str) -> bool:
    if options.get("skip-trust") or rt.env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return True
    if _setting(settings, "security", "folderTrust", "enabled") is False:
        return True
    folders = _read_json(home + "/.gemini/trustedFolders.json")
    path = rt.cwd.rstrip("/") or "/"
    while True:
        if folders.get(path) in ("TRUST_FOLDER", "TRUST_PARENT"):
            return True
        if path == "/":
            return False
        path = path.rsplit("/", 1)[0] or "/"


def _auth_problem(rt: Runtime, settings: dict[str, Any], home: str) -> str | None:
    """Why the CLI refuses to start headless for want of an auth method, or ``None``."""
    env = rt.env
    chosen = _setting(settings, "security", "auth", "selectedType")
    if not chosen:
        if env.get("GOOGLE_GENAI_USE_GCA") == "true":
            chosen = "oauth-personal"
        elif env.get("GOOGLE_GENAI_USE_VERTEXAI") == "true":
            chosen = "vertex-ai"
        elif env.get("GOOGLE_GEMINI_BASE_URL"):
            chosen = "gateway"
        elif env.get("GEMINI_API_KEY"):
            chosen = "gemini-api-key"
    if not chosen:
        return (
            f"Please set an Auth method in your {home}/.gemini/settings.json or specify one of "
            f"the following environment variables before running: GEMINI_API_KEY, "
            f"GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA"
        )
    if chosen in ("oauth-personal", "compute-default-credentials"):
        return None
    if chosen == "gemini-api-key":
        if env.get("GEMINI_API_KEY"):
            return None
        return (
            "When using Gemini API, you must specify the GEMINI_API_KEY environment variable.\n"
            "Update your environment and try again (no reload needed if using .env)!"
        )
    if chosen == "vertex-ai":
        located = env.get("GOOGLE_CLOUD_PROJECT") and env.get("GOOGLE_CLOUD_LOCATION")
        if located or env.get("GOOGLE_API_KEY"):
            return None
        return (
            "When using Vertex AI, you must specify either:\n"
            "\u2022 GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION environment variables.\n"
            "\u2022 GOOGLE_API_KEY environment variable (if using express mode).\n"
            "Update your environment and try again (no reload needed if using .env)!"
        )
    return "Invalid auth method selected."


def _read_stdin() -> str:
    """What the CLI reads from a stdin that is not a terminal: nothing if no data comes within
    500 ms, else everything to EOF."""
    import select

    try:
        readable, _, _ = select.select([0], [], [], 0.5)
    except (OSError, ValueError):
        return ""
    if not readable:
        return ""
    data = b""
    while chunk := posix.read(0, 65536):
        data += chunk
    return data.decode("utf-8", "replace")


def _levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            )
        previous = current
    return previous[-1]


def _iso(ms: int) -> str:
    seconds, millis = divmod(ms, 1000)
    t = time.gmtime(seconds)
    return (
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T"
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}.{millis:03d}Z"
    )


class Run:
    """One headless prompt: its options, output format, counters and clock."""

    def __init__(self, rt: Runtime, options: dict[str, Any], settings: dict[str, Any]) -> None:
        self.rt = rt
        self.format = options.get("output-format") or "text"
        self.model = options.get("model") or rt.env.get("GEMINI_MODEL") or rt.plan["model"]
        mode = "yolo" if options.get("yolo") else options.get("approval-mode") or "default"
        self.mode = mode
        attempts = _setting(settings, "general", "maxAttempts")
        self.max_attempts = min(attempts, 10) if isinstance(attempts, int) and attempts > 0 else 10
        self.ms = BASE_MS
        self.start_ms = BASE_MS
        self.session_id = options.get("session-id") or rt.ids("session").uuid()
        self.response = ""
        self.at_line_start = True
        self.tokens = [0, 0]
        self.requests = 0
        self.errors = 0
        self.latency = 0
        self.tools: dict[str, list[int]] = {}
        self.prompt = ""
        #: MCP servers are configured: a name that is none of the CLI's tools may be theirs
        self.mcp = bool(_setting(settings, "mcpServers"))

    # --- output --------------------------------------------------------------------------

    def tick(self) -> str:
        self.ms += 1
        return _iso(self.ms)

    def emit(self, event: dict[str, Any]) -> None:
        if self.format == "stream-json":
            self.rt.send({"type": event.pop("type"), "timestamp": self.tick(), **event})

    def write_text(self, text: str, message: dict[str, Any] | None = None) -> None:
        """Write ``text`` on stdout; journaled as the ``message`` it is (json output: then
        ``Invocation.stdout`` has it), else as ``output`` text."""
        if text:
            if message is not None:
                self.rt.journal.write("stdout", message=message)
            else:
                self.rt.journal.write("output", text=text)
            self.rt.write_bytes(text.encode())
            self.at_line_start = text.endswith("\n")

    def line_end(self) -> None:
        if self.format == "text" and not self.at_line_start:
            self.write_text("\n")

    def active_tools(self) -> tuple[str, ...]:
        if self.mode == "yolo":
            return _YOLO_ORDER
        if self.mode == "auto_edit":
            return tuple(t for t in _YOLO_ORDER if t in _ALWAYS or t in _EDIT_TOOLS)
        return _ALWAYS

    def stream_stats(self, duration: int) -> dict[str, Any]:
        given, made = self.tokens
        tokens = {
            "total_tokens": given + made,
            "input_tokens": given,
            "output_tokens": made,
            "cached": 0,
            "input": given,
        }
        calls = sum(entry[0] for entry in self.tools.values())
        return {
            **tokens,
            "duration_ms": duration,
            "tool_calls": calls,
            "models": {self.model: tokens},
        }

    def json_stats(self) -> dict[str, Any]:
        given, made = self.tokens
        tokens = {
            "input": given,
            "prompt": given,
            "candidates": made,
            "total": given + made,
            "cached": 0,
            "thoughts": 0,
            "tool": 0,
        }
        api = {
            "totalRequests": self.requests,
            "totalErrors": self.errors,
            "totalLatencyMs": self.latency,
            "errorsByType": {"ApiError": self.errors} if self.errors else {},
        }
        main = {k: v for k, v in api.items() if k != "errorsByType"}
        zero = {"accept": 0, "reject": 0, "modify": 0, "auto_accept": 0}
        by_name = {}
        for name, (count, success, fail, accepted) in self.tools.items():
            by_name[name] = {
                "count": count,
                "success": success,
                "fail": fail,
                "durationMs": 0,
                "decisions": {**zero, "accept": accepted},
            }
        return {
            "models": {
                self.model: {
                    "api": api,
                    "tokens": tokens,
                    "roles": {"main": {**main, "tokens": tokens}},
                }
            },
            "tools": {
                "totalCalls": sum(e[0] for e in self.tools.values()),
                "totalSuccess": sum(e[1] for e in self.tools.values()),
                "totalFail": sum(e[2] for e in self.tools.values()),
                "totalDurationMs": 0,
                "totalDecisions": {**zero, "accept": sum(e[3] for e in self.tools.values())},
                "byName": by_name,
            },
            "files": {"totalLinesAdded": 0, "totalLinesRemoved": 0},
        }

    def json_output(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "response": self.response,
            "stats": self.json_stats(),
        }

    def success_output(self) -> str:
        """What the run writes when it ends well (the result line, the JSON, a newline)."""
        from stuntset.doubles.cli._runtime import dumps

        if self.format == "stream-json":
            result = {
                "type": "result",
                "timestamp": _iso(self.ms + 1),
                "status": "success",
                "stats": self.stream_stats(self.ms - self.start_ms),
            }
            return dumps(result) + "\n"
        if self.format == "json":
            return _pretty(
                {
                    "session_id": self.session_id,
                    "response": self.response,
                    "stats": self.json_stats(),
                }
            )
        return "" if self.at_line_start else "\n"

    def finish(self) -> None:
        if self.format == "stream-json":
            self.emit(
                {
                    "type": "result",
                    "status": "success",
                    "stats": self.stream_stats(self.ms - self.start_ms),
                }
            )
        elif self.format == "json":
            self.write_text(self.success_output(), self.json_output())
        else:
            self.line_end()
        raise _End

    def fail(self, name: str, message: str, shown: str, code: Any, status: int | None) -> None:
        """The CLI's end on an error: ``name``/``message`` the thrown error, ``shown`` the
        formatted ``[API Error: …]`` text, ``code`` the JSON's code and the exit status."""
        rt = self.rt
        stamp = _iso(self.ms).replace(":", "-").replace(".", "-")
        rt.stderr(
            f"Error when talking to Gemini API Full report available at: "
            f"/tmp/gemini-client-error-Turn.run-sendMessageStream-{stamp}.json {name}: {message}\n"
            + (f"  status: {status}\n}}\n" if status is not None else "")
        )
        exit_code = (code if isinstance(code, int) else 1) & 0xFF
        if self.format == "stream-json":
            self.emit(
                {
                    "type": "result",
                    "status": "error",
                    "error": {"type": "unknown", "message": shown},
                    "stats": self.stream_stats(0),
                }
            )
        elif self.format == "json":
            error = {"type": "Error", "message": message, "code": code}
            rt.stderr(_pretty({"session_id": self.session_id, "error": error}) + "\n")
        else:
            rt.stderr("An unexpected critical error occurred:[object Object]\n")
            exit_code = 1
        rt.exit(exit_code)

    # --- the prompt ------------------------------------------------------------------------

    def play(self, prompt: str) -> None:
        self.prompt = prompt
        self.emit({"type": "init", "session_id": self.session_id, "model": self.model})
        self.emit({"type": "message", "role": "user", "content": prompt})
        try:
            self.request(has_results=False, attempts=0, stream_attempts=0)
        except _End:
            return

    def take(self, has_results: bool) -> dict[str, Any]:
        index, error = take_turn(
            self.rt, self.prompt, self.model, "gemini-cli", has_results=has_results
        )
        self.requests += 1
        self.latency += 10
        self.ms += 10
        if index < 0:
            # the model double answers a 500 naming the miss; the CLI retries it, none answers
            assert error is not None
            self.rt.stderr(f"stuntset fake gemini: {error}\n")
            self.errors += 1
            head = error.splitlines()[0]
            body = _compact(
                {"error": {"code": 500, "message": f"stuntset: {head}", "status": "INTERNAL"}}
            )
            self.fail("_ApiError", body, f"[API Error: {body}]", 500, 500)
        turn: dict[str, Any] = self.rt.turn(index)
        return turn

    def request(self, has_results: bool, attempts: int, stream_attempts: int) -> None:
        turn = self.take(has_results)
        ops: list[tuple[Any, ...]] = turn["ops"]
        pending: list[tuple[str, str, dict[str, Any]]] = []
        response = 0
        for op in ops:
            kind = op[0]
            if kind == "text":
                self.text(op[1], op[2])
            elif kind == "usage":
                self.tokens[0] += op[1]
                self.tokens[1] += op[2]
            elif kind == "delay":
                self.rt.sleep(op[1])
                self.ms += int(op[1] * 1000)
            elif kind == "tool":
                pending.append(self.tool_use(op[1], op[2], op[3], len(pending)))
            elif kind == "approval" or kind == "ask":
                pass  # the model double's Gemini wire has neither: the real CLI sees nothing
            elif kind == "result":
                if not pending:
                    continue
                tool_id, name, parameters = pending.pop(0)
                self.tool_result(tool_id, name, parameters, op[1], op[2])
                if not pending:
                    # the tool results go back: the rest of the turn answers that request
                    response += 1
                    self.requests += 1
                    self.latency += 10
                    self.ms += 10
                    attempts = stream_attempts = 0
            elif kind == "api_error":
                self.api_error(op, has_results or response > 0, attempts, stream_attempts)
                return
            elif kind == "stream_error":
                self.errors += 1
                name = "TypeError" if op[1] == "terminated" else "SyntaxError"
                self.fail(name, op[1], f"[API Error: {op[1]}]", 1, None)
            elif kind == "invalid_stream":
                self.stream_retry(has_results or response > 0, attempts, stream_attempts)
                return
            else:
                self.cli_fault(op)
        for tool_id, name, parameters in pending:  # no scripted result (refused at install)
            self.tool_result(tool_id, name, parameters, "", True)
        self.finish()

    def text(self, deltas: list[str], interval: float) -> None:
        for position, delta in enumerate(deltas):
            if position and interval:
                self.rt.sleep(interval)
                self.ms += int(interval * 1000)
            if self.format == "stream-json":
                self.emit({"type": "message", "role": "assistant", "content": delta, "delta": True})
            elif self.format == "json":
                self.response += delta
            else:
                self.write_text(delta)

    def tool_use(
        self, given: str | None, name: str, parameters: dict[str, Any], position: int
    ) -> tuple[str, str, dict[str, Any]]:
        call = given or f"{name}_{self.ms}_{position}"
        tool_id = f"{name}__{call}"
        self.emit(
            {"type": "tool_use", "tool_name": name, "tool_id": tool_id, "parameters": parameters}
        )
        return tool_id, name, parameters

    def refusal(self, name: str, parameters: dict[str, Any]) -> tuple[str, str] | None:
        """Why the CLI does not run the call (its error type and message), or ``None``: a tool
        it has not registered (its own that needs approval, or a name it has no tool for,
        unless MCP servers are configured: their tools are the script's), or parameters its
        schema refuses."""
        active = self.active_tools()
        own = name in _YOLO_ORDER or name == "ask_user"
        if name not in active and (own or not self.mcp):
            ranked = sorted(active, key=lambda tool: _levenshtein(name, tool))[:3]
            shown = ", ".join(f'"{tool}"' for tool in ranked)
            return "tool_not_registered", f'Tool "{name}" not found. Did you mean one of: {shown}?'
        for required in _REQUIRED.get(name, ()):
            if required not in parameters:
                return "invalid_tool_params", f"params must have required property '{required}'"
        return None

    def tool_result(
        self,
        tool_id: str,
        name: str,
        parameters: dict[str, Any],
        output: str | None,
        is_error: bool,
    ) -> None:
        self.line_end()
        entry = self.tools.setdefault(name, [0, 0, 0, 0])
        entry[0] += 1
        refused = self.refusal(name, parameters)
        if refused is not None:
            kind, message = refused
            entry[2] += 1
            self.emit(
                {
                    "type": "tool_result",
                    "tool_id": tool_id,
                    "status": "error",
                    "output": message,
                    "error": {"type": kind, "message": message},
                }
            )
            self.rt.stderr(f"Error executing tool {name}: {message}\n")
            return
        entry[3] += 1
        if is_error:
            entry[2] += 1
            self.emit(
                {
                    "type": "tool_result",
                    "tool_id": tool_id,
                    "status": "error",
                    "output": output,
                    "error": {"type": "TOOL_EXECUTION_ERROR", "message": output},
                }
            )
            self.rt.stderr(f"Error executing tool {name}: {output}\n")
            return
        entry[1] += 1
        shown: dict[str, Any] = {"type": "tool_result", "tool_id": tool_id, "status": "success"}
        if output is not None:  # a display that is not text (list_directory's) has no output
            shown["output"] = output
        self.emit(shown)

    def api_error(
        self, op: tuple[Any, ...], has_results: bool, attempts: int, stream_attempts: int
    ) -> None:
        _, status, body, quota, delay = op
        self.errors += 1
        attempts += 1
        if delay is not None and attempts < self.max_attempts:
            self.rt.stderr(
                f"Attempt {attempts} failed with status {status}. Retrying with backoff... "
                f"_ApiError: {body}\n  status: {status}\n}}\n"
            )
            self.rt.sleep(delay)
            self.ms += int(delay * 1000)
            self.request(has_results, attempts, stream_attempts)
            return
        if delay is not None:
            self.rt.stderr(f"Attempt {attempts} failed: {quota or body}. Max attempts reached\n")
        if quota is not None and delay is not None:
            hint = self.rt.plan["quota_hint"]
            self.fail("RetryableQuotaError", quota, f"[API Error: {quota}]\n{hint}", status, status)
        self.fail("_ApiError", body, f"[API Error: {body}]", status, status)

    def stream_retry(self, has_results: bool, attempts: int, stream_attempts: int) -> None:
        """The stream ended without a finish reason (or with bytes that are not JSON): the CLI
        retries the request silently, at most four attempts in all."""
        stream_attempts += 1
        if stream_attempts < min(self.max_attempts, 4):
            self.request(has_results, attempts, stream_attempts)
            return
        self.errors += 1
        message = "Incomplete JSON segment at the end"
        self.fail("Error", message, f"[API Error: {message}]", 1, None)

    def cli_fault(self, op: tuple[Any, ...]) -> None:
        rt = self.rt
        kind = op[0]
        if kind == "cut":
            text = self.success_output() or "\n"
            rt.journal.write("cut", partial=text[: len(text) // 2])
            rt.write_bytes(text[: len(text) // 2].encode())
            rt.exit(0 if op[1] else 1)
        elif kind == "malformed":
            rt.journal.write("malformed", text=op[1])
            rt.write_bytes((op[1] + "\n").encode())
            rt.exit(1)
        elif kind == "garbage":
            rt.journal.write("garbage", data=op[1].decode("utf-8", "replace"))
            rt.write_bytes(op[1])
            rt.exit(1)
        elif kind == "out_of_order":
            rt.exit_code = 1
            self.emit(
                {
                    "type": "tool_result",
                    "tool_id": "never_started__0",
                    "status": "success",
                    "output": "",
                }
            )
            try:  # noqa: SIM105 (contextlib is not a built-in: the fake process imports none)
                self.finish()
            except _End:
                pass
            self.text(["a message after the result"], 0.0)
            rt.exit(1)
        elif kind == "stall":
            while True:
                rt.sleep(3600, scaled=False)
        elif kind == "exit":
            _, code, stderr = op
            if stderr:
                rt.stderr(stderr if stderr.endswith("\n") else stderr + "\n")
            rt.exit(code)


def _compact(value: Any) -> str:
    from stuntset.doubles.cli._runtime import dumps

    return dumps(value)


def _pretty(value: Any, indent: str = "") -> str:
    """``JSON.stringify(value, null, 2)``: the CLI's json output (written with no newline after
    it on stdout; on stderr, as ``console.error`` writes it, with one)."""
    from stuntset.doubles.cli._runtime import dumps

    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = [f"{inner}{dumps(k)}: {_pretty(v, inner)}" for k, v in value.items()]
        text = "{\n" + ",\n".join(items) + "\n" + indent + "}"
    elif isinstance(value, list) and value:
        text = "[\n" + ",\n".join(inner + _pretty(v, inner) for v in value) + "\n" + indent + "]"
    else:
        text = dumps(value)
    return text


def run(rt: Runtime) -> None:
    """The fake ``gemini``'s main."""
    rt.open_journal()
    if rt.plan.get("ignore_sigterm") is None:
        # observed: SIGTERM ends the real CLI with status 0 and nothing more on stdout
        _signal.signal(_signal.SIGTERM, lambda signum, frame: _on_sigterm(rt))
    try:
        options, positionals = parse(rt.argv)
    except ArgumentError as error:
        rt.stderr(f"{error}\n{_USAGE}")
        rt.exit(1)
        return
    if options.get("version"):
        rt.write_bytes(f"{rt.plan['version']}\n".encode())
        return
    if options.get("help"):
        rt.write_bytes(_USAGE.encode())
        return
    if rt.plan.get("startup_delay"):
        rt.sleep(rt.plan["startup_delay"], scaled=False)
    home = rt.env.get("GEMINI_CLI_HOME") or rt.env.get("HOME", "")
    settings = _read_json(home + "/.gemini/settings.json")
    workspace = _read_json(rt.cwd + "/.gemini/settings.json")
    for key, value in workspace.items():
        if isinstance(value, dict) and isinstance(settings.get(key), dict):
            settings[key] = {**settings[key], **value}
        else:
            settings[key] = value
    prompt = options.get("prompt")
    query = " ".join(positionals)
    interactive = prompt is None and posix.isatty(0) and "prompt-interactive" not in options
    if interactive or "prompt-interactive" in options:
        rt.stderr("stuntset fake gemini: the interactive UI is not simulated; use -p\n")
        rt.exit(1)
        return
    if not _trusted(rt, options, settings, home):
        rt.stderr(
            "\x1b[31mGemini CLI is not running in a trusted directory. To proceed, either use "
            "`--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or "
            "trust this directory in interactive mode. For more details, see "
            "https://geminicli.com/docs/cli/trusted-folders/#headless-and-automated-environments"
            "\x1b[0m\n"
        )
        rt.exit(55)
        return
    problem = _auth_problem(rt, settings, home)
    run = Run(rt, options, settings)
    if problem is not None:
        if run.format == "json":
            refusal = {"type": "Error", "message": problem, "code": 41}
            rt.stderr(_pretty({"session_id": run.session_id, "error": refusal}) + "\n")
        else:
            rt.stderr(problem + "\n")
        rt.exit(41)
        return
    if run.mode == "yolo":
        rt.stderr("YOLO mode is enabled. All tool calls will be automatically approved.\n" * 2)
    text = prompt if prompt is not None else query
    if not posix.isatty(0):
        piped = _read_stdin()
        if piped:
            text = f"{piped}\n\n{text}" if text else piped
    if not text:
        rt.stderr(
            "No input provided via stdin. Input can be provided by piping data into gemini or "
            "using the --prompt option.\n"
        )
        rt.exit(42)
        return
    run.play(text)


def _on_sigterm(rt: Runtime) -> None:
    rt.journal.write("signal", signal="SIGTERM")
    rt.exit(0)
