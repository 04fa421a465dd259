"""The fake ``claude`` process: Claude Code 2.1.332's headless mode, played from a plan.

Runs inside the installed executable (see ``_runtime``: built-ins only). The plan was
compiled from a script at install time by ``stuntset.doubles.cli.claude``.

Protocol, as ``claude-agent-sdk`` 0.2.189 drives it (protocols.md §5, checked against the
SDK's code and the bundled CLI):

* ``--output-format stream-json --verbose --input-format stream-json``: NDJSON both ways.
  Control requests are answered at once, also while a turn plays: ``initialize`` (hooks are
  remembered), ``interrupt`` (ends the running turn as the real CLI does: a ``user``
  "[Request interrupted by user]" message, then an ``error_during_execution`` result with
  ``terminal_reason: "aborted_streaming"``), ``set_permission_mode``, ``set_model``,
  ``mcp_status`` and friends; any other subtype gets the CLI's error response
  ("Unsupported control request subtype: …").
* Each ``user`` message is one turn (queued while a turn plays). A turn writes
  ``session_state_changed`` ``running`` (when the SDK asks for session state), ``system/init``,
  one ``assistant`` message per content block (``stream_event`` partials around them with
  ``--include-partial-messages``), ``user`` tool results, and one ``result``; then ``idle``.
* Approvals: ``can_use_tool`` with ``--permission-prompt-tool stdio``; the turn blocks until
  the answer. Without a prompt tool the tool is denied as the headless CLI does. A deny skips
  the scripted result: the tool result is the deny message, as an error.
* ``PreToolUse`` / ``PostToolUse`` / ``UserPromptSubmit`` / ``Stop`` hooks registered in
  ``initialize`` get ``hook_callback`` requests; a ``PreToolUse`` answer can allow or deny.
  The hooks of the settings files (user, project, local, as ``--setting-sources`` selects)
  and of ``--settings`` run for real before them (``SessionStart`` at start-up, ``SessionEnd``
  at exit), and write ``hook_started`` / ``hook_response`` messages with
  ``--include-hook-events`` (``_process.hooks``).
* ``--max-budget-usd``: once the cost the script reported (``Usage.cost``, summed over the
  process's turns) reaches the budget at the end of a model response, the turn ends with an
  ``error_max_budget_usd`` result (``errors: ["Reached maximum budget ($<budget>)"]``,
  ``terminal_reason: "budget_exhausted"``, no ``result`` text); a later turn gets that result
  at once, without using a scripted turn.
* ``--mcp-config``: ``system/init`` reports the servers and the ``mcp__<server>__<tool>``
  names of the connected ones, from the configuration and the script, without connecting
  (``_process.mcp``), and ``mcp_status`` describes them; an invalid configuration is the
  CLI's error, exit 1.
* ``--resume=<id>`` continues a session an earlier invocation of the same double recorded
  (state beside the double); an unknown id gets the CLI's error result before ``initialize``
  is answered, then exit 1. ``--continue`` picks the latest session.
* Exit: at stdin EOF, after the turn in progress; status 1 if the last turn ended in an error
  result (or a fault), else 0.

Bad input, as the real CLI handles it (observed): a stdin line that is not JSON →
"Error parsing streaming input line (type=…, N chars): SyntaxError" on stderr, exit 1 (also
for arrays nested thousands deep, which the real CLI parses and then fails on with "API
Error: Maximum call stack size exceeded.", exit 1); a JSON line that is not an object is
skipped; a
``control_response`` for an unknown request id and messages of unknown types are ignored;
unknown flags → commander's error text, exit 1 (``_process.args``); skipping permissions as
root outside a declared sandbox → the CLI's refusal, exit 1 (``check_root``). Each of these
start-up refusals first waits for the client's first write, as the slower-starting real CLI
in effect does (``Runtime.settle``).
"""

from __future__ import annotations

import time

from stuntset.doubles.cli.claude._process.args import (
    ArgumentError,
    check_root,
    check_session_id,
    parse,
    split_list,
)
from stuntset.doubles.cli.claude._process.common import Abort, usage

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli._runtime import Ids, Runtime

__all__ = ["run"]

_HELP = """Usage: claude [options] [command] [prompt]

Claude Code - starts an interactive session by default, use -p/--print for
non-interactive output

(stuntset fake: headless print and stream-json modes only)
"""


