"""Claude Code hooks in the fake ``claude``: settings files, matchers, the four hook types.

Runs in the fake process (built-ins only, see ``_runtime``): ``posix_spawn`` and ``select`` for
command hooks; ``re`` is imported only when a matcher is a regular expression, ``http.client``
only when an ``http`` hook runs. Loaded only when the session has hooks (settings files, or
hooks the SDK registered in ``initialize``). Every rule here was observed with the bundled
Claude Code 2.1.332 over the model double; docs/protocol-reference.md ("Claude hooks") has the
shapes and what is not simulated.

* Settings: ``$CLAUDE_CONFIG_DIR/settings.json`` (else ``$HOME/.claude/settings.json``, "user"),
  ``<cwd>/.claude/settings.json`` ("project"), ``<cwd>/.claude/settings.local.json`` ("local"),
  as ``--setting-sources`` selects (all three without it), then ``--settings``. Hooks of all
  of them run, in that order; an identical hook (same type and command, prompt or URL) runs
  once. A file that is not JSON, or whose ``hooks`` fail the CLI's schema, adds no hooks (no
  message); ``disableAllHooks: true`` anywhere turns every settings hook off.
* Matchers: missing, ``""`` or ``"*"`` match everything; names (letters, digits, ``_``, ``|``,
  and for tool events ``,``, ``-`` and spaces) are an exact list; anything else is an
  unanchored JavaScript regular expression (invalid: matches nothing). Tool events match the
  tool name, ``SessionStart`` its source, ``SessionEnd`` its reason; ``UserPromptSubmit`` and
  ``Stop`` ignore the matcher.
* Types: ``command`` (``/bin/sh -c``, the input as JSON on stdin, killed after ``timeout``
  seconds: ``outcome: "cancelled"``, ``exit_code: 1``), ``http`` (the input POSTed as JSON; the
  status is the ``exit_code``), ``prompt`` and ``agent`` (the model is asked: here the next
  scripted turn answers, see ``model_answer``). ``mcp_tool``, and the fields ``if``, ``async``,
  ``asyncRewake``, ``once``, ``args``, a ``shell`` other than bash and ``onFailure: "block"``
  are refused at start-up (``hook_settings.SettingsError``) rather than run wrongly.
* Only ``command`` and ``http`` hooks write ``hook_started`` / ``hook_response`` (with
  ``--include-hook-events``, or always for ``SessionStart``); here every ``hook_started`` of an
  event first, then each response in the order configured (the real CLI writes responses as
  hooks finish). A ``PreToolUse`` hook that timed out or gave no usable answer (an HTTP error,
  a body or model answer that is not JSON) is followed by a ``hook_no_verdict`` warning.
"""

from __future__ import annotations

import posix
import time

from stuntset.doubles.cli._runtime import dumps, loads, utf8
from stuntset.doubles.cli.claude._process.common import HookTurnError, choose_turn
from stuntset.doubles.cli.claude._process.hook_settings import transcript_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from stuntset.doubles.cli._runtime import Ids, Runtime
    from stuntset.doubles.cli.claude._process.faces import SessionState, TurnState

__all__ = ["Hooks", "matches", "run_event", "session_event"]

