"""Command-line parsing of the fake ``claude``, faithful to Claude Code 2.1.332.

Runs in the fake process (see ``_runtime``): built-ins only. The option table lists every
option ``claude --help`` shows plus the hidden ones ``claude-agent-sdk`` passes
(``--permission-prompt-tool``, ``--max-turns``, ``--system-prompt-file``…). Errors are the
real CLI's (commander.js) text and exit code 1, observed with the bundled binary::

    error: unknown option '--bogus'
    (Did you mean --verbose?)                             (for a close typo)
    error: option '--model <model>' argument missing
    error: option '--output-format <format>' argument 'x' is invalid. Allowed choices are …
    error: option '--max-turns <turns>' argument 'abc' is invalid. must be a number
    Error: When using --print, --output-format=stream-json requires --verbose
    Error: --input-format=stream-json requires output-format=stream-json.
    Error processing --setting-sources: Invalid setting source: x. Valid options are: …
    error: option '--max-budget-usd <amount>' argument '0' is invalid. --max-budget-usd must
    be a number greater than 0
    --dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "OPTIONS",
    "ArgumentError",
    "check_root",
    "check_session_id",
    "js_number",
    "js_string",
    "parse",
]

#: name → (canonical key, arity, metavar, choices). Arity: 0 a switch, 1 a value, "?" an
#: optional value, "+" one or more values (commander's ``<x...>``: taken up to the next
#: token that starts with ``-``), "n" a number.
_TABLE: list[tuple[tuple[str, ...], str, Any, str, tuple[str, ...]]] = [
    (("--add-dir",), "add_dir", "+", "<directories...>", ()),
    (("--agent",), "agent", 1, "<agent>", ()),
    (("--agents",), "agents", 1, "<json-or-file>", ()),
    (("--allow-dangerously-skip-permissions",), "allow_skip", 0, "", ()),
    (("--allowedTools", "--allowed-tools"), "allowed_tools", "+", "<tools...>", ()),
    (("--append-system-prompt",), "append_system_prompt", 1, "<prompt>", ()),
    (("--append-system-prompt-file",), "append_system_prompt_file", 1, "<file>", ()),
    (("--autocompact",), "autocompact", 1, "<auto|tokens>", ()),
    (("--bare",), "bare", 0, "", ()),
    (("--betas",), "betas", "+", "<betas...>", ()),
    (("-c", "--continue"), "continue", 0, "", ()),
    (("--dangerously-skip-permissions",), "skip_permissions", 0, "", ()),
    (("-d", "--debug"), "debug", "?", "[filter]", ()),
    (("--debug-file",), "debug_file", 1, "<path>", ()),
    (("--disable-slash-commands",), "disable_slash_commands", 0, "", ()),
    (("--disallowedTools", "--disallowed-tools"), "disallowed_tools", "+", "<tools...>", ()),
    (("--effort",), "effort", 1, "<level>", ()),
    (("--exclude-dynamic-system-prompt-sections",), "exclude_dynamic", 0, "", ()),
    (("--fallback-model",), "fallback_model", 1, "<model>", ()),
    (("--fork-session",), "fork_session", 0, "", ()),
    (("--forward-subagent-text",), "forward_subagent_text", 0, "", ()),
    (("-h", "--help"), "help", 0, "", ()),
    (("--include-hook-events",), "include_hook_events", 0, "", ()),
    (("--include-partial-messages",), "include_partial_messages", 0, "", ()),
    (("--input-format",), "input_format", 1, "<format>", ("text", "stream-json")),
    (("--json-schema",), "json_schema", 1, "<schema>", ()),
    (("--max-budget-usd",), "max_budget_usd", "n", "<amount>", ()),
    (("--max-thinking-tokens",), "max_thinking_tokens", "n", "<tokens>", ()),
    (("--max-turns",), "max_turns", "n", "<turns>", ()),
    (("--mcp-config",), "mcp_config", "+", "<configs...>", ()),
    (("--model",), "model", 1, "<model>", ()),
    (("-n", "--name"), "name", 1, "<name>", ()),
    (("--no-session-persistence",), "no_session_persistence", 0, "", ()),
    (("--output-format",), "output_format", 1, "<format>", ("text", "json", "stream-json")),
    (
        ("--permission-mode",),
        "permission_mode",
        1,
        "<mode>",
        ("acceptEdits", "auto", "bypassPermissions", "manual", "dontAsk", "plan", "default"),
    ),
    (("--permission-prompt-tool",), "permission_prompt_tool", 1, "<tool>", ()),
    (("--plugin-dir",), "plugin_dir", 1, "<path>", ()),
    (("-p", "--print"), "print", 0, "", ()),
    (("--replay-user-messages",), "replay_user_messages", 0, "", ()),
    (("-r", "--resume"), "resume", "?", "[value]", ()),
    (("--resume-session-at",), "resume_session_at", 1, "<message-id>", ()),
    (("--resume-drops-turn",), "resume_drops_turn", 1, "<value>", ()),
    (("--session-id",), "session_id", 1, "<uuid>", ()),
    (("--session-mirror",), "session_mirror", 0, "", ()),
    (("--setting-sources",), "setting_sources", 1, "<sources>", ()),
    (("--settings",), "settings", 1, "<file-or-json>", ()),
    (("--strict-mcp-config",), "strict_mcp_config", 0, "", ()),
    (("--system-prompt",), "system_prompt", 1, "<prompt>", ()),
    (("--system-prompt-file",), "system_prompt_file", 1, "<file>", ()),
    (("--task-budget",), "task_budget", "n", "<tokens>", ()),
    (("--thinking",), "thinking", 1, "<mode>", ("enabled", "adaptive", "disabled")),
    (("--thinking-display",), "thinking_display", 1, "<mode>", ()),
    (("--tools",), "tools", "+", "<tools...>", ()),
    (("--verbose",), "verbose", 0, "", ()),
    (("-v", "--version"), "version", 0, "", ()),
]

OPTIONS: dict[str, tuple[str, Any, str, tuple[str, ...], str]] = {
    name: (key, arity, metavar, choices, names[-1])
    for names, key, arity, metavar, choices in _TABLE
    for name in names
}

_SETTING_SOURCES = ("user", "project", "local")


class ArgumentError(Exception):
    """A command line the real CLI refuses: ``str(error)`` is its stderr text (exit 1)."""


def _edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance (commander.js's ``editDistance``)."""
    rows = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        rows[i][0] = i
    for j in range(len(b) + 1):
        rows[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[len(a)][len(b)]


def _did_you_mean(flag: str) -> str:
    """commander.js's ``suggestSimilar``: the closest long options (distance < 3, similar
    enough), sorted."""
    if not flag.startswith("--"):
        return ""
    word = flag[2:]
    best, similar = 3, []
    for candidate in sorted({name[2:] for name in OPTIONS if name.startswith("--")}):
        distance = _edit_distance(word, candidate)
        length = max(len(word), len(candidate))
        if (length - distance) / length > 0.4:
            if distance < best:
                best, similar = distance, [candidate]
            elif distance == best:
                similar.append(candidate)
    if len(similar) > 1:
        return f"\n(Did you mean one of {', '.join('--' + s for s in similar)}?)"
    return f"\n(Did you mean --{similar[0]}?)" if similar else ""


def js_number(text: str) -> float | None:
    """JavaScript's ``Number(text)`` for decimal text (blank is 0); ``None`` for its NaN."""
    text = text.strip()
    if not text:
        return 0.0
    if text.lstrip("+-") == "Infinity":
        return float(text.replace("Infinity", "inf"))
    if text.lower().lstrip("+-") in ("inf", "infinity", "nan") or "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def js_string(number: float) -> str:
    """JavaScript's ``String(number)``: ``1``, ``0.01``, ``0.00001``, ``1e-7``, ``1e+21``."""
    if number == int(number) and abs(number) < 1e21:
        return str(int(number))
    mantissa, _, exponent = repr(number).partition("e")
    if not exponent:
        return mantissa
    power = int(exponent)
    if -7 < power < 21:
        sign = "-" if mantissa.startswith("-") else ""
        digits = mantissa.lstrip("-").replace(".", "")
        if power < 0:
            return f"{sign}0.{'0' * (-power - 1)}{digits}"
        return f"{sign}{digits.ljust(power + 1, '0')}"
    return f"{mantissa}e{'+' if power > 0 else '-'}{abs(power)}"


def _label(name: str) -> str:
    metavar, long_name = OPTIONS[name][2], OPTIONS[name][4]
    return f"{long_name} {metavar}".strip()


def parse(argv: list[str]) -> dict[str, Any]:
    """Options by canonical key (lists for ``+`` options, repeated ones accumulate) plus
    ``"prompt"`` (the positional argument); ``ArgumentError`` for what the CLI refuses."""
    options: dict[str, Any] = {}
    positionals: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        index += 1
        if token == "--":
            positionals.extend(argv[index:])
            break
        if not token.startswith("-") or token == "-":
            positionals.append(token)
            continue
        name, has_inline, inline = token.partition("=")
        if name not in OPTIONS or (has_inline and OPTIONS[name][1] == 0):
            raise ArgumentError(f"error: unknown option '{token}'{_did_you_mean(token)}")
        key, arity, _, choices, _ = OPTIONS[name]
        if arity == 0:
            options[key] = True
            if key == "version":
                return options
            continue
        values: list[str] = []
        if has_inline:
            values.append(inline)
        elif arity == "?":
            if index < len(argv) and not argv[index].startswith("-"):
                values.append(argv[index])
                index += 1
        elif index < len(argv) and (arity != "+" or not argv[index].startswith("-")):
            values.append(argv[index])
            index += 1
        if arity == "+":
            while index < len(argv) and not argv[index].startswith("-") and not has_inline:
                values.append(argv[index])
                index += 1
        if not values and arity != "?":
            raise ArgumentError(f"error: option '{_label(name)}' argument missing")
        for value in values:
            if choices and value not in choices:
                allowed = ", ".join(c for c in choices if c != "default")
                raise ArgumentError(
                    f"error: option '{_label(name)}' argument '{value}' is invalid. "
                    f"Allowed choices are {allowed}."
                )
            if arity == "n":
                number = js_number(value)
                if key == "max_budget_usd" and not (number is not None and number > 0):
                    raise ArgumentError(
                        f"error: option '{_label(name)}' argument '{value}' is invalid. "
                        f"--max-budget-usd must be a number greater than 0"
                    )
                if number is None:
                    raise ArgumentError(
                        f"error: option '{_label(name)}' argument '{value}' is invalid. "
                        f"must be a number"
                    )
        if arity == "+":
            options.setdefault(key, []).extend(values)
        else:
            options[key] = values[0] if values else True
    if positionals:
        options["prompt"] = " ".join(positionals)
    _check(options)
    return options


def _check(options: dict[str, Any]) -> None:
    if options.get("help"):
        return
    output = options.get("output_format", "text")
    if options.get("input_format") == "stream-json" and output != "stream-json":
        raise ArgumentError("Error: --input-format=stream-json requires output-format=stream-json.")
    if output == "stream-json" and not options.get("verbose"):
        raise ArgumentError(
            "Error: When using --print, --output-format=stream-json requires --verbose"
        )
    sources = options.get("setting_sources")
    if isinstance(sources, str) and sources:
        for source in sources.split(","):
            if source.strip() not in _SETTING_SOURCES:
                raise ArgumentError(
                    f"Error processing --setting-sources: Invalid setting source: "
                    f"{source.strip()}. Valid options are: {', '.join(_SETTING_SOURCES)}"
                )


#: What Claude Code's ``isEnvTruthy`` accepts (case and surrounding blanks ignored).
_TRUTHY = ("1", "true", "yes", "on")


def check_root(
    options: dict[str, Any], env: dict[str, str], uid: int, default_mode: Any = None
) -> None:
    """Refuse to skip permissions as root, as Claude Code 2.1.332 does (observed, and read in
    the bundled ``cli.js``): ``--permission-mode bypassPermissions``,
    ``--dangerously-skip-permissions``, ``--allow-dangerously-skip-permissions`` or a
    settings ``permissions.defaultMode`` of ``bypassPermissions`` (``default_mode``), while
    ``getuid() == 0``, unless ``IS_SANDBOX`` is exactly ``1`` or ``CLAUDE_CODE_BUBBLEWRAP``
    is truthy. The refusal comes after the command line and the settings are read, before
    ``--resume`` is looked up or stdin is read: that one line on stderr, nothing on stdout,
    exit 1 (the SDK's ``ProcessError``)."""
    bypass = (
        options.get("permission_mode") == "bypassPermissions"
        or options.get("skip_permissions")
        or options.get("allow_skip")
        or default_mode == "bypassPermissions"
    )
    if not bypass or uid != 0 or env.get("IS_SANDBOX") == "1":
        return
    if env.get("CLAUDE_CODE_BUBBLEWRAP", "").strip().lower() in _TRUTHY:
        return
    raise ArgumentError(
        "--dangerously-skip-permissions cannot be used with root/sudo privileges for "
        "security reasons"
    )


def check_session_id(options: dict[str, Any]) -> None:
    """``--session-id`` as Claude Code 2.1.332 checks it (observed), before the root check:
    beside ``--continue`` or ``--resume`` only with ``--fork-session``, and a UUID (hex of
    either case). One line on stderr, nothing on stdout, exit 1."""
    explicit = options.get("session_id")
    if explicit is None:
        return
    if (options.get("continue") or options.get("resume")) and not options.get("fork_session"):
        raise ArgumentError(
            "Error: --session-id with --continue or --resume also needs --fork-session."
        )
    parts = explicit.split("-")
    if [len(part) for part in parts] != [8, 4, 4, 4, 12] or "".join(parts).strip(_HEX):
        raise ArgumentError("Error: Invalid session ID. Must be a valid UUID.")


_HEX = "0123456789abcdefABCDEF"


def split_list(values: Any) -> list[str]:
    """A ``+`` option's values as names (``["a,b", "c"]`` → ``["a", "b", "c"]``)."""
    if not isinstance(values, list):
        return []
    return [part.strip() for value in values for part in value.split(",") if part.strip()]
