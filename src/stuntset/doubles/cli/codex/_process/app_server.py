"""``codex app-server --listen stdio://``: Codex's JSON-RPC server, as ``openai-codex`` drives it.

Runs in the fake process (built-ins only, see ``_runtime``). This module is the command line
and the JSON-RPC loop (reading, dispatching, writing, server → client requests); what each
method does is ``app_methods``, a turn's notifications ``app_turn``. What codex-cli 0.163.0 does
(protocols.md §6.6; shapes captured from the real binary and checked against the SDK's
generated models):

* One JSON object per line both ways, JSON-RPC without the ``"jsonrpc"`` member. Requests
  are answered in order; a line that is not a JSON-RPC message is logged on stderr and
  ignored; an unknown method gets ``-32600`` "Invalid request: unknown variant …"; anything
  before ``initialize`` gets ``-32600`` "Not initialized"; a second ``initialize``
  "Already initialized"; a request without ``params`` "Invalid request: missing field
  `params`". Methods the real server has but the double does not simulate get ``-32601``.
* ``initialize`` → ``userAgent`` ``<client name>/0.163.0 (…)``, ``codexHome``, platform;
  ``thread/start`` → the thread and its settings, then ``thread/started``;
  ``thread/resume`` (a thread an earlier invocation of the double made; unknown: ``-32600``
  "no rollout found for thread id …"), ``thread/read``, ``thread/list``, ``model/list``,
  ``account/read``.
* ``turn/start`` → ``{"turn": {… "status": "inProgress"}}``, then ``thread/status/changed``
  (active), ``turn/started``, the user message item, the scripted items with their deltas,
  after each model response ``thread/tokenUsage/updated`` and ``account/rateLimits/updated``
  (the turn's scripted rate limits), ``thread/readState/changed`` (a durable thread that
  showed an item), ``thread/status/changed`` (idle) and ``turn/completed`` (``completed``,
  listing the turn's last agent message | ``failed`` with ``turn.error`` | ``interrupted``).
  A 5xx is retried as codex retries it (the settings of the model provider in use, from
  config.toml and ``-c``: ``config``), each retry answered by the next scripted turn. Refused
  (``-32600``/``-32602``, see ``app_methods.turn_start``) where the real one refuses it; on a thread
  whose turn runs, the input is steered into that turn.
* ``turn/interrupt`` (the active turn; another id: "expected active turn id X but found Y")
  answers ``{}`` and ends the turn as ``interrupted``; ``turn/steer`` drops the model response
  streaming (or waits for the tools of one that called them), shows the input and plays the
  next scripted turn as the follow-up request (``app_turn``).
* Approvals are server-initiated requests answered by the client:
  ``item/commandExecution/requestApproval`` / ``item/fileChange/requestApproval`` (with the
  thread's approval policy ``never`` they are declined unasked; with the ``auto_review``
  reviewer — the SDK's default ``ApprovalMode`` — the automatic reviewer approves them, shown
  as ``item/autoApprovalReview/started``/``completed``), then ``serverRequest/resolved``.
  ``item/tool/requestUserInput`` asks questions the same way.
* A ``-c`` option setting a table for a built-in provider id ends the server at once (exit
  1); a config.toml codex cannot use is reported (stderr, then ``configWarning`` after
  ``initialize``) and left out.
* Exit at stdin EOF, after the turn in progress.
"""

from __future__ import annotations

import posix

