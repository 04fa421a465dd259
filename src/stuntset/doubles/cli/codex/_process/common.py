"""What both modes of the fake ``codex`` share: the option parser (clap's error texts), the
double's threads (kept in the shared state beside the double, so ``exec resume`` and
``thread/resume`` find what earlier invocations made), turn selection, refusals, codex's
retries of a failed model request (``Retries``; ``config`` reads their settings) and the
deterministic clock (ids and timestamps come from the script's seed, never the real clock).

Runs in the fake process (built-ins only, see ``_runtime``); ``run`` parses the top level of
the command line and hands over to ``exec`` or ``app_server``, which import this module.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from stuntset.doubles.cli._runtime import Runtime

__all__ = [
    "BASE_TIME",
    "DEFAULT_REQUEST_RETRIES",
    "DEFAULT_STREAM_RETRIES",
    "HIGH_DEMAND",
    "MAX_INPUT_CHARS",
    "ArgumentError",
    "Retries",
    "Threads",
    "choose_turn",
    "config_matters",
    "config_path",
    "input_refusal",
    "parse_options",
    "refusal_text",
    "scripted_refusal",
]

#: Timestamps the double reports start here (2026-01-01T00:00:00Z) and advance by the script.
BASE_TIME = 1767225600

#: Options every codex command accepts: flag → (name, takes a value, value name, choices).
COMMON_OPTIONS: dict[str, tuple[str, bool, str, tuple[str, ...]]] = {
    "-c": ("config", True, "key=value", ()),
    "--config": ("config", True, "key=value", ()),
    "--enable": ("enable", True, "FEATURE", ()),
    "--disable": ("disable", True, "FEATURE", ()),
    "--strict-config": ("strict_config", False, "", ()),
    "-h": ("help", False, "", ()),
    "--help": ("help", False, "", ()),
    "-V": ("version", False, "", ()),
    "--version": ("version", False, "", ()),
}

#: Options that may be given more than once (their values collect in a list).
REPEATED = frozenset({"config", "enable", "disable", "add_dir", "image"})


class ArgumentError(Exception):
    """A command line clap would refuse: the message is clap's, the exit status 2."""


def _clap_error(text: str, usage: str) -> ArgumentError:
    tail = f"\n{usage}\n" if usage else ""
    return ArgumentError(f"error: {text}\n{tail}\nFor more information, try '--help'.\n")


def parse_options(
    argv: list[str],
    spec: dict[str, tuple[str, bool, str, tuple[str, ...]]],
    usage: str,
    *,
    stop_at: frozenset[str] = frozenset(),
    max_positionals: int = 1,
) -> tuple[dict[str, Any], list[str], str | None, list[str]]:
    """Parse ``argv`` against ``spec`` as clap would: (options, positionals, the subcommand
    found in ``stop_at`` or None, the arguments after it). ``ArgumentError`` on bad input."""
    options: dict[str, Any] = {}
    positionals: list[str] = []
    index = 0
    while index < len(argv):
        arg = argv[index]
        index += 1
        if arg == "--":
            positionals.extend(argv[index:])
            break
        if arg.startswith("-") and arg != "-":
            flag, has_inline, inline = arg.partition("=") if arg.startswith("--") else (arg, "", "")
            if not flag.startswith("--") and len(flag) > 2:
                flag, inline, has_inline = flag[:2], flag[2:], "="
            if flag not in spec:
                raise _clap_error(
                    f"unexpected argument '{flag}' found\n\n"
                    f"  tip: to pass '{flag}' as a value, use '-- {flag}'",
                    usage,
                )
            name, takes_value, value_name, choices = spec[flag]
            long_flag = flag if flag.startswith("--") else _long_name(spec, name, flag)
            value: Any = True
            if takes_value:
                if has_inline:
                    value = inline
                elif index < len(argv):
                    value = argv[index]
                    index += 1
                else:
                    raise _clap_error(
                        f"a value is required for '{long_flag} <{value_name}>' but none was "
                        f"supplied",
                        "",
                    )
                if choices and value not in choices:
                    raise _clap_error(
                        f"invalid value '{value}' for '{long_flag} <{value_name}>'\n"
                        f"  [possible values: {', '.join(choices)}]",
                        "",
                    )
            if name in REPEATED:
                options.setdefault(name, []).append(value)
            else:
                options[name] = value
            continue
        if not positionals and arg in stop_at:
            return options, positionals, arg, argv[index:]
        if len(positionals) >= max_positionals:
            raise _clap_error(f"unexpected argument '{arg}' found", usage)
        positionals.append(arg)
    return options, positionals, None, []