#: Events whose matcher may list names with commas and spaces too.
_LIST_EVENTS = frozenset(
    [
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PermissionRequest",
        "PermissionDenied",
        "UserPromptExpansion",
        "SessionStart",
        "SessionEnd",
        "Setup",
        "PreCompact",
        "PostCompact",
        "PreModelSwitch",
        "PostModelSwitch",
        "Notification",
        "SubagentStart",
        "SubagentStop",
        "Elicitation",
        "ElicitationResult",
        "ConfigChange",
        "InstructionsLoaded",
        "DirectoryAdded",
        "PreSkillShellCommand",
    ]
)
#: Old tool names the CLI still accepts in a matcher, and the tool they mean now.
ALIASES = {
    "Task": "Agent",
    "KillShell": "TaskStop",
    "KillBash": "TaskStop",
    "ListPeers": "ListAgents",
    "Brief": "SendUserMessage",
    "ListMcpResources": "ListMcpResourcesTool",
    "ReadMcpResource": "ReadMcpResourceTool",
    "ReadMcpResourceDir": "ReadMcpResourceDirTool",
    "ProposeGoal": "SetGoal",
}
_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_|")
_LIST_NAME = _NAME | frozenset(", -")
#: Seconds a hook may run when it sets no ``timeout`` (Claude Code's documented defaults).
DEFAULT_TIMEOUT = {"command": 600.0, "http": 600.0, "prompt": 30.0, "agent": 60.0}
_NO_VERDICT = {
    True: "A hook didn't answer in time, so it didn't check this action.",
    False: "A hook gave no usable answer, so it didn't check this action.",
}


# --- matching -----------------------------------------------------------------------------------

_REGEX_CACHE: dict[str, Any] = {}


def _regex(pattern: str) -> Any:
    """``pattern`` compiled (JavaScript's named groups spelled as Python's); ``None`` if it
    does not compile, which the CLI treats as matching nothing."""
    if pattern not in _REGEX_CACHE:
        import re

        python = pattern.replace("(?<", "(?P<").replace("(?P<=", "(?<=").replace("(?P<!", "(?<!")
        try:
            _REGEX_CACHE[pattern] = re.compile(python)
        except re.error:
            _REGEX_CACHE[pattern] = None
    return _REGEX_CACHE[pattern]


def matches(event: str, pattern: Any, query: str | None) -> bool:
    """Whether a hook group's ``matcher`` selects an event whose match value is ``query``
    (the tool name, ``SessionStart``'s source…; ``None``: the event ignores matchers)."""
    if pattern is None or pattern in ("", "*") or query is None:
        return True
    pattern = str(pattern)
    listing = event in _LIST_EVENTS
    if all(c in (_LIST_NAME if listing else _NAME) for c in pattern):
        names = pattern.replace(",", "|") if listing else pattern
        wanted = {ALIASES.get(n.strip(), n.strip()) for n in names.split("|") if n.strip()}
        return ALIASES.get(query, query) in wanted
    regex = _regex(pattern)
    if regex is None:
        return False
    now = ALIASES.get(query, query)
    candidates = [query, *(old for old, new in ALIASES.items() if new == now)]
    return any(regex.search(name) is not None for name in candidates)


# --- running ------------------------------------------------------------------------------------


def _label(hook: dict[str, Any]) -> str:
    """How the CLI names a hook in messages: its command, prompt or URL."""
    return str(hook.get("command") or hook.get("prompt") or hook.get("url") or "")


class Result:
    """One hook's run: what it wrote and answered."""

    def __init__(self, hook: dict[str, Any]) -> None:
        self.hook = hook
        self.kind: str = hook["type"]
        #: what the CLI quotes in messages: the command, the prompt or the URL
        self.label = _label(hook)
        self.code: int | None = None
        self.stdout = ""
        self.stderr = ""
        self.output = ""
        self.outcome = "success"
        #: the parsed JSON answer (command stdout, HTTP body), or a model's {"ok", "reason"}
        self.answer: dict[str, Any] | None = None
        #: no verdict: "" (there is one), "timeout" or "unusable"
        self.missing = ""

    def response(self, hook_id: str, name: str, event: str) -> dict[str, Any]:
        message: dict[str, Any] = {
            "type": "system",
            "subtype": "hook_response",
            "hook_id": hook_id,
            "hook_name": name,
            "hook_event": event,
            "output": self.output,
            "stdout": self.stdout,
            "stderr": self.stderr,
        }
        if self.code is not None:
            message["exit_code"] = self.code
        message["outcome"] = self.outcome
        return message


