"""Command hooks of the fake ``claude``: the ``hooks`` of ``--settings``, run for real.

Loaded only when ``--settings`` is given (runs in the fake process: built-ins only, see
``_runtime``; ``posix_spawn`` and ``select`` for the hook processes). Observed with the bundled
Claude Code 2.1.332 against the model double:

* ``--settings`` is JSON text, else a file path (relative to the working directory); one that
  is neither → ``Error: Settings file not found: <absolute path>`` on stderr, exit 1.
* Each matching ``{"type": "command", "command": …}`` hook runs in ``/bin/sh -c`` with the hook
  input as JSON on stdin (``session_id``, ``transcript_path``, ``cwd``, ``permission_mode``,
  ``hook_event_name`` and the event's fields) and ``CLAUDE_PROJECT_DIR`` set. The hooks of one
  event run side by side: every ``hook_started`` first, then the ``hook_response``\\ s (here in
  the order configured, which keeps the stream deterministic; the real CLI writes them as they
  finish)::

    {"type":"system","subtype":"hook_started","hook_id":"<uuid>","hook_name":"PreToolUse:Bash",
     "hook_event":"PreToolUse","uuid":"…","session_id":"…"}
    {"type":"system","subtype":"hook_response","hook_id":"<same>","hook_name":"PreToolUse:Bash",
     "hook_event":"PreToolUse","output":"<stdout and stderr as they came>","stdout":"…",
     "stderr":"…","exit_code":0,"outcome":"success","uuid":"…","session_id":"…"}

  ``hook_name`` is ``<event>:<tool name>`` for tool events (whatever the matcher), ``SessionStart:
  startup`` (``:resume`` on ``--resume``/``--continue``), else the event name. ``outcome`` is
  ``success`` for exit 0, else ``error``. These messages are written only with
  ``--include-hook-events`` — except ``SessionStart``'s, which always are (at start-up, before
  stdin is read). Hooks the SDK registers in ``initialize`` (``hook_callback``) write none.
* ``PreToolUse`` exit 2 denies the tool: its result is ``PreToolUse:<tool> hook error:
  [<command>]: <stderr>`` (an error); stdout JSON ``{"hookSpecificOutput":
  {"permissionDecision": "deny", "permissionDecisionReason": R}}`` denies it with
  ``PreToolUse:<tool> hook error: R``; ``"allow"`` skips the permission check. Another exit
  code is a non-blocking error: the tool runs.
* ``UserPromptSubmit`` exit 2 blocks the prompt: no model request; after ``system/init`` a
  ``system``/``informational`` message (``level: warning``, ``prevent_continuation: true``,
  ``prompt_submit_outcome: {"kind": "blocked_by_hook", "prompt_kept": false, "reason":
  <stderr stripped, only if any>}``) whose ``content`` is also the result's ``result``:
  ``UserPromptSubmit operation blocked by hook:\n[<command>]: <stderr, or "No stderr
  output">\n\nOriginal prompt: <prompt>``; then a ``success`` result with ``num_turns: 0``, no
  ``terminal_reason``, exit 0.

* ``Stop`` exit 2 makes the model go on: a synthetic ``user`` message (``isSynthetic: true``)
  whose text is ``Stop hook feedback:\n[<command>]: <stderr, or "No stderr output">``, a
  ``system``/``notification`` (``key: stop-hook-error``), then another model response (the
  next scripted turn) and the Stop hooks again, with ``stop_hook_active: true``; the result
  counts every response (``num_turns``) and its text is the last one's.

Not simulated: regex matchers (``|``-separated names and ``*`` are), hook ``timeout``, the
``prompt``/``agent``/``http`` hook types, hooks from settings files on disk, ``hook_progress``.
"""

from __future__ import annotations

import posix

from stuntset.doubles.cli._runtime import dumps, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli._runtime import Ids, Runtime

__all__ = [
    "CommandHooks",
    "SettingsError",
    "load_settings",
    "pre_tool_decision",
    "prompt_block",
    "stop_feedback",
]


class SettingsError(Exception):
    """``--settings`` the real CLI refuses: ``str(error)`` is its stderr line (exit 1)."""


def load_settings(value: str, cwd: str) -> dict[str, Any]:
    """``--settings``: JSON text, or a JSON file (relative to ``cwd``)."""
    try:
        settings = loads(value)
    except ValueError:
        path = value if value.startswith("/") else cwd.rstrip("/") + "/" + value
        try:
            with open(path, encoding="utf-8") as file:
                settings = loads(file.read())
        except (OSError, ValueError):
            raise SettingsError(f"Error: Settings file not found: {path}") from None
    return settings if isinstance(settings, dict) else {}


def _matches(pattern: Any, tool: str | None) -> bool:
    if tool is None or pattern in (None, "", "*"):
        return True
    return tool in str(pattern).split("|")