def _message_type(text: str) -> str:
    """The ``type`` value of a line that does not parse, found the simple way (as the real
    CLI's error message reports it)."""
    at = text.find('"type"')
    if at < 0:
        return "unknown"
    rest = text[at + 6 :].lstrip(" :")
    if not rest.startswith('"'):
        return "unknown"
    end = rest.find('"', 1)
    return rest[1:end] if end > 0 else "unknown"


def _prompt_of(message: dict[str, Any]) -> tuple[str, bool]:
    """A user message's text and whether it carries tool results."""
    inner = message.get("message")
    content = inner.get("content") if isinstance(inner, dict) else None
    if isinstance(content, str):
        return content, False
    texts: list[str] = []
    has_results = False
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict):
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            has_results = has_results or block.get("type") == "tool_result"
    return "\n".join(texts), has_results


class Session:
    """One invocation's session: options, the control protocol, and the turn queue."""

    def __init__(self, rt: Runtime, options: dict[str, Any]) -> None:
        self.rt = rt
        plan = rt.plan
        self.options = options
        self.model: str = options.get("model") or plan["model"]
        self.permission_mode: str = options.get("permission_mode") or "default"
        if options.get("skip_permissions"):  # it wins over --permission-mode (observed)
            self.permission_mode = "bypassPermissions"
        self.partial = bool(options.get("include_partial_messages"))
        self.stdio_prompt = options.get("permission_prompt_tool") == "stdio"
        self.allowed = split_list(options.get("allowed_tools"))
        self.disallowed = split_list(options.get("disallowed_tools"))
        tools = options.get("tools")
        named = split_list(tools)
        self.tools: list[str] = (
            list(plan["tools"])
            if tools is None or named == ["default"]
            else [t for t in named if t not in self.disallowed]
        )
        #: Tools a call may name beyond ``tools`` (offered to the model, not listed).
        self.unlisted: list[str] = list(plan.get("unlisted_tools", ())) if tools is None else []
        #: The ``--mcp-config`` servers as ``mcp_status`` describes them (``_process.mcp``).
        self.mcp_servers: list[dict[str, Any]] = []
        max_turns = options.get("max_turns")
        self.max_turns = int(float(max_turns)) if isinstance(max_turns, str) else 0
        budget = options.get("max_budget_usd")
        #: ``--max-budget-usd``: checked against ``spent``, the cost of every turn this process
        #: played (the real CLI's budget spans its whole session, not one turn).
        self.budget: float | None = float(budget) if isinstance(budget, str) else None
        self.spent = 0.0
        self.report_state = rt.env.get("CLAUDE_CODE_SDK_READS_SESSION_STATE") == "1"
        self.streaming = options.get("output_format") == "stream-json"
        self.cwd = rt.cwd
        self.session_id = ""
        self.turns_in_session = 0
        self.queue: list[dict[str, Any]] = []
        self.responses: dict[str, dict[str, Any]] = {}
        self.waiting: set[str] = set()
        self.hooks: dict[str, Any] = {}
        #: The hooks of the settings files and ``--settings`` (``_process.hooks.Hooks``), if any.
        self.settings_hooks: Any = None
        #: The last prompt's id (``SessionEnd`` hooks get it).
        self.prompt_id: str | None = None
        self.running = False
        self.interrupted = False
        self.collected: list[dict[str, Any]] = []
        self.request_ids = rt.ids("control-requests")

    # --- output ---------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        if self.streaming:
            self.rt.send(message)
            if self.running:
                self.pump(0.0)
        else:
            self.collected.append(message)

    def state_changed(self, state: str, ids: Ids) -> None:
        if self.report_state and self.streaming:
            self.send(
                {
                    "type": "system",
                    "subtype": "session_state_changed",
                    "state": state,
                    "sdk_host_only": True,
                    "uuid": ids.uuid(),
                    "session_id": self.session_id,
                }
            )

    def respond(self, request_id: Any, response: dict[str, Any]) -> None:
        self.rt.send(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": request_id, "response": response},
            }
        )

    def fail(self, text: str) -> None:
        """An error result with ``errors`` (nothing played), then exit 1."""
        self.rt.settle()
        self.rt.stderr(text + "\n")
        self.send(self.result_error("error_during_execution", [text], 0, self.rt.ids("error")))
        self.rt.exit(1)

    def result_error(
        self, subtype: str, errors: list[str], num_turns: int, ids: Ids, **extra: Any
    ) -> dict[str, Any]:
        message = {
            "type": "result",
            "subtype": subtype,
            "duration_ms": 0,
            "duration_api_ms": 0,
            "is_error": True,
            "num_turns": num_turns,
            "stop_reason": None,
            "session_id": self.session_id or ids.uuid(),
            "total_cost_usd": 0,
            "usage": usage(0, 0),
            "modelUsage": {},
            "permission_denials": [],
            "uuid": ids.uuid(),
            "errors": errors,
        }
        message.update(extra)
        return message

    # --- sessions -------------------------------------------------------------------------

    def open(self) -> None:
        """Pick the session: new, ``--session-id``, ``--resume`` or ``--continue``."""
        options = self.options
        resume = options.get("resume")

        def choose(state: dict[str, Any]) -> tuple[str, str | None, int]:
            # a session's turn count is a record of its own (SharedState.record): a spawn
            # reads the session it resumes, never every session the double has seen
            sessions = self.rt.state
            wanted: str | None = None
            turns: int | None = None
            if resume is True:
                return "", "Error: --resume requires a valid session ID or session title", 0
            if isinstance(resume, str):
                turns = sessions.record("sessions", resume)
                if turns is None:
                    return resume, f"No conversation found with session ID: {resume}", 0
                wanted = resume
            elif options.get("continue"):
                wanted = state.get("latest")
                if wanted is None:
                    return "", "No conversation found to continue", 0
                turns = sessions.record("sessions", wanted) or 0
            if wanted is not None and not options.get("fork_session"):
                state["latest"] = wanted
                return wanted, None, turns or 0
            explicit = options.get("session_id")
            if isinstance(explicit, str):
                if sessions.record("sessions", explicit) is not None:
                    return explicit, f"Error: Session ID {explicit} is already in use.", 0
                new = explicit
            else:
                created = state.get("created", 0) + 1
                state["created"] = created
                new = self.rt.ids(f"session/{created}").uuid()
            sessions.write_record("sessions", new, turns or 0)
            state["latest"] = new
            return new, None, turns or 0

        session_id, error, turns = self.rt.state.update(choose)
        self.session_id = session_id
        self.turns_in_session = turns
        if error is not None:
            self.fail(error)

    # --- stdin ----------------------------------------------------------------------------

    def serve(self) -> None:
        """The stream-json loop: until stdin EOF, one turn per user message."""
        while True:
            while self.queue:
                self.play(self.queue.pop(0))
            line = self.rt.next_line(None)
            if line is self.rt.EOF:
                return
            if line is not None:
                self.handle(line)

    def pump(self, timeout: float | None) -> bool:
        """Handle what stdin has (waiting up to ``timeout`` for the first line); False at
        EOF."""
        return self.rt.pump(self.handle, timeout)

    def handle(self, raw: Any) -> None:
        text = raw.decode("utf-8", "replace").strip()
        if not text:
            return
        try:
            message = self.rt.loads(text)
        except ValueError:
            self.rt.journal.write("stdin", raw=text)
            self.rt.stderr(
                f"Error parsing streaming input line (type={_message_type(text)}, "
                f"{len(text)} chars): SyntaxError\n"
            )
            self.rt.exit(1)
            return
        if not isinstance(message, dict):  # JSON, but not a message: the real CLI skips it
            self.rt.journal.write("stdin", raw=text)
            self.rt.journal.write("ignored", reason="a JSON line that is not an object")
            return
        self.rt.journal.write("stdin", message=message)
        kind = message.get("type")
        if kind == "control_request":
            self.control(message)
        elif kind == "control_response":
            response = message.get("response")
            request_id = response.get("request_id") if isinstance(response, dict) else None
            # the ids it asked with are strings: any other (a list, an object) answers none
            waited = isinstance(request_id, str) and request_id in self.waiting
            if isinstance(response, dict) and waited:
                self.responses[str(request_id)] = response
            else:
                self.rt.journal.write("ignored", reason="control_response for no request")
        elif kind == "user":
            self.queue.append(message)

    def control(self, message: dict[str, Any]) -> None:
        request_id = message.get("request_id")
        request = message.get("request")
        if not isinstance(request, dict):
            request = {}
        subtype = request.get("subtype")
        if subtype == "initialize":
            self.hooks = request.get("hooks") or {}
            self.respond(request_id, self.initialize_response())
        elif subtype == "interrupt":
            if self.running:
                self.interrupted = True
            self.respond(request_id, {"still_queued": []})
        elif subtype == "set_permission_mode":
            self.permission_mode = str(request.get("mode") or "default")
            self.respond(request_id, {"mode": self.permission_mode})
        elif subtype == "set_model":
            self.model = str(request.get("model") or self.rt.plan["model"])
            self.respond(request_id, {"model": self.model})
        elif subtype == "mcp_status":
            self.respond(request_id, {"mcpServers": self.mcp_servers})
        elif subtype == "get_context_usage":
            self.respond(
                request_id,
                {"categories": [], "totalTokens": 0, "maxTokens": 200000, "percentage": 0},
            )
        elif subtype in ("rewind_files", "mcp_reconnect", "mcp_toggle", "stop_task"):
            self.respond(request_id, {})
        else:
            self.rt.send(
                {
                    "type": "control_response",
                    "response": {
                        "subtype": "error",
                        "request_id": request_id,
                        "error": f"Unsupported control request subtype: {subtype}",
                        "error_code": "unsupported_request",
                    },
                }
            )

    def initialize_response(self) -> dict[str, Any]:
        plan = self.rt.plan
        return {
            "commands": [],
            "agents": [],
            "output_style": "default",
            "available_output_styles": ["default"],
            "models": [{"value": self.model, "displayName": self.model, "description": ""}],
            "account": {"tokenSource": "none", "apiKeySource": "none", "apiProvider": "firstParty"},
            "pid": 0,
            "claude_code_version": plan["version"],
            "current_permission_mode": self.permission_mode,
            "hook_on_failure_supported": True,
            "session_state": "idle",
            "capabilities": [],
        }

    def request(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """A CLI → SDK control request; blocks (handling other stdin) until its answer.
        ``None`` if stdin closes first (the real CLI's "Stream closed")."""
        request_id = self.request_ids.uuid()
        self.waiting.add(request_id)
        self.rt.send({"type": "control_request", "request_id": request_id, "request": request})
        try:
            while request_id not in self.responses:
                if self.interrupted:
                    # as the real CLI does for a prompt it no longer needs
                    self.rt.send({"type": "control_cancel_request", "request_id": request_id})
                    raise Abort
                if not self.pump(None):
                    return None
            return self.responses.pop(request_id)
        finally:
            self.waiting.discard(request_id)

    def wait(self, seconds: float | None) -> None:
        """Wait ``seconds`` (``None``: for ever) of scaled time, handling stdin; ``Abort`` on
        an interrupt. After stdin EOF nothing can interrupt: the wait just runs out."""
        end = None if seconds is None else time.monotonic() + seconds * self.rt.time_scale
        while True:
            if self.interrupted:
                raise Abort
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return
            if not self.pump(left):
                self.rt.sleep(1e9 if left is None else left, scaled=False)
                return

    # --- turns ----------------------------------------------------------------------------

    def play(self, message: dict[str, Any]) -> None:
        from stuntset.doubles.cli.claude._process.turn import TurnRun

        prompt, has_results = _prompt_of(message)
        # over budget, no request goes to the model: no scripted turn is used; else the turn
        # is chosen once the UserPromptSubmit hooks ran (a prompt hook asks the model first)
        over_budget = self.budget is not None and self.spent >= self.budget
        self.turns_in_session += 1
        ids = self.rt.ids(f"{self.session_id}/{self.turns_in_session}")
        self.running = True
        self.interrupted = False
        run = TurnRun(self, ids, prompt, -1, None, None, has_results)
        try:
            run.play(over_budget=over_budget, choose=not over_budget)
            if self.settings_hooks is not None:
                self.prompt_id = run.prompt_id()
        finally:
            self.running = False
            self.interrupted = False


def _settings_files(rt: Runtime, options: dict[str, Any]) -> list[tuple[str, str]]:
    """The settings files the real CLI reads that exist, in its order: (source, path)."""
    import posix

    chosen = options.get("setting_sources")
    if isinstance(chosen, str):
        wanted = [part.strip() for part in chosen.split(",")]
    else:
        wanted = ["user", "project", "local"]
    config = rt.env.get("CLAUDE_CONFIG_DIR") or rt.env.get("HOME", "") + "/.claude"
    paths = (
        ("user", config + "/settings.json"),
        ("project", rt.cwd + "/.claude/settings.json"),
        ("local", rt.cwd + "/.claude/settings.local.json"),
    )
    found = []
    for source, path in paths:
        if source in wanted:
            try:
                posix.stat(path)
            except OSError:
                continue
            found.append((source, path))
    return found


def run(rt: Runtime) -> None:
    """The fake ``claude``'s main."""
    rt.open_journal()
    try:
        options = parse(rt.argv)
    except ArgumentError as error:
        rt.settle()
        rt.stderr(f"{error}\n")
        rt.exit(1)
        return
    if options.get("version"):
        rt.write_bytes(f"{rt.plan['version']} (Claude Code)\n".encode())
        return
    if options.get("help"):
        rt.write_bytes(_HELP.encode())
        return
    import posix

    headless = options.get("print") or "output_format" in options or not posix.isatty(0)
    if not headless:
        rt.stderr(
            "stuntset fake claude: the interactive UI is not simulated; run with -p/--print "
            "or --output-format stream-json\n"
        )
        rt.exit(1)
    settings: dict[str, Any] | None = None
    hooks: dict[str, Any] = {}
    try:
        check_session_id(options)
        if isinstance(options.get("settings"), str):
            from stuntset.doubles.cli.claude._process.hook_settings import load_settings

            settings = load_settings(options["settings"], rt.cwd)
        permissions = (settings or {}).get("permissions")
        default_mode = permissions.get("defaultMode") if isinstance(permissions, dict) else None
        check_root(options, rt.env, posix.getuid(), default_mode)
        files = _settings_files(rt, options)
        if files or settings:
            from stuntset.doubles.cli.claude._process.hook_settings import load_hooks

            hooks = load_hooks(rt, files, settings)
        mcp_servers: dict[str, Any] = {}
        if "mcp_config" in options:
            from stuntset.doubles.cli.claude._process.mcp import load_servers

            mcp_servers = load_servers(options["mcp_config"], rt.cwd, rt.loads)
    except Exception as error:  # ArgumentError, SettingsError, McpConfigError: the CLI's text
        rt.settle()
        rt.stderr(f"{error}\n")
        rt.exit(1)
        return
    startup_delay = rt.plan.get("startup_delay") or 0.0
    if startup_delay:
        rt.sleep(startup_delay, scaled=False)
    session = Session(rt, options)
    if mcp_servers:
        from stuntset.doubles.cli.claude._process.mcp import init_report

        session.mcp_servers, session.tools = init_report(mcp_servers, session.tools, rt.env)
    else:  # no server given: no MCP tool (the real CLI answers "No such tool available")
        session.tools = [t for t in session.tools if not t.startswith("mcp__")]
    session.open()
    if hooks:
        from stuntset.doubles.cli.claude._process.hooks import Hooks, session_event

        include = bool(options.get("include_hook_events"))
        session.settings_hooks = Hooks(rt, hooks, include)
        resumed = options.get("resume") or options.get("continue")
        session_event(session, "SessionStart", "resume" if resumed else "startup", None)
    if options.get("input_format") == "stream-json":
        session.serve()
        _session_end(session)
        return
    prompt = options.get("prompt")
    if not isinstance(prompt, str):
        data = b""
        while chunk := posix.read(0, 65536):
            data += chunk
        prompt = data.decode("utf-8", "replace").strip()
    if not prompt:
        rt.stderr(
            "Error: Input must be provided either through stdin or as a prompt argument when "
            "using --print\n"
        )
        rt.exit(1)
    session.play({"type": "user", "message": {"role": "user", "content": prompt}})
    result = next((m for m in reversed(session.collected) if m.get("type") == "result"), None)
    if result is not None and not session.streaming:
        if session.options.get("output_format") == "json":
            rt.write_bytes(rt.utf8(rt.dumps(result) + "\n"))
        else:
            rt.write_bytes(rt.utf8(str(result.get("result") or "") + "\n"))
    _session_end(session)


def _session_end(session: Session) -> None:
    """``SessionEnd`` hooks, as the process ends (observed: ``reason: "other"``)."""
    if session.settings_hooks is not None:
        from stuntset.doubles.cli.claude._process.hooks import session_event

        session_event(session, "SessionEnd", "other", session.prompt_id)