def _json_object(text: str) -> dict[str, Any] | None:
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _interpolate(value: str, env: dict[str, str], allowed: Any) -> str:
    """``$VAR`` / ``${VAR}`` in a header value: the variable if ``allowedEnvVars`` lists it,
    else nothing (observed)."""
    names = allowed if isinstance(allowed, list) else []
    out = ""
    i = 0
    while i < len(value):
        if value[i] != "$":
            out += value[i]
            i += 1
            continue
        braced = value.startswith("${", i)
        j = i + (2 if braced else 1)
        k = j
        while k < len(value) and (value[k].isalnum() or value[k] == "_"):
            k += 1
        if k == j or (braced and not value.startswith("}", k)):
            out += value[i]
            i += 1
            continue
        name = value[j:k]
        out += env.get(name, "") if name in names else ""
        i = k + 1 if braced else k
    return out


class Hooks:
    """The settings hooks of one session, run for real."""

    def __init__(
        self, rt: Runtime, found: dict[str, list[tuple[str | None, dict[str, Any]]]], show: bool
    ) -> None:
        self.rt = rt
        self.found = found
        self.include_events = show

    def matching(self, event: str, query: str | None) -> list[dict[str, Any]]:
        """The hooks ``event`` runs for ``query``, each identical hook once."""
        chosen: list[dict[str, Any]] = []
        seen: set[tuple[str, str]] = set()  # identical: the same type and command/prompt/URL
        for pattern, hook in self.found.get(event) or ():
            if not matches(event, pattern, query):
                continue
            key = (hook["type"], _label(hook))
            if key not in seen:
                seen.add(key)
                chosen.append(hook)
        return chosen

    def run(
        self,
        event: str,
        name: str,
        hook_input: dict[str, Any],
        query: str | None,
        ids: Ids,
        send: Callable[[dict[str, Any]], None],
        ask: Callable[[dict[str, Any], dict[str, Any]], Result] | None = None,
    ) -> list[Result]:
        """Run ``event``'s matching hooks; ``send`` writes one message (the session's id and
        a uuid are filled in here); ``ask`` plays a prompt or agent hook."""
        hooks = self.matching(event, query)
        if not hooks:
            return []
        shown = self.include_events or event == "SessionStart"
        session_id = hook_input.get("session_id", "")

        def emit(message: dict[str, Any], always: bool = False) -> None:
            if shown or always:
                message.update(uuid=ids.uuid(), session_id=session_id)
                send(message)

        data = utf8(dumps(hook_input) + "\n")
        hook_ids = {i: ids.uuid() for i, h in enumerate(hooks) if h["type"] in ("command", "http")}
        spawned: dict[int, tuple[int, int, int, float]] = {}
        for i, hook in enumerate(hooks):
            if i in hook_ids:
                emit(
                    {
                        "type": "system",
                        "subtype": "hook_started",
                        "hook_id": hook_ids[i],
                        "hook_name": name,
                        "hook_event": event,
                    }
                )
            if hook["type"] == "command":
                spawned[i] = self.spawn(hook["command"], data)
        results = []
        for i, hook in enumerate(hooks):
            if i in spawned:
                result = self.collect(hook, *spawned[i])
            elif hook["type"] == "http":
                result = self.post(hook, hook_input)
            else:
                assert ask is not None, hook  # refused at start-up on other events
                result = ask(hook, hook_input)
            self.rt.journal.write(
                "hook",
                hook_event=event,
                type=result.kind,
                command=result.label,
                exit_code=result.code,
                outcome=result.outcome,
            )
            if i in hook_ids:
                emit(result.response(hook_ids[i], name, event))
            if result.missing and event == "PreToolUse":
                emit(
                    {
                        "type": "system",
                        "subtype": "informational",
                        "content": _NO_VERDICT[result.missing == "timeout"],
                        "level": "warning",
                        "tag": "hook_no_verdict",
                        "hook_no_verdict": {
                            "hook_event": event,
                            "tool_use_id": hook_input.get("tool_use_id"),
                            "timed_out": result.missing == "timeout",
                        },
                    },
                    always=True,
                )
            results.append(result)
        return results

    def spawn(self, command: str, data: bytes) -> tuple[int, int, int, float]:
        """Start a command hook in its own process group; (pid, stdout, stderr, started)."""
        env = dict(self.rt.env, CLAUDE_PROJECT_DIR=self.rt.cwd)
        stdin_r, stdin_w = posix.pipe()
        out_r, out_w = posix.pipe()
        err_r, err_w = posix.pipe()
        pid = posix.posix_spawn(
            "/bin/sh",
            ["/bin/sh", "-c", command],
            {key.encode(): value.encode() for key, value in env.items()},
            file_actions=[
                (posix.POSIX_SPAWN_DUP2, stdin_r, 0),
                (posix.POSIX_SPAWN_DUP2, out_w, 1),
                (posix.POSIX_SPAWN_DUP2, err_w, 2),
                *((posix.POSIX_SPAWN_CLOSE, fd) for fd in (stdin_w, out_r, err_r)),
            ],
            setsid=True,  # its own process group: a timeout kills what it started too
        )
        for fd in (stdin_r, out_w, err_w):
            posix.close(fd)
        try:  # noqa: SIM105 (no contextlib here: built-ins only)
            posix.write(stdin_w, data)  # hook input is small: it fits the pipe
        except OSError:
            pass  # the hook does not read its input
        posix.close(stdin_w)
        return pid, out_r, err_r, time.monotonic()

    def collect(
        self, hook: dict[str, Any], pid: int, out_r: int, err_r: int, started: float
    ) -> Result:
        """Read a command hook's output until it exits or its ``timeout`` passes (then kill
        its process group: ``outcome: "cancelled"``, ``exit_code: 1``, as observed)."""
        import select

        deadline = started + float(hook.get("timeout") or DEFAULT_TIMEOUT["command"])
        chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
        both: list[bytes] = []
        open_fds = [out_r, err_r]
        timed_out = False
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            readable, _, _ = select.select(open_fds, [], [], left)
            for fd in readable:
                chunk = posix.read(fd, 65536)
                if chunk:
                    chunks[fd].append(chunk)
                    both.append(chunk)
                else:
                    open_fds.remove(fd)
        if timed_out:
            import _signal  # type: ignore[import-not-found]

            # cannot fail: the group's leader is not reaped yet (waitpid below), so it is there
            posix.killpg(pid, _signal.SIGKILL)
        for fd in (out_r, err_r):
            posix.close(fd)
        _, status = posix.waitpid(pid, 0)

        def text(parts: list[bytes]) -> str:
            return b"".join(parts).decode("utf-8", "replace")

        result = Result(hook)
        result.stdout, result.stderr, result.output = (
            text(chunks[out_r]),
            text(chunks[err_r]),
            text(both),
        )
        if timed_out:
            result.code, result.outcome, result.missing = 1, "cancelled", "timeout"
            return result
        result.code = posix.waitstatus_to_exitcode(status)
        result.outcome = "success" if result.code == 0 else "error"
        if result.code == 0:
            result.answer = _json_object(result.stdout)
        return result

    def post(self, hook: dict[str, Any], hook_input: dict[str, Any]) -> Result:
        """An ``http`` hook: POST the input as JSON; the status is the exit code, a 2xx JSON
        body (or an empty one) the answer."""
        import http.client

        url = hook["url"]
        secure = url.startswith("https://")
        rest = url.split("://", 1)[1]
        cut = min((rest.find(c) for c in "/?#" if c in rest), default=len(rest))
        hostport, path = rest[:cut], rest[cut:].split("#", 1)[0] or "/"
        if not path.startswith("/"):
            path = "/" + path
        hostport = hostport.rsplit("@", 1)[-1]
        host, colon, port = hostport.rpartition(":")
        if not colon or "]" in port:
            host, port = hostport, ("443" if secure else "80")
        host = host.strip("[]")
        headers = {
            "Accept": "application/json, text/plain, */*",
            "Content-Type": "application/json",
        }
        for key, value in (hook.get("headers") or {}).items():
            headers[key] = _interpolate(value, self.rt.env, hook.get("allowedEnvVars"))
        headers.setdefault("User-Agent", "axios/1.15.2")  # what the real CLI sends
        timeout = float(hook.get("timeout") or DEFAULT_TIMEOUT["http"])
        connection_type = http.client.HTTPSConnection if secure else http.client.HTTPConnection
        result = Result(hook)
        try:
            connection = connection_type(host, int(port), timeout=timeout)
            try:
                connection.request("POST", path, utf8(dumps(hook_input)), headers)
                reply = connection.getresponse()
                status, body = reply.status, reply.read().decode("utf-8", "replace")
            finally:
                connection.close()
        except TimeoutError:
            result.output, result.outcome, result.missing = "Hook cancelled", "cancelled", "timeout"
            return result
        except ConnectionRefusedError:
            said = f"connect ECONNREFUSED {host}:{port}"
            result.stderr = result.output = said
            result.outcome, result.missing = "error", "unusable"
            return result
        except (OSError, ValueError, http.client.HTTPException) as error:
            result.stderr = result.output = str(error) or type(error).__name__
            result.outcome, result.missing = "error", "unusable"
            return result
        result.code = status
        if not 200 <= status < 300:
            result.stderr = result.output = f"HTTP {status} from {url}"
            result.outcome, result.missing = "error", "unusable"
            return result
        result.stdout = result.output = body
        text = body.strip()
        if not text:
            result.answer = {}
        elif not text.startswith("{"):
            shown = text if len(text) <= 200 else text[:200] + "\u2026"
            result.stderr = f"HTTP hook must return JSON, but got non-JSON response body: {shown}"
            result.outcome, result.missing = "error", "unusable"
        else:
            result.answer = _json_object(text)
            if result.answer is None:
                result.stderr = "HTTP hook must return valid JSON, but parsing failed"
                result.outcome, result.missing = "error", "unusable"
        return result


