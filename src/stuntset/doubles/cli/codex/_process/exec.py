"""``codex exec``: one non-interactive turn, as JSONL events (``--json``/``--experimental-json``).

Runs in the fake process (built-ins only, see ``_runtime``). What codex-cli 0.163.0 does
(protocols.md §6.1–6.4, checked against the real binary):

* ``codex exec [OPTIONS] [PROMPT]`` and ``codex exec [OPTIONS] resume [OPTIONS] [ID|--last]
  [PROMPT]``; the prompt is the positional argument, or stdin when it is absent or ``-``
  ("Reading prompt from stdin..." on stderr); with both, stdin is appended as a ``<stdin>``
  block. An empty prompt: "No prompt provided via stdin.", exit 1.
* Outside a git repository without ``--skip-git-repo-check``: "Not inside a trusted
  directory and --skip-git-repo-check was not specified.", exit 1.
* A turn the server refuses (input over 1,048,576 characters, or a scripted refusal):
  ``thread.started``, then ``Error: turn/start: turn/start failed: <message> (code N)[,
  data: {…}]`` on stderr, exit 1 (observed with a too-large prompt).
* ``resume <unknown id>``: nothing on stdout, the app-server error on stderr, exit 1. A
  resumed run reports the same ``thread_id``; item ids restart at ``item_0``.
* stdout carries only JSONL: ``thread.started``, ``turn.started``, ``item.*``, then
  ``turn.completed`` (usage: the thread's running total) and exit 0, or ``error`` +
  ``turn.failed`` and exit 1.
* A 5xx from the model API is retried as the app-server retries it (``common.Retries``):
  ``request_max_retries`` times silently, then each of ``stream_max_retries`` attempts
  announced by an ``error`` line ``Reconnecting... n/m (<why>)``; the next scripted turn
  answers each retry, and once they are spent the turn fails with the last error. The two
  settings are the model provider's in ``config.toml`` and ``-c`` options (``config``); a
  config.toml the fake cannot parse, or a table for a built-in provider id, is refused as
  codex refuses it: "Error loading config.toml: …" on stderr, exit 1, before the prompt is
  read. Without ``--json`` the last agent message goes to stdout and
  progress to stderr. ``-o FILE`` gets the last agent message.
* Unknown flags and bad values: clap's error text on stderr, exit 2.
"""

from __future__ import annotations

import posix