def _long_name(
    spec: dict[str, tuple[str, bool, str, tuple[str, ...]]], name: str, flag: str
) -> str:
    for other, entry in spec.items():
        if entry[0] == name and other.startswith("--"):
            return other
    return flag


# --- threads, turns and time ------------------------------------------------------------------


class Clock:
    """Deterministic timestamps: ``BASE_TIME`` plus what the script's delays add up to."""

    def __init__(self, offset_ms: int = 0) -> None:
        self.ms = BASE_TIME * 1000 + offset_ms

    def advance(self, seconds: float) -> None:
        self.ms += int(seconds * 1000)

    def tick(self) -> int:
        """A new millisecond timestamp (strictly increasing)."""
        self.ms += 1
        return self.ms

    def seconds(self) -> int:
        return self.ms // 1000


class Threads:
    """The double's threads: id → {usage, turns, preview, …}, each a record of the shared
    state (``SharedState.record``: a spawn reads the thread it resumes, not every thread
    the double has seen), the latest one's id in the state itself."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    def create(self, cwd: str, model: str, ephemeral: bool = False) -> dict[str, Any]:
        rt = self.rt

        def change(state: dict[str, Any]) -> dict[str, Any]:
            created = state.get("created", 0) + 1
            state["created"] = created
            thread = {
                "id": rt.ids(f"thread/{created}").uuid(),
                "number": created,
                "cwd": cwd,
                "model": model,
                "ephemeral": ephemeral,
                "preview": "",
                "turns": 0,
                "usage": [0, 0, 0, 0],
                "history": [],
            }
            rt.state.write_record("threads", thread["id"], thread)
            state["latest"] = thread["id"]
            return thread

        result: dict[str, Any] = rt.state.update(change)
        return result

    def get(self, thread_id: str | None) -> dict[str, Any] | None:
        """A thread by id (``None``: the latest one), or ``None``."""

        def change(state: dict[str, Any]) -> dict[str, Any] | None:
            wanted = thread_id if thread_id is not None else state.get("latest")
            found = self.rt.state.record("threads", wanted) if isinstance(wanted, str) else None
            if found is not None:
                state["latest"] = wanted
            return found

        result: dict[str, Any] | None = self.rt.state.update(change)
        return result

    def all(self) -> list[dict[str, Any]]:
        """Every thread, oldest first."""

        def change(state: dict[str, Any]) -> list[dict[str, Any]]:
            threads: list[dict[str, Any]] = self.rt.state.records("threads")
            return sorted(threads, key=lambda thread: thread.get("number", 0))

        result: list[dict[str, Any]] = self.rt.state.update(change)
        return result

    def save(self, thread: dict[str, Any]) -> None:
        def change(state: dict[str, Any]) -> None:
            self.rt.state.write_record("threads", thread["id"], thread)

        self.rt.state.update(change)


def choose_turn(rt: Runtime, prompt: str, model: str) -> tuple[dict[str, Any] | None, str | None]:
    """The first scripted turn with uses left that accepts the prompt (as ``ScriptPlayer``
    chooses), counted in the double's shared state; or an error text naming the miss."""
    from stuntset.doubles.cli._runtime import take_turn

    index, error = take_turn(rt, prompt, model, "codex")
    return (rt.turn(index) if index >= 0 else None), error


#: The most text characters one user input may carry (codex-cli 0.163.0 refuses more).
MAX_INPUT_CHARS = 1048576


def input_refusal(chars: int) -> tuple[int, str, Any] | None:
    """(code, message, data) when a turn's input is over ``MAX_INPUT_CHARS`` text characters,
    as the real 0.163.0 server refuses it (observed: ``-32602`` with ``input_error_code``)."""
    if chars <= MAX_INPUT_CHARS:
        return None
    data = {
        "input_error_code": "input_too_large",
        "max_chars": MAX_INPUT_CHARS,
        "actual_chars": chars,
    }
    return -32602, f"Input exceeds the maximum length of {MAX_INPUT_CHARS} characters.", data