# --- prompt and agent hooks: the script answers -------------------------------------------------


def hook_prompt(prompt: str, hook_input: dict[str, Any]) -> str:
    """The user message a prompt or agent hook sends: ``$ARGUMENTS`` replaced by the input's
    JSON, or the JSON appended after ``ARGUMENTS:`` when the prompt has no placeholder."""
    arguments = dumps(hook_input)
    if "$ARGUMENTS" in prompt:
        return prompt.replace("$ARGUMENTS", arguments)
    return f"{prompt}\n\nARGUMENTS: {arguments}"


def model_answer(run: TurnState, hook: dict[str, Any], hook_input: dict[str, Any]) -> Result:
    """A ``prompt`` or ``agent`` hook: the real CLI asks the model (the hook's ``model``, else
    the session's) one extra request; here the next scripted turn that accepts the hook's
    prompt answers it, as that turn would answer the real CLI through the model double.

    A ``prompt`` hook's turn is text: the JSON ``{"ok": …, "reason": …}`` (other text is no
    usable answer). An ``agent`` hook's turn calls the ``StructuredOutput`` tool with that
    object. ``Usage`` in the turn counts into the result; ``Delay`` longer than the hook's
    ``timeout`` times it out. Anything else in the turn (a fault, another tool call the hook's
    agent would run) is a ``HookTurnError``: the fake cannot play it."""
    kind = hook["type"]
    text = hook_prompt(hook["prompt"], hook_input)
    index, turn, error = choose_turn(run.s, text, False, hook.get("model") or run.s.model)
    if turn is None:
        raise HookTurnError(str(error))
    result = Result(hook)
    texts: list[str] = []
    verdict: Any = None
    delay = 0.0
    for op in turn["ops"]:
        if op[0] == "text":
            texts.append(op[1])
        elif op[0] == "usage":
            run.input_tokens += op[1]
            run.output_tokens += op[2]
            run.s.spent += op[3] or 0.0
        elif op[0] == "delay":
            delay += op[1]
        elif kind == "agent" and op[0] == "tool_use" and op[2] == "StructuredOutput":
            verdict = op[3]
        else:
            raise HookTurnError(
                f"turn {index} answers a {kind} hook ({hook['prompt']!r}) with a {op[0]!r} "
                f"step, which the fake cannot play there: a prompt hook's turn is the JSON "
                f'verdict as text, an agent hook\'s a StructuredOutput tool call ({{"ok": …, '
                f'"reason": …}}), with Usage and Delay steps if wanted'
            )
    timeout = float(hook.get("timeout") or DEFAULT_TIMEOUT[kind])
    if delay >= timeout:
        run.pause(timeout)
        result.outcome, result.missing = "cancelled", "timeout"
        return result
    if delay:
        run.pause(delay)
    if kind == "prompt":
        verdict = _json_object("".join(texts))
    elif verdict is None:
        raise HookTurnError(
            f"turn {index} answers an agent hook ({hook['prompt']!r}) without a "
            f"StructuredOutput tool call: the real CLI would ask its agent again"
        )
    if isinstance(verdict, dict) and isinstance(verdict.get("ok"), bool):
        result.answer = verdict
    else:
        result.outcome, result.missing = "error", "unusable"
    return result