from stuntset.doubles.cli.codex._process.common import (
    COMMON_OPTIONS,
    DEFAULT_REQUEST_RETRIES,
    DEFAULT_STREAM_RETRIES,
    HIGH_DEMAND,
    ArgumentError,
    Clock,
    Retries,
    Threads,
    choose_turn,
    config_matters,
    input_refusal,
    parse_options,
    refusal_text,
    scripted_refusal,
    text_of,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli._runtime import Runtime

__all__ = ["run_exec"]

_USAGE = "Usage: codex exec [OPTIONS] [PROMPT]\n       codex exec [OPTIONS] <COMMAND> [ARGS]"
_RESUME_USAGE = "Usage: codex exec resume [OPTIONS] [SESSION_ID] [PROMPT]"

_SANDBOXES = ("read-only", "workspace-write", "danger-full-access")
_EXEC_OPTIONS: dict[str, tuple[str, bool, str, tuple[str, ...]]] = {
    **COMMON_OPTIONS,
    "-i": ("image", True, "FILE", ()),
    "--image": ("image", True, "FILE", ()),
    "-m": ("model", True, "MODEL", ()),
    "--model": ("model", True, "MODEL", ()),
    "--oss": ("oss", False, "", ()),
    "--local-provider": ("local_provider", True, "OSS_PROVIDER", ()),
    "-p": ("profile", True, "CONFIG_PROFILE_V2", ()),
    "--profile": ("profile", True, "CONFIG_PROFILE_V2", ()),
    "-s": ("sandbox", True, "SANDBOX_MODE", _SANDBOXES),
    "--sandbox": ("sandbox", True, "SANDBOX_MODE", _SANDBOXES),
    "--approve-for-me": ("approve_for_me", False, "", ()),
    "--dangerously-bypass-approvals-and-sandbox": ("yolo", False, "", ()),
    "--dangerously-bypass-hook-trust": ("bypass_hook_trust", False, "", ()),
    "-C": ("cd", True, "DIR", ()),
    "--cd": ("cd", True, "DIR", ()),
    "--worktree": ("worktree", False, "", ()),
    "--add-dir": ("add_dir", True, "DIR", ()),
    "--thread-source": ("thread_source", True, "SOURCE", ()),
    "--cyber-access-program": (
        "cyber_access_program",
        True,
        "PROGRAM",
        ("standard", "daybreak_blue", "daybreak_red"),
    ),
    "--skip-git-repo-check": ("skip_git_repo_check", False, "", ()),
    "--ephemeral": ("ephemeral", False, "", ()),
    "--ignore-user-config": ("ignore_user_config", False, "", ()),
    "--ignore-rules": ("ignore_rules", False, "", ()),
    "--output-schema": ("output_schema", True, "FILE", ()),
    "--color": ("color", True, "COLOR", ("always", "never", "auto")),
    "--json": ("json", False, "", ()),
    "--experimental-json": ("json", False, "", ()),
    "-o": ("output_last_message", True, "FILE", ()),
    "--output-last-message": ("output_last_message", True, "FILE", ()),
}
_RESUME_OPTIONS = {
    **_EXEC_OPTIONS,
    "--last": ("last", False, "", ()),
    "--all": ("all", False, "", ()),
}

_HELP = """Run Codex non-interactively

Usage: codex exec [OPTIONS] [PROMPT]
       codex exec [OPTIONS] <COMMAND> [ARGS]

Commands:
  resume  Resume a previous session by id or pick the most recent with --last

Options:
      --json                   Print events to stdout as JSONL
      --skip-git-repo-check    Allow running Codex outside a Git repository
  -o, --output-last-message <FILE>
  ...

(stuntset fake codex: exec --json / --experimental-json and exec resume are simulated)
"""


class _Done(Exception):
    """The turn has ended (its terminal line, if any, is written)."""


class _Retry(Exception):
    """A 5xx the real codex retries: the next scripted turn answers the retried request."""


def _in_git_repo(directory: str) -> bool:
    path = directory.rstrip("/") or "/"
    while True:
        try:
            posix.stat(path + "/.git")
            return True
        except OSError:
            pass
        if path in ("", "/"):
            return False
        path = path.rsplit("/", 1)[0] or "/"


def _read_stdin() -> str:
    data = b""
    while chunk := posix.read(0, 65536):
        data += chunk
    return data.decode("utf-8", "replace")


class ExecRun:
    """One ``codex exec`` invocation: options, the thread, and the turn's JSONL."""

    def __init__(self, rt: Runtime, options: dict[str, Any], retries: tuple[int, int]) -> None:
        self.rt = rt
        self.options = options
        self.json = bool(options.get("json"))
        self.model: str = options.get("model") or rt.plan["model"]
        self.items = 0
        self.open: dict[str, dict[str, Any]] = {}
        self.waiting: list[str] = []
        self.last_message: str | None = None
        self.thread: dict[str, Any] = {}
        self.clock = Clock()
        #: How codex retries the scripted turn's closing 5xx (None: it does not), and how far
        #: it has got retrying the current model request.
        self.retry: dict[str, Any] | None = None
        self.retries = Retries(retries)

    # --- output ---------------------------------------------------------------------------

    def emit(self, event: dict[str, Any]) -> None:
        if self.json:
            self.rt.send(event)
            return
        self.rt.journal.write("event", message=event)
        kind = event["type"]
        item = event.get("item") or {}
        if kind == "item.completed" and item.get("type") == "agent_message":
            self.rt.stderr(f"codex\n{item['text']}\n")
        elif kind == "item.started" and item.get("type") == "command_execution":
            self.rt.stderr(f"exec\n{item['command']}\n")
        elif kind == "turn.failed":
            self.rt.stderr(f"ERROR: {event['error']['message']}\n")

    def new_item(self, kind: str, **fields: Any) -> dict[str, Any]:
        item = {"id": f"item_{self.items}", "type": kind, **fields}
        self.items += 1
        return item

    # --- the turn -------------------------------------------------------------------------

    def play(self, prompt: str) -> None:
        rt = self.rt
        self.emit({"type": "thread.started", "thread_id": self.thread["id"]})
        refused = input_refusal(len(prompt))
        turn, error = (None, None) if refused else choose_turn(rt, prompt, self.model)
        refused = refused or scripted_refusal(turn)
        if refused is not None:
            Threads(rt).save(self.thread)
            rt.stderr(refusal_text("turn/start", refused))
            rt.exit(1)
        self.emit({"type": "turn.started"})
        self.thread["turns"] += 1
        if not self.thread["preview"]:
            self.thread["preview"] = prompt[:200]
        try:
            if turn is None:
                rt.stderr(f"stuntset: {error}\n")
                self.fail(str(error))
            while turn is not None:
                turn = self.play_turn(turn, prompt)
            self.complete()
        except _Done:
            pass
        finally:
            Threads(rt).save(self.thread)
        if self.last_message is not None and self.options.get("output_last_message"):
            fd = posix.open(
                self.options["output_last_message"],
                posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC,
                0o644,
            )
            posix.write(fd, rt.utf8(self.last_message))
            posix.close(fd)
        if not self.json and self.last_message is not None and rt.exit_code == 0:
            rt.write_bytes(rt.utf8(self.last_message + "\n"))

    def play_turn(self, turn: dict[str, Any], prompt: str) -> dict[str, Any] | None:
        """Play one scripted turn's ops; the scripted turn answering the retry of its closing
        5xx (chosen as the model double chooses, by the prompt), or None when it is done."""
        self.retry = turn.get("retry")
        before = list(self.thread["usage"])
        try:
            for op in exec_ops(turn["ops"]):
                self.op(op)
        except _Retry:
            self.thread["usage"] = before  # the failed response reported nothing
            chosen, error = choose_turn(self.rt, prompt, self.model)
            if chosen is None:
                # the model double's 500 for a request no turn answers, which codex retries
                # silently and then reports (observed)
                self.rt.stderr(f"stuntset: {error}\n")
                self.fail(HIGH_DEMAND)
            return chosen
        return None

    def retried(self, message: str) -> bool:
        """Whether codex retries the request that just failed with a 5xx (``Retries``): an
        announced retry is an ``error`` line ``Reconnecting... n/m (<why>)``. The fake's
        clock moves on by codex's backoff; nothing waits."""
        assert self.retry is not None
        retry = self.retries.next(self.retry.get("streams", False))
        if retry is None:
            return False
        backoff, notice = retry
        if notice is not None:
            why = self.retry["details"] or message
            self.emit({"type": "error", "message": f"{notice} ({why})"})
        self.clock.advance(backoff)
        return True

    def op(self, op: tuple[Any, ...]) -> None:
        kind = op[0]
        rt = self.rt
        if kind == "text":
            _, text, deltas, interval = op
            self.pause(interval * max(0, len(deltas) - 1))
            self.last_message = text
            self.emit({"type": "item.completed", "item": self.new_item("agent_message", text=text)})
        elif kind == "reasoning":
            _, text, deltas, interval = op
            self.pause(interval * max(0, len(deltas) - 1))
            if text:
                item = self.new_item("reasoning", text=text)
                self.emit({"type": "item.completed", "item": item})
        elif kind == "tool":
            self.start_tool(op)
        elif kind == "result":
            self.retries.reset()  # the tool results go back: that model response completed
            _, output, is_error, call_id = op
            target = call_id or (self.waiting[0] if self.waiting else None)
            if target is not None and target in self.open:
                self.finish_tool(target, output, bool(is_error))
        elif kind == "usage":
            usage = self.thread["usage"]
            usage[0] += op[1]
            usage[2] += op[2]
        elif kind == "delay":
            self.pause(op[1])
        else:
            self.fault(op)
        rt.check_sigterm()

    def pause(self, seconds: float) -> None:
        if seconds > 0:
            self.clock.advance(seconds)
            self.rt.sleep(seconds)

    def start_tool(self, op: tuple[Any, ...]) -> None:
        _, call_id, kind, _name, tool_input, details = op
        key = call_id or f"call-{len(self.open) + 1}"
        if kind == "command":
            item = self.new_item(
                "command_execution",
                command=details["command"],
                aggregated_output="",
                exit_code=None,
                status="in_progress",
            )
        elif kind == "file_change":
            changes = [{"path": c["path"], "kind": c["kind"]} for c in details["changes"]]
            item = self.new_item("file_change", changes=changes, status="in_progress")
        elif kind == "web_search":
            query = details["query"]
            item = self.new_item(
                "web_search", query=query, action={"type": "search", "query": query}
            )
        elif kind == "todo":
            plan = next((i for i in self.open.values() if i["type"] == "todo_list"), None)
            if plan is not None:  # one plan per turn: a change is an update
                plan["items"] = details["items"]
                self.waiting.append(key)
                self.open[key] = plan
                self.emit({"type": "item.updated", "item": dict(plan)})
                return
            item = self.new_item("todo_list", items=details["items"])
        else:
            item = self.new_item(
                "mcp_tool_call",
                server=details["server"],
                tool=details["tool"],
                arguments=tool_input,
                result=None,
                error=None,
                status="in_progress",
            )
        self.open[key] = item
        self.waiting.append(key)
        self.emit({"type": "item.started", "item": dict(item)})

    def finish_tool(self, key: str, output: Any, is_error: bool) -> None:
        item = self.open[key]
        self.waiting.remove(key)
        kind = item["type"]
        if kind == "todo_list":
            return  # a plan stays open until the turn ends
        del self.open[key]
        status = "failed" if is_error else "completed"
        if kind == "command_execution":
            item.update(aggregated_output=text_of(output), exit_code=1 if is_error else 0)
            item["status"] = status
        elif kind == "file_change":
            item["status"] = status
        elif kind == "mcp_tool_call":
            if is_error:
                item["error"] = {"message": text_of(output)}
            else:
                content = [{"type": "text", "text": text_of(output)}]
                item["result"] = {"content": content, "structured_content": None}
            item["status"] = status
        self.emit({"type": "item.completed", "item": item})

    def complete(self) -> None:
        done: set[str] = set()
        for key, item in list(self.open.items()):
            del self.open[key]
            if item["id"] in done:
                continue
            done.add(item["id"])
            if item["type"] == "command_execution":
                item.update(exit_code=0, status="completed")
            elif "status" in item:
                item["status"] = "completed"
            self.emit({"type": "item.completed", "item": item})
        Threads(self.rt).save(self.thread)  # before the client sees the end (and kills us)
        self.emit({"type": "turn.completed", "usage": self.usage()})
        self.rt.exit_code = 0

    def usage(self) -> dict[str, int]:
        input_tokens, cached, output_tokens, reasoning = self.thread["usage"]
        return {
            "input_tokens": input_tokens,
            "cached_input_tokens": cached,
            "cache_write_input_tokens": 0,
            "output_tokens": output_tokens,
            "reasoning_output_tokens": reasoning,
        }

    def fail(self, message: str) -> None:
        Threads(self.rt).save(self.thread)
        self.emit({"type": "error", "message": message})
        self.emit({"type": "turn.failed", "error": {"message": message}})
        self.rt.exit_code = 1
        raise _Done

    def fault(self, op: tuple[Any, ...]) -> None:
        rt = self.rt
        kind = op[0]
        if kind == "api_error":
            _, message, _info, _details = op
            if self.retry is not None and self.retried(message):
                raise _Retry
            self.fail(message)
        if kind == "ignored":  # the model's out-of-order content: codex drops it
            return
        rt.exit_code = 1
        if kind == "cut":
            line = rt.dumps({"type": "turn.completed", "usage": self.usage()}) + "\n"
            rt.journal.write("cut", partial=line[: len(line) // 2])
            rt.write_bytes(line[: len(line) // 2].encode())
            Threads(rt).save(self.thread)
            rt.exit(0 if op[1] else 1)
        elif kind == "malformed":
            # the CLI itself breaks, then exits: a client that skips the line sees the end
            rt.journal.write("malformed", text=op[1])
            rt.write_bytes((op[1] + "\n").encode())
            Threads(rt).save(self.thread)
            rt.exit(1)
        elif kind == "garbage":
            rt.journal.write("garbage", data=op[1].decode("utf-8", "replace"))
            rt.write_bytes(op[1])
            Threads(rt).save(self.thread)
            rt.exit(1)
        elif kind == "out_of_order":
            never = {"id": "item_999", "type": "todo_list", "items": []}
            self.emit({"type": "item.updated", "item": never})
            self.emit({"type": "turn.completed", "usage": self.usage()})
            after = self.new_item("agent_message", text="a message after the turn ended")
            self.emit({"type": "item.completed", "item": after})
            Threads(rt).save(self.thread)
            rt.exit(1)
        elif kind == "stall":
            rt.journal.write("stall")
            rt.sleep(1e9, scaled=False)
        elif kind == "exit":
            _, code, stderr = op
            if stderr:
                rt.stderr(stderr if stderr.endswith("\n") else stderr + "\n")
            Threads(rt).save(self.thread)
            rt.exit(code)
        raise _Done


def _parse(argv: list[str]) -> tuple[dict[str, Any], list[str], bool]:
    """(options, positionals, resume?) for ``exec`` and ``exec resume``."""
    options, positionals, command, rest = parse_options(
        argv, _EXEC_OPTIONS, _USAGE, stop_at=frozenset({"resume", "fork", "review", "help"})
    )
    if command is None:
        return options, positionals, False
    if command != "resume":
        raise ArgumentError(
            f"stuntset fake codex: `codex exec {command}` is not simulated\n"
            if command != "help"
            else ""
        )
    more, positionals, _, _ = parse_options(rest, _RESUME_OPTIONS, _RESUME_USAGE, max_positionals=2)
    for name, value in more.items():
        if isinstance(value, list):
            options.setdefault(name, []).extend(value)
        else:
            options[name] = value
    return options, positionals, True


def run_exec(rt: Runtime, top: dict[str, Any], argv: list[str]) -> None:
    """``codex exec …``."""
    try:
        options, positionals, resume = _parse(argv)
    except ArgumentError as error:
        if not str(error):
            rt.write_bytes(_HELP.encode())
            return
        rt.stderr(str(error))
        rt.exit(2)
        return
    for name, value in top.items():
        if isinstance(value, list):
            options[name] = value + options.get(name, [])
        else:
            options.setdefault(name, value)
    if options.get("help"):
        rt.write_bytes(_HELP.encode())
        return
    if options.get("version"):
        rt.write_bytes(f"codex-cli-exec {rt.plan['version']}\n".encode())
        return
    startup_delay = rt.plan.get("startup_delay") or 0.0
    if startup_delay:
        rt.sleep(startup_delay, scaled=False)
    retries = (DEFAULT_REQUEST_RETRIES, DEFAULT_STREAM_RETRIES)
    configs = options.get("config") or []
    user_config = not options.get("ignore_user_config")
    if config_matters(rt.env, configs, user_config):
        from stuntset.doubles.cli.codex._process.config import load

        settings = load(rt.env, configs, profile=options.get("profile"), user_config=user_config)
        refusal = settings.exec_refusal
        if refusal is None and settings.option_problem is not None:
            refusal = f"Error loading config.toml: {settings.option_problem}"
        if refusal is not None:  # before the prompt is read (observed)
            rt.stderr(refusal)
            rt.exit(1)
        retries = settings.retries
    thread_id: str | None = None
    if resume and not options.get("last"):
        thread_id = positionals.pop(0) if positionals else None
        if thread_id is None:
            rt.stderr("Error: `codex exec resume` needs a session id or --last\n")
            rt.exit(1)
    prompt = positionals[0] if positionals else "-"
    if prompt == "-":
        rt.stderr("Reading prompt from stdin...\n")
        prompt = _read_stdin()
    elif not posix.isatty(0):
        extra = _read_stdin()
        if extra.strip():
            rt.stderr("Reading additional input from stdin...\n")
            prompt = f"{prompt}\n\n<stdin>\n{extra.rstrip()}\n</stdin>"
    cwd = options.get("cd") or posix.getcwd()
    if not options.get("skip_git_repo_check") and not _in_git_repo(cwd):
        rt.stderr("Not inside a trusted directory and --skip-git-repo-check was not specified.\n")
        rt.exit(1)
    if not prompt.strip():
        rt.stderr("No prompt provided via stdin.\n")
        rt.exit(1)
    run = ExecRun(rt, options, retries)
    threads = Threads(rt)
    thread = threads.get(thread_id) if resume else None
    if resume and thread is None and thread_id is not None:
        rt.stderr(
            f"Error: thread/resume: thread/resume failed: no rollout found for thread id "
            f"{thread_id} (code -32600)\n"
        )
        rt.exit(1)
    if thread is None:
        thread = threads.create(cwd, run.model, bool(options.get("ephemeral")))
    run.thread = thread
    run.play(prompt.strip())


#: The call id an unshown call's result goes under: no item has it, so the result only ends
#: the model response (``exec_ops``).
_UNSHOWN = "stuntset-unshown-call"


def exec_ops(ops: Any) -> list[Any]:
    """A turn's ops as ``codex exec`` plays them (observed, codex-cli 0.163 over the model
    double). Exec asks nobody (approval policy ``never``): a call the script asks approval
    for is one codex's safety check would ask about, and exec shows no item for it; its
    result only ends the model response. Exec cannot ask a question either: the model's
    ``request_user_input`` call is refused, nothing is shown, and the call ends the model
    response (the text after it is a new message)."""
    ops = list(ops)
    asked: set[int] = set()  # positions of the tool ops an approval is for
    for position, op in enumerate(ops):
        if op[0] != "approval":
            continue
        tools = [i for i in range(position) if ops[i][0] == "tool"]
        named = [i for i in tools if op[3] is not None and ops[i][1] == op[3]]
        if named or tools:
            asked.add((named or tools)[-1])
    played: list[Any] = []
    waiting: list[tuple[Any, bool]] = []  # (call id, unshown) of calls awaiting results
    for position, op in enumerate(ops):
        kind = op[0]
        if kind == "tool":
            waiting.append((op[1], position in asked))
            if position in asked:
                continue
        elif kind == "result" and waiting and op[3] != _UNSHOWN:
            ids = [w for w in waiting if op[3] is not None and w[0] == op[3]]
            call = (ids or waiting)[0]
            waiting.remove(call)
            if call[1]:
                op = ("result", op[1], op[2], _UNSHOWN)
        elif kind == "approval":
            continue
        elif kind == "ask":  # the refused call's output ends the model response
            op = ("result", None, True, _UNSHOWN)
        played.append(op)
    return played