def scripted_refusal(turn: dict[str, Any] | None) -> tuple[int, str, Any] | None:
    """(code, message, data) when the chosen turn is a scripted refusal (its first op)."""
    ops = turn["ops"] if turn is not None else ()
    if ops and ops[0][0] == "refuse":
        _, code, message, data = ops[0]
        return code, message, data
    return None


def refusal_text(method: str, refused: tuple[int, str, Any]) -> str:
    """How ``codex exec`` reports a refused app-server request on stderr (observed)."""
    code, message, data = refused
    from stuntset.doubles.cli._runtime import dumps

    tail = "" if data is None else f", data: {dumps(data)}"
    return f"Error: {method}: {method} failed: {message} (code {code}){tail}\n"


def text_of(output: Any) -> str:
    """A tool result as the text a command printed or an MCP tool returned."""
    if isinstance(output, str):
        return output
    from stuntset.doubles.cli._runtime import dumps

    return dumps(output)


# --- codex's retries of a failed model request --------------------------------------------

#: codex's retries of a failed model request, unless the model provider in use sets them.
DEFAULT_REQUEST_RETRIES = 4
DEFAULT_STREAM_RETRIES = 5
#: The first retry's backoff (codex: 200 ms, doubling per attempt); the fake's clock advances
#: by it, nothing waits.
_BACKOFF_MS = 200
#: What codex-cli 0.163.0 says for an HTTP 500 from the model API, whatever its body (the
#: model double's answer to a request no scripted turn answers, too).
HIGH_DEMAND = "We\u2019re currently experiencing high demand, which may cause temporary errors."


def config_path(env: dict[str, str]) -> str:
    """Where codex reads its ``config.toml``: ``$CODEX_HOME``, else ``$HOME/.codex``."""
    home = env.get("CODEX_HOME") or env.get("HOME", "") + "/.codex"
    return home.rstrip("/") + "/config.toml"


def config_matters(env: dict[str, str], options: list[str], user_config: bool = True) -> bool:
    """Whether codex's configuration may differ from its defaults in what the fake acts on:
    a ``config.toml`` to read, or a ``-c`` option about model providers or profiles. Without,
    the fake does not load ``config`` at all (its import is about 0.4 ms of a fake spawn of
    about 8 ms)."""
    import posix

    keys = ("model_provider", "profile")
    if any(str(option).lstrip().startswith(keys) for option in options):
        return True
    if not user_config:
        return False
    try:
        posix.stat(config_path(env))
    except OSError:
        return False
    return True


class Retries:
    """How far codex has got retrying the model request in progress after a 5xx: silently
    while ``request_max_retries`` last, then up to ``stream_max_retries`` more attempts, each
    announced ("Reconnecting... n/m") and each with its own silent retries. Both modes use it:
    ``exec`` writes the notice as an ``error`` line, ``app-server`` as an ``error``
    notification with ``willRetry``."""

    def __init__(self, limits: tuple[int, int]) -> None:
        self.requests, self.streams = limits
        self.silent = 0
        self.announced = 0

    def reset(self) -> None:
        """A model response completed: the next failure starts counting afresh."""
        self.silent = self.announced = 0

    def next(self, streams: bool = False) -> tuple[float, str | None] | None:
        """The next retry of the request that just failed: (the backoff before it, in seconds;
        the "Reconnecting... n/m" notice, or None for a silent retry); None once spent.
        ``streams``: a failure codex retries only as a stream (a broken model stream, a 401:
        no silent retries, observed)."""
        if self.silent < self.requests and not streams:
            self.silent += 1
            attempt, notice = self.silent, None
        elif self.announced < self.streams:
            self.announced += 1
            self.silent = 0
            attempt = self.announced
            notice = f"Reconnecting... {attempt}/{self.streams}"
        else:
            return None
        return _BACKOFF_MS * 2 ** (attempt - 1) / 1000, notice