# --- one event ----------------------------------------------------------------------------------


def hook_input(
    session: SessionState, event: str, prompt_id: str | None, payload: dict[str, Any]
) -> dict[str, Any]:
    """The JSON a hook gets, its fields in the real CLI's order."""
    data: dict[str, Any] = {
        "session_id": session.session_id,
        "transcript_path": transcript_path(session.rt.env, session.cwd, session.session_id),
        "cwd": session.cwd,
    }
    if prompt_id is not None and event != "SessionStart":
        data["prompt_id"] = prompt_id
    if event not in ("SessionStart", "SessionEnd"):
        data["permission_mode"] = session.permission_mode
    data["hook_event_name"] = event
    data.update(payload)
    return data


def session_event(session: SessionState, event: str, value: str, prompt_id: str | None) -> None:
    """``SessionStart`` (``value``: its source) or ``SessionEnd`` (its reason)."""
    hooks: Hooks = session.settings_hooks  # the callers run this only when there are hooks
    field = "source" if event == "SessionStart" else "reason"
    data = hook_input(session, event, prompt_id, {field: value})
    ids = session.rt.ids(f"{session.session_id}/{event}")
    name = f"{event}:{value}"
    if event == "SessionEnd":  # observed: runs, but its events are not written (stdout closes)
        hooks.include_events = False
    hooks.run(event, name, data, value, ids, session.send)