from stuntset.doubles.cli.codex._process.app_methods import HANDLERS, thread_object
from stuntset.doubles.cli.codex._process.app_turn import Interrupted, Turn
from stuntset.doubles.cli.codex._process.common import (
    COMMON_OPTIONS,
    DEFAULT_REQUEST_RETRIES,
    DEFAULT_STREAM_RETRIES,
    ArgumentError,
    Clock,
    Threads,
    config_matters,
    parse_options,
)
from stuntset.doubles.cli.codex._process.requests import (
    KNOWN,
    KNOWN_METHODS,
    NO_PARAMS,
    RpcError,
    invalid,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli._runtime import Runtime
    from stuntset.doubles.cli.codex._process.app_state import Queued
    from stuntset.doubles.cli.codex._process.config import Settings

__all__ = ["KNOWN_METHODS", "run_app_server"]

_USAGE = "Usage: codex app-server [OPTIONS] [COMMAND]"
_OPTIONS: dict[str, tuple[str, bool, str, tuple[str, ...]]] = {
    **COMMON_OPTIONS,
    "--listen": ("listen", True, "URL", ()),
    "--stdio": ("stdio", False, "", ()),
    "--code-mode-host": ("code_mode_host", True, "URL", ()),
    "--analytics-default-enabled": ("analytics", False, "", ()),
}
_HELP = """[experimental] Run the app server or related tooling

Usage: codex app-server [OPTIONS] [COMMAND]

Options:
      --listen <URL>  Transport endpoint URL. Supported values: `stdio://` (default), ...

(stuntset fake codex: only --listen stdio:// is simulated)
"""


class Server:
    """One app-server process: the JSON-RPC loop, its threads and the turn queue (the
    methods that use them are ``app_methods``; the turns play in ``app_turn``)."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.initialized = False
        self.client_name = "unknown"
        self.threads = Threads(rt)
        self.loaded: dict[str, dict[str, Any]] = {}
        self.settings: dict[str, dict[str, Any]] = {}
        #: Started turns waiting to play.
        self.queue: list[Queued] = []
        self.active: Turn | None = None
        self.responses: dict[Any, dict[str, Any]] = {}
        self.waiting: set[Any] = set()
        self.next_request = 0
        self.clock = Clock()
        #: codex's ``request_max_retries`` and ``stream_max_retries`` (its defaults, unless
        #: the configuration sets them for the model provider in use).
        self.retries = (DEFAULT_REQUEST_RETRIES, DEFAULT_STREAM_RETRIES)
        #: ``configWarning`` params to send after ``initialize`` (a config.toml codex ignores).
        self.config_warning: dict[str, Any] | None = None

    # --- output ---------------------------------------------------------------------------

    def write(self, message: dict[str, Any]) -> None:
        self.rt.send(message)
        if self.active is not None:
            self.pump(0.0)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.write({"method": method, "params": params, "emittedAtMs": self.clock.tick()})

    def respond(self, request_id: Any, result: dict[str, Any]) -> None:
        self.rt.send({"id": request_id, "result": result})

    def error(self, request_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.rt.send({"error": error, "id": request_id})

    # --- input ----------------------------------------------------------------------------

    def serve(self) -> None:
        while True:
            while self.queue:
                queued = self.queue.pop(0)
                self.active = Turn(self, queued)
                try:
                    self.active.play()
                finally:
                    self.active = None
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
        except ValueError as error:
            self.rt.journal.write("stdin", raw=text)
            self.log_bad_line(str(error))
            return
        if not isinstance(message, dict):
            self.rt.journal.write("stdin", raw=text)
            self.log_bad_line("data did not match any variant of untagged enum JSONRPCMessage")
            return
        self.rt.journal.write("stdin", message=message)
        if "method" in message and "id" in message:
            self.request(message)
        elif "id" in message:
            if message["id"] in self.waiting:
                self.responses[message["id"]] = message
            else:
                self.rt.journal.write("ignored", reason="response to no server request")
        elif "method" not in message:
            self.log_bad_line("data did not match any variant of untagged enum JSONRPCMessage")

    def log_bad_line(self, why: str) -> None:
        self.rt.stderr(
            f"ERROR codex_app_server_transport::transport: Failed to deserialize "
            f"JSONRPCMessage: {why}\n"
        )

    def request(self, message: dict[str, Any]) -> None:
        request_id = message["id"]
        method = message["method"]
        try:
            if not isinstance(method, str) or method not in KNOWN:
                expected = ", ".join(f"`{m}`" for m in KNOWN_METHODS)
                raise invalid(
                    f"Invalid request: unknown variant `{method}`, expected one of {expected}"
                )
            params = message.get("params")
            if params is None and method not in NO_PARAMS:
                raise invalid("Invalid request: missing field `params`")
            params = params if isinstance(params, dict) else {}
            if method == "initialize":
                result = self.initialize(params)
            elif not self.initialized:
                raise invalid("Not initialized")
            else:
                handler = HANDLERS.get(method)
                if handler is None:
                    raise RpcError(
                        -32601, f"stuntset fake codex does not simulate the method `{method}`"
                    )
                result = handler(self, params)
        except RpcError as error:
            self.error(request_id, error.code, error.message, error.data)
            return
        self.respond(request_id, result)
        if method == "initialize" and self.config_warning is not None:
            self.notify("configWarning", self.config_warning)
        if method == "thread/start":
            self.notify("thread/started", {"thread": thread_object(self, result["thread"]["id"])})

    def server_request(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """A server → client request; blocks (handling other stdin) until its answer. ``None``
        if stdin closes first."""
        request_id = self.next_request
        self.next_request += 1
        self.waiting.add(request_id)
        self.write({"id": request_id, "method": method, "params": params})
        try:
            while request_id not in self.responses:
                if self.active is not None and self.active.interrupted:
                    raise Interrupted
                if not self.pump(None):
                    return None
            return self.responses.pop(request_id)
        finally:
            self.waiting.discard(request_id)

    # --- the handshake (the other methods: ``app_methods``) --------------------------------

    def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.initialized:
            raise invalid("Already initialized")
        info = params.get("clientInfo")
        info = info if isinstance(info, dict) else {}
        self.client_name = str(info.get("name") or "unknown")
        client_version = str(info.get("version") or "")
        self.initialized = True
        system = posix.uname().sysname
        home = self.rt.env.get("CODEX_HOME") or (self.rt.env.get("HOME", "") + "/.codex")
        return {
            "userAgent": f"{self.client_name}/{self.rt.plan['version']} (stuntset fake codex; "
            f"{system}) ({self.client_name}; {client_version})",
            "codexHome": home,
            "platformFamily": "windows" if system.startswith("Windows") else "unix",
            "platformOs": {"Linux": "linux", "Darwin": "macos"}.get(system, system.lower()),
        }


def run_app_server(rt: Runtime, top: dict[str, Any], argv: list[str]) -> None:
    """``codex app-server …``."""
    try:
        options, _, command, _ = parse_options(
            argv,
            _OPTIONS,
            _USAGE,
            stop_at=frozenset({"daemon", "proxy", "generate-ts", "generate-json-schema", "help"}),
            max_positionals=0,
        )
    except ArgumentError as error:
        rt.stderr(str(error))
        rt.exit(2)
        return
    if options.get("help") or top.get("help") or command == "help":
        rt.write_bytes(_HELP.encode())
        return
    if command is not None:
        rt.stderr(f"stuntset fake codex: `codex app-server {command}` is not simulated\n")
        rt.exit(2)
    listen = options.get("listen", "stdio://")
    if listen not in ("stdio://",):
        valid = listen.startswith(("unix://", "ws://")) or listen == "off"
        if not valid:
            rt.stderr(
                f"error: invalid value '{listen}' for '--listen <URL>': unsupported --listen URL "
                f"`{listen}`; expected `stdio://`, `unix://`, `unix://PATH`, `ws://IP:PORT`, or "
                f"`off`\n\nFor more information, try '--help'.\n"
            )
            rt.exit(2)
        rt.stderr(f"stuntset fake codex: only --listen stdio:// is simulated, not {listen}\n")
        rt.exit(2)
    startup_delay = rt.plan.get("startup_delay") or 0.0
    if startup_delay:
        rt.sleep(startup_delay, scaled=False)
    server = Server(rt)
    configs = [*top.get("config", []), *options.get("config", [])]
    if config_matters(rt.env, configs):
        from stuntset.doubles.cli.codex._process.config import load

        settings = load(rt.env, configs, profile=top.get("profile"))
        if settings.option_problem is not None:
            rt.stderr(f"Error: {settings.option_problem}")
            rt.exit(1)
        server.retries = settings.retries
        server.config_warning = _config_warning(rt, settings)
    server.serve()


def _config_warning(rt: Runtime, settings: Settings) -> dict[str, Any] | None:
    """A config.toml codex cannot use: it logs it, goes on without it and tells the client
    after ``initialize`` (observed, 0.163.0: ``configWarning`` "Invalid configuration; using
    defaults.", the place and the range of what is wrong)."""
    if settings.file_problem is None:
        return None
    message, line, column, size = settings.file_problem
    summary = "Invalid configuration; using defaults."
    details = f"{settings.path}:{line}:{column}: {message}"
    rt.stderr(f"ERROR codex_app_server: {summary} {details}\n")
    return {
        "summary": summary,
        "details": details,
        "path": settings.path,
        "range": {
            "start": {"line": line, "column": column},
            "end": {"line": line, "column": column + size - 1},
        },
    }
