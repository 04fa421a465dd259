"""Claude Code hook settings in the fake ``claude``: which files are read, the CLI's schema, and
what the fake refuses to play (``_process.hooks`` runs what these return).

Runs in the fake process (built-ins only, see ``_runtime``). Loaded when a settings file or
``--settings`` may hold hooks; ``_process.hooks`` only when some hook was found. The rules and
the shapes are in ``_process.hooks``'s docstring and docs/protocol-reference.md ("Claude hooks").
"""

from __future__ import annotations

from stuntset.doubles.cli._runtime import loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli._runtime import Runtime

__all__ = [
    "EVENTS",
    "SettingsError",
    "load_hooks",
    "load_settings",
    "read_json",
    "transcript_path",
    "valid_hooks",
]

#: Every event name the CLI's settings schema knows (others are ignored).
EVENTS = frozenset(
    [
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "PostToolBatch",
        "Notification",
        "UserPromptSubmit",
        "UserPromptExpansion",
        "SessionStart",
        "SessionEnd",
        "Stop",
        "StopFailure",
        "SubagentStart",
        "SubagentStop",
        "PreCompact",
        "PostCompact",
        "PreModelSwitch",
        "PostModelSwitch",
        "PermissionRequest",
        "PermissionDenied",
        "Setup",
        "TeammateIdle",
        "TaskCreated",
        "TaskCompleted",
        "Elicitation",
        "ElicitationResult",
        "ConfigChange",
        "WorktreeCreate",
        "WorktreeRemove",
        "InstructionsLoaded",
        "CwdChanged",
        "FileChanged",
        "DirectoryAdded",
        "MessageDisplay",
        "PreSkillShellCommand",
    ]
)
#: Hook fields that change what a hook does and that the fake does not play.
REFUSED_FIELDS = ("if", "async", "asyncRewake", "once", "args")
#: Events a ``prompt`` / ``agent`` hook can be played on (they need a turn to ask the model).
MODEL_EVENTS = frozenset(("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop"))


class SettingsError(Exception):
    """Settings the fake refuses at start-up: ``str(error)`` is its stderr line (exit 1)."""


# --- settings -----------------------------------------------------------------------------------


def load_settings(value: str, cwd: str) -> dict[str, Any]:
    """``--settings``: JSON text, or a JSON file (relative to ``cwd``)."""
    try:
        settings = loads(value)
    except ValueError:
        path = value if value.startswith("/") else cwd.rstrip("/") + "/" + value
        settings = read_json(path)
        if settings is None:
            raise SettingsError(f"Error: Settings file not found: {path}") from None
    return settings if isinstance(settings, dict) else {}


def read_json(path: str) -> Any:
    """A JSON file's value; ``None`` if it is missing, unreadable or not JSON."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
        return loads(text.removeprefix("\ufeff"))
    except (OSError, ValueError):
        return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _valid_hook(hook: Any) -> bool:
    if not isinstance(hook, dict):
        return False
    kind = hook.get("type")
    needs = {
        "command": ("command",),
        "prompt": ("prompt",),
        "agent": ("prompt",),
        "http": ("url",),
        "mcp_tool": ("server", "tool"),
    }.get(kind if isinstance(kind, str) else "")
    if needs is None or not all(isinstance(hook.get(key), str) for key in needs):
        return False
    if kind == "http" and not hook["url"].startswith(("http://", "https://")):
        return False
    timeout = hook.get("timeout")
    if timeout is not None and (not _number(timeout) or timeout <= 0):
        return False
    headers = hook.get("headers")
    if headers is not None and not (
        isinstance(headers, dict) and all(isinstance(v, str) for v in headers.values())
    ):
        return False
    return all(
        hook.get(key) is None or isinstance(hook.get(key), str)
        for key in ("model", "statusMessage", "shell", "onFailure")
    )


def valid_hooks(hooks: Any) -> bool:
    """Whether a settings file's ``hooks`` pass the CLI's schema (else the file adds none)."""
    if not isinstance(hooks, dict):
        return False
    for event, groups in hooks.items():
        if event not in EVENTS:
            continue  # the CLI ignores names it does not know
        if not isinstance(groups, list):
            return False
        for group in groups:
            if not isinstance(group, dict):
                return False
            if group.get("matcher") is not None and not isinstance(group["matcher"], str):
                return False
            entries = group.get("hooks", [])
            if not isinstance(entries, list) or not all(_valid_hook(h) for h in entries):
                return False
    return True


def _refusal(event: str, hook: dict[str, Any]) -> str | None:
    """Why the fake does not play ``hook`` (``None``: it does)."""
    kind = hook["type"]
    if kind == "mcp_tool":
        return "its type 'mcp_tool' (the fake has no MCP connection to call a tool over)"
    for field in REFUSED_FIELDS:
        if hook.get(field) not in (None, False):
            return f"its field {field!r}"
    if hook.get("shell") not in (None, "bash"):
        return f"its shell {hook['shell']!r}"
    if hook.get("onFailure") not in (None, "continue"):
        return f"onFailure {hook['onFailure']!r}"
    if kind in ("prompt", "agent") and event not in MODEL_EVENTS:
        return f"a {kind} hook on {event}"
    return None


def load_hooks(
    rt: Runtime, sources: list[tuple[str, str]], flag: dict[str, Any] | None
) -> dict[str, list[tuple[str | None, dict[str, Any]]]]:
    """The hooks of the settings ``sources`` ((label, path) in order) and of ``--settings``
    (``flag``): event → [(matcher, hook)] in the order they run. ``SettingsError`` for a hook
    the fake does not play."""
    loaded: list[tuple[str, Any]] = [(path, read_json(path)) for _, path in sources]
    if flag is not None:
        loaded.append(("--settings", flag))
    found: dict[str, list[tuple[str | None, dict[str, Any]]]] = {}
    for where, settings in loaded:
        if not isinstance(settings, dict):
            continue
        if settings.get("disableAllHooks") is True:
            return {}
        hooks = settings.get("hooks")
        if hooks is None or not valid_hooks(hooks):
            continue
        for event, groups in hooks.items():
            if event not in EVENTS:
                continue
            for number, group in enumerate(groups):
                for index, hook in enumerate(group.get("hooks") or ()):
                    why = _refusal(event, hook)
                    if why is not None:
                        raise SettingsError(
                            f"stuntset fake claude: {where}: hooks.{event}[{number}]"
                            f".hooks[{index}]: {why} is not simulated (docs/protocol-reference"
                            ".md, Claude hooks); leave that settings source out "
                            "(--setting-sources, or setting_sources in the SDK)"
                        )
                    found.setdefault(event, []).append((group.get("matcher"), hook))
    rt.journal.write("hook_settings", events=sorted(found))
    return found


def transcript_path(env: dict[str, str], cwd: str, session_id: str) -> str:
    """Where the real CLI keeps the session's transcript (the fake writes none there)."""
    config = env.get("CLAUDE_CONFIG_DIR") or env.get("HOME", "") + "/.claude"
    project = "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)
    return f"{config}/projects/{project}/{session_id}.jsonl"