def run_event(run: TurnState, event: str, tool: str | None, payload: dict[str, Any]) -> str | None:
    """Run ``event``'s settings hooks, then the SDK's (``hook_callback``), and apply what they
    decided to ``run``: a PreToolUse deny text (``hook_denial``), a blocked prompt
    (``prompt_blocked``), Stop feedback (``stop_feedback``), or ``hook_stop`` (the turn ends
    after this action). Returns a PreToolUse permission decision (``"allow"``/``"deny"``)."""
    s = run.s
    data = hook_input(s, event, run.prompt_id(), payload)
    decision = None
    if s.settings_hooks is not None:
        name = event if tool is None else f"{event}:{tool}"

        def ask(hook: dict[str, Any], given: dict[str, Any]) -> Result:
            return model_answer(run, hook, given)

        results = s.settings_hooks.run(event, name, data, tool, run.ids, s.send, ask)
        decision = _decide(run, event, tool, results)
    denied = decision == "deny"  # observed: the SDK's hooks are still asked; the deny stands
    for group in s.hooks.get(event) or ():
        pattern = group.get("matcher") if isinstance(group, dict) else None
        if not isinstance(group, dict) or not matches(event, pattern, tool):
            continue
        for callback_id in group.get("hookCallbackIds") or ():
            answer = s.request(
                {
                    "subtype": "hook_callback",
                    "callback_id": callback_id,
                    "input": dict(data),
                    "tool_use_id": payload.get("tool_use_id"),
                }
            )
            body = answer.get("response") if isinstance(answer, dict) else None
            if isinstance(body, dict):
                specific = body.get("hookSpecificOutput")
                if isinstance(specific, dict) and specific.get("permissionDecision"):
                    decision = str(specific["permissionDecision"])
                elif body.get("decision") == "block":
                    decision = "deny"
    return "deny" if denied else decision