class CommandHooks:
    """The command hooks of one session's settings."""

    def __init__(self, rt: Runtime, hooks: Any, include_events: bool) -> None:
        self.rt = rt
        self.hooks = hooks if isinstance(hooks, dict) else {}
        self.include_events = include_events

    def commands(self, event: str, tool: str | None) -> list[str]:
        found = []
        for matcher in self.hooks.get(event) or ():
            if not isinstance(matcher, dict) or not _matches(matcher.get("matcher"), tool):
                continue
            for hook in matcher.get("hooks") or ():
                if isinstance(hook, dict) and hook.get("type") == "command":
                    found.append(str(hook.get("command") or ""))
        return found

    def run(
        self,
        event: str,
        name: str,
        hook_input: dict[str, Any],
        tool: str | None,
        ids: Ids,
        send: Any,
    ) -> list[tuple[str, int, str, str]]:
        """Run ``event``'s matching commands; (command, exit code, stdout, stderr) each.
        ``send`` writes one message (the session's id and a uuid are filled in here)."""
        commands = self.commands(event, tool)
        if not commands:
            return []
        shown = self.include_events or event == "SessionStart"
        session_id = hook_input.get("session_id", "")
        hook_ids = [ids.uuid() for _ in commands]

        def emit(message: dict[str, Any]) -> None:
            if shown:
                message.update(uuid=ids.uuid(), session_id=session_id)
                send(message)

        data = (dumps(hook_input) + "\n").encode()
        started = []
        for hook_id, command in zip(hook_ids, commands, strict=True):
            emit(
                {
                    "type": "system",
                    "subtype": "hook_started",
                    "hook_id": hook_id,
                    "hook_name": name,
                    "hook_event": event,
                }
            )
            started.append(self.spawn(command, data))
        results = []
        for hook_id, command, process in zip(hook_ids, commands, started, strict=True):
            code, stdout, stderr, output = self.collect(*process)
            self.rt.journal.write("hook", hook_event=event, command=command, exit_code=code)
            emit(
                {
                    "type": "system",
                    "subtype": "hook_response",
                    "hook_id": hook_id,
                    "hook_name": name,
                    "hook_event": event,
                    "output": output,
                    "stdout": stdout,
                    "stderr": stderr,
                    "exit_code": code,
                    "outcome": "success" if code == 0 else "error",
                }
            )
            results.append((command, code, stdout, stderr))
        return results

    def spawn(self, command: str, data: bytes) -> tuple[int, int, int]:
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
        )
        for fd in (stdin_r, out_w, err_w):
            posix.close(fd)
        try:  # noqa: SIM105 (no contextlib here: built-ins only)
            posix.write(stdin_w, data)  # hook input is small: it fits the pipe
        except OSError:
            pass  # the hook does not read its input
        posix.close(stdin_w)
        return pid, out_r, err_r

    def collect(self, pid: int, out_r: int, err_r: int) -> tuple[int, str, str, str]:
        import select

        chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
        both: list[bytes] = []
        open_fds = [out_r, err_r]
        while open_fds:
            readable, _, _ = select.select(open_fds, [], [])
            for fd in readable:
                chunk = posix.read(fd, 65536)
                if chunk:
                    chunks[fd].append(chunk)
                    both.append(chunk)
                else:
                    open_fds.remove(fd)
                    posix.close(fd)
        _, status = posix.waitpid(pid, 0)
        code = posix.waitstatus_to_exitcode(status)

        def text(parts: list[bytes]) -> str:
            return b"".join(parts).decode("utf-8", "replace")

        return code, text(chunks[out_r]), text(chunks[err_r]), text(both)


def pre_tool_decision(tool: str, results: list[tuple[str, int, str, str]]) -> tuple[str, str]:
    """A ``PreToolUse`` outcome from its command hooks: ("deny", tool result text), ("allow",
    "") or ("", "")."""
    decision = ""
    for command, code, stdout, stderr in results:
        if code == 2:
            return "deny", f"PreToolUse:{tool} hook error: [{command}]: {stderr}"
        if code != 0:
            continue
        try:
            answer = loads(stdout) if stdout.strip().startswith("{") else None
        except ValueError:
            answer = None
        specific = answer.get("hookSpecificOutput") if isinstance(answer, dict) else None
        wanted = specific.get("permissionDecision") if isinstance(specific, dict) else None
        if wanted == "deny":
            reason = specific.get("permissionDecisionReason") or ""  # type: ignore[union-attr]
            return "deny", f"PreToolUse:{tool} hook error: {reason}"
        if wanted == "allow":
            decision = "allow"
    return decision, ""


def prompt_block(prompt: str, results: list[tuple[str, int, str, str]]) -> dict[str, Any] | None:
    """The ``informational`` message of a ``UserPromptSubmit`` hook that blocked the prompt
    (exit 2), without its uuid and session; ``None`` if none did."""
    for command, code, _stdout, stderr in results:
        if code != 2:
            continue
        said = stderr or "No stderr output"
        outcome: dict[str, Any] = {"kind": "blocked_by_hook", "prompt_kept": False}
        if stderr.strip():
            outcome["reason"] = stderr.strip()
        return {
            "type": "system",
            "subtype": "informational",
            "content": f"UserPromptSubmit operation blocked by hook:\n[{command}]: {said}\n\n"
            f"Original prompt: {prompt}",
            "level": "warning",
            "prevent_continuation": True,
            "prompt_submit_outcome": outcome,
        }
    return None


def stop_feedback(results: list[tuple[str, int, str, str]]) -> str | None:
    """What the model is told when a ``Stop`` hook exited 2 (``None``: none did)."""
    for command, code, _stdout, stderr in results:
        if code == 2:
            return f"Stop hook feedback:\n[{command}]: {stderr or 'No stderr output'}"
    return None