def _decide(run: TurnState, event: str, tool: str | None, results: list[Result]) -> str | None:
    """What ``event``'s hook results mean, as observed; the first blocking hook (in the order
    configured) wins."""
    allow = False
    for r in results:
        answer = r.answer or {}
        reason = str(answer.get("reason") or "")
        blocked_by_model = r.kind in ("prompt", "agent") and answer.get("ok") is False
        said = ""  # how the CLI quotes the block: "[label]: why", or the reason alone
        blocks = True
        if r.kind == "command" and r.code == 2:
            said = f"[{r.label}]: {r.stderr or 'No stderr output'}"
            reason = r.stderr.strip()
        elif blocked_by_model and r.kind == "agent":
            said = f"Agent hook condition was not met: {reason}"
        elif blocked_by_model:
            said = f"[{r.label}]: {reason}"
        elif r.kind in ("command", "http") and answer.get("decision") == "block":
            said = reason
        else:
            blocks = False
        stop = answer.get("continue") is False or (
            blocked_by_model and r.kind == "prompt" and not r.hook.get("continueOnBlock")
        )
        if event == "PreToolUse":
            specific = answer.get("hookSpecificOutput")
            wanted = specific.get("permissionDecision") if isinstance(specific, dict) else None
            if r.kind == "command" and r.code == 2:
                said = f"[{r.label}]: {r.stderr}"
            elif wanted == "deny" and not said:
                said = str(specific.get("permissionDecisionReason") or "")  # type: ignore[union-attr]
            run.hook_stop = run.hook_stop or stop
            if blocks or wanted == "deny":
                run.hook_denial = f"PreToolUse:{tool} hook error: {said}"
                return "deny"
            allow = allow or wanted == "allow"
        elif event == "PostToolUse":
            run.hook_stop = run.hook_stop or stop
        elif event == "UserPromptSubmit" and blocks:
            run.prompt_blocked = _prompt_blocked(run.prompt, r, said, reason)
            return None
        elif event == "Stop" and blocks:
            run.stop_feedback = f"Stop hook feedback:\n{said}"
            return None
    return "allow" if allow else None


def _prompt_blocked(prompt: str, r: Result, said: str, reason: str) -> dict[str, Any]:
    """The ``informational`` message of a blocked prompt (without uuid and session)."""
    if r.kind == "prompt":  # observed: a prompt hook "stops" the prompt and keeps it
        content = f"Operation stopped by hook: {reason}"
        outcome: dict[str, Any] = {"kind": "stopped_by_hook", "prompt_kept": True}
    else:
        content = (
            f"UserPromptSubmit operation blocked by hook:\n{said}\n\nOriginal prompt: {prompt}"
        )
        outcome = {"kind": "blocked_by_hook", "prompt_kept": False}
    if reason:
        outcome["reason"] = reason
    return {
        "type": "system",
        "subtype": "informational",
        "content": content,
        "level": "warning",
        "prevent_continuation": True,
        "prompt_submit_outcome": outcome,
    }
