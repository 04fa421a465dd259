"""The scenario catalog: named, parameterised scripts, each defined once and played on every
double and at every layer.

``all()`` lists them, ``get(name)`` finds one (with a did-you-mean), ``build(name, **params)``
makes its script. Each scenario's docstring says what a correct client must do when it meets
it; the first line is its one-line description.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from stuntset.errors import ScriptError, UnknownScenario, UsageError
from stuntset.script import (
    ApprovalRequest,
    AuthExpired,
    Delay,
    Exit,
    Garbage,
    InputRequest,
    MalformedJson,
    OutOfOrder,
    Overloaded,
    RateLimit,
    Reasoning,
    Script,
    SpawnFailure,
    Stall,
    StreamCut,
    Text,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
    load_script,
)

__all__ = [
    "Scenario",
    "all",
    "build",
    "build_from_route",
    "coerce_params",
    "get",
    "names",
    "parameters",
]

#: Bounds on a parameter given from outside Python (a route, the control API): a long-running
#: server builds what a client asks for, so ``long_stream;deltas=10000000000`` must not
#: exhaust its memory.
MAX_INT_PARAM = 10_000
MAX_FLOAT_PARAM = 3600.0
MAX_TEXT_PARAM = 10_000


class Scenario(msgspec.Struct, frozen=True):
    """A catalog entry: ``build(**params)`` makes the script."""

    name: str
    description: str
    guidance: str
    build: Callable[..., Script]
    fault: bool

    def __call__(self, **params: Any) -> Script:
        try:
            inspect.signature(self.build).bind(**params)
        except TypeError as error:
            raise UsageError(
                f"scenario {self.name!r} takes {inspect.signature(self.build)}; {error}"
            ) from None
        return self.build(**params)


_CATALOG: dict[str, Scenario] = {}


# --- a script named as a marker names it -------------------------------------------------------


def resolve_script_path(
    spec: str | Path, base: Path | None, where: str, *, kind: str = "script"
) -> Path:
    """Where a marker's script file is: an absolute path as given; a relative one against
    ``base`` (the test file's directory) first, then the current directory (where earlier
    versions looked, kept so existing suites still find their files). ``ScriptError`` naming
    every place looked when none holds it."""
    __tracebackhide__ = True
    path = Path(spec)
    if path.is_absolute():
        return path
    places = list(dict.fromkeys([*([base / path] if base is not None else []), Path.cwd() / path]))
    for place in places:
        if place.is_file():
            return place
    raise ScriptError(
        f"{where}: no {kind} file {str(spec)!r}; looked in "
        + ", ".join(str(place) for place in places)
        + " (a relative path is resolved against the test file's directory, then the current "
        "directory)"
    )


def script_from(
    spec: Any, params: Mapping[str, Any], where: str, base: Path | None = None
) -> Script:
    """A script from a marker argument: a ``Script``, a scenario name, or a file path (a
    relative path resolved by ``resolve_script_path`` against ``base``, the test file's
    directory, then the current directory)."""
    __tracebackhide__ = True
    if isinstance(spec, Script):
        if params:
            raise UsageError(f"{where}: scenario parameters {sorted(params)} given with a Script")
        return spec
    if isinstance(spec, Path) or (isinstance(spec, str) and spec.endswith((".toml", ".json"))):
        return load_script(resolve_script_path(spec, base, where))
    if isinstance(spec, str):
        return build(spec, **params)
    raise UsageError(
        f"{where}: expected a Script, a scenario name or a .toml/.json path, got {spec!r}"
    )


def _scenario(*, fault: bool) -> Callable[[Callable[..., Script]], Callable[..., Script]]:
    def register(function: Callable[..., Script]) -> Callable[..., Script]:
        doc = inspect.cleandoc(function.__doc__ or "")
        description, _, guidance = doc.partition("\n")
        _CATALOG[function.__name__] = Scenario(
            function.__name__, description.strip(), guidance.strip(), function, fault
        )
        return function

    return register


def _named(name: str, *turns: Turn | list[Any]) -> Script:
    return Script.of(*turns, name=name)


# --- the happy paths -------------------------------------------------------------------------


@_scenario(fault=False)
def happy_path(text: str = "Hello! How can I help you today?") -> Script:
    """One turn of plain text, then usage, then a normal end.

    A correct client shows the text as it streams, assembles the same text from the deltas as
    the completed message says, records the usage and ends the turn as completed."""
    return _named("happy_path", [Text(text), Usage(input_tokens=12, output_tokens=9)])


@_scenario(fault=False)
def tool_use(
    tool: str = "read_file",
    input: dict[str, Any] | None = None,
    output: str = "hello from a.txt",
) -> Script:
    """The model calls a tool, gets its result, and answers with it.

    A correct client runs (or shows) the tool call with its complete arguments, sends the
    result back under the same tool-call id, and ends the turn only after the final answer.
    On model wires this is two responses: the tool call, then the answer to the tool result."""
    return _named(
        "tool_use",
        [
            Text("Let me look at that file."),
            ToolCall(tool, input if input is not None else {"path": "a.txt"}),
            ToolResult(output),
            Text(f"The file says: {output}"),
            Usage(input_tokens=40, output_tokens=18),
        ],
    )


@_scenario(fault=False)
def needs_approval(tool: str = "bash", command: str = "rm -rf build/") -> Script:
    """The agent wants to run a risky tool and waits for permission.

    A correct client surfaces the approval request, blocks the tool until the user decides,
    sends the decision back under the request's id, and on a denial reports the tool call as
    refused rather than run."""
    return _named(
        "needs_approval",
        [
            Text("I will clean the build directory."),
            ToolCall(tool, {"command": command}),
            ApprovalRequest(),
            ToolResult(""),
            Text("Done: the build directory is clean."),
            Usage(input_tokens=30, output_tokens=14),
        ],
    )


@_scenario(fault=False)
def input_request(prompt: str = "Which branch should I deploy?") -> Script:
    """The agent asks the user a question mid-turn and continues with the answer.

    A correct client shows the question, waits for the user's answer, sends it back under the
    request's id, and keeps the turn open (not completed, not crashed) while it waits."""
    return _named(
        "input_request",
        [
            Text("Before I deploy, I need one detail."),
            InputRequest(prompt),
            Text("Thanks, deploying now."),
            Usage(input_tokens=25, output_tokens=12),
        ],
    )


@_scenario(fault=False)
def interleaved_streaming() -> Script:
    """Reasoning, text and two parallel tool calls interleave within one turn.

    A correct client keeps each item separate by its id (reasoning apart from text, each tool
    call with its own arguments and result) and never merges or reorders their content."""
    return _named(
        "interleaved_streaming",
        [
            Reasoning("The user wants both files compared. I should read them in parallel."),
            Text("Reading both files."),
            ToolCall("read_file", {"path": "a.txt"}),
            ToolCall("read_file", {"path": "b.txt"}),
            ToolResult("alpha"),
            ToolResult("beta"),
            Reasoning("They differ in one word."),
            Text("a.txt says alpha, b.txt says beta."),
            Usage(input_tokens=60, output_tokens=30),
        ],
    )


@_scenario(fault=False)
def long_stream(deltas: int = 400) -> Script:
    """A long answer streamed as many small deltas.

    A correct client keeps up without buffering the whole answer first, loses no delta, and
    assembles exactly the completed text."""
    text = "".join(f"word{i} " for i in range(deltas)).rstrip()
    return _named("long_stream", [Text(text), Usage(input_tokens=10, output_tokens=deltas)])


@_scenario(fault=False)
def multi_turn(turns: int = 3) -> Script:
    """Several turns in one session, each answering the next prompt.

    A correct client sends each prompt in the same session (resuming it by its handle), keeps
    the earlier turns as context, and sees each turn end on its own."""
    return _named(
        "multi_turn",
        *[
            [Text(f"Answer number {i + 1}."), Usage(input_tokens=10 * (i + 1), output_tokens=4)]
            for i in range(turns)
        ],
    )


# --- the failures ----------------------------------------------------------------------------


@_scenario(fault=True)
def spawn_missing(binary: str = "claude") -> Script:
    """The agent runtime cannot be started: its binary is missing.

    A correct client reports a clear, non-retryable start-up error naming the binary, and does
    not hang or retry in a loop."""
    return _named("spawn_missing", [SpawnFailure(f"{binary}: No such file or directory")])


@_scenario(fault=True)
def auth_expired_mid_run() -> Script:
    """Credentials expire in the middle of a run, after a tool call succeeded.

    A correct client stops the run with an authentication error (not retried: retrying the
    same token cannot help), keeps what was already done, and tells the user to re-authenticate.
    The real CLIs do retry the 401 (a CLI double does too), so with one scripted turn their
    retry meets the model double's 500 for a request no turn answers."""
    return _named(
        "auth_expired_mid_run",
        [
            Text("Let me check the repository."),
            ToolCall("list_files", {"path": "."}),
            ToolResult("README.md\nsrc/"),
            AuthExpired(),
        ],
    )


@_scenario(fault=True)
def rate_limited(failures: int = 1, retry_after_ms: int = 1) -> Script:
    """The provider answers 429 with a retry-after, then succeeds.

    A correct client waits as told (with a cap) and retries; with the official SDKs' default of
    2 retries, up to 2 failures recover by themselves and 3 or more surface as a rate-limit
    error."""
    return Script.of(
        Turn(steps=(RateLimit(retry_after_ms=retry_after_ms),), times=failures, name="429"),
        [Text("Sorry for the wait. Here is the answer."), Usage(input_tokens=12, output_tokens=9)],
        name="rate_limited",
    )


@_scenario(fault=True)
def overloaded(failures: int = 1) -> Script:
    """The provider is overloaded (Anthropic 529, OpenAI 503), then recovers.

    A correct client treats it as retryable with backoff, like a 5xx, and gives up with a clear
    error when retries run out."""
    return Script.of(
        Turn(steps=(Overloaded(),), times=failures, name="overloaded"),
        [Text("Back in service. Here is the answer."), Usage(input_tokens=12, output_tokens=9)],
        name="overloaded",
    )


@_scenario(fault=True)
def stream_cut(after_words: int = 5, cli: bool = False) -> Script:
    """The stream stops mid-answer without its terminal event.

    A correct client reports the turn as failed (the partial text is not a complete answer),
    does not wait forever for the rest, and does not blindly resend a half-consumed stream.
    The model API's stream is cut: a CLI double shows what the real CLI does then (it asks
    again). With ``cli=True`` (CLI doubles only) the CLI itself breaks: its own stdout stops
    mid-line and the process exits."""
    words = " ".join(f"partial{i}" for i in range(after_words))
    return _named("stream_cut", [Text(words), StreamCut(cli=cli)])


@_scenario(fault=True)
def malformed_json(cli: bool = False) -> Script:
    """A frame on the wire is not valid JSON.

    A correct client fails the turn with a protocol error that says what was received, and
    does not crash with an unhandled decode error or silently drop the frame. The frame is
    the model API's: a CLI double shows what the real CLI does then (it asks again). With
    ``cli=True`` (CLI doubles only) the CLI itself writes the bad line, then exits."""
    return _named("malformed_json", [Text("Starting the answer"), MalformedJson(cli=cli)])


@_scenario(fault=True)
def garbage_bytes(cli: bool = False) -> Script:
    """Bytes that are not the protocol arrive: an HTML error page, invalid UTF-8, a half line.

    A correct client fails the turn with a protocol error, survives invalid UTF-8 and a
    missing newline, and does not hang waiting for the line to end. The bytes are in the
    model API's stream: a CLI double shows what the real CLI does then (it asks again). With
    ``cli=True`` (CLI doubles only) the CLI itself writes them, then exits."""
    return _named("garbage_bytes", [Text("Starting the answer"), Garbage(cli=cli)])


@_scenario(fault=True)
def out_of_order(cli: bool = False) -> Script:
    """Events arrive in an impossible order (content for an item never started).

    A correct client detects the broken order and fails the turn with a protocol error
    instead of attaching content to the wrong item. The events are the model API's: a CLI
    double shows what the real CLI does then (claude asks again, codex ignores the content).
    With ``cli=True`` (CLI doubles only) the CLI's own events come out of order, then it
    exits."""
    return _named("out_of_order", [OutOfOrder(cli=cli)])


@_scenario(fault=True)
def crash_mid_turn(exit_code: int = 1, cli: bool = False) -> Script:
    """The runtime dies mid-turn, after some output: the model API's connection drops.

    A correct client reports the run as crashed, keeps the partial output for the user, and
    does not report the turn as completed. On a model double the connection is dropped
    mid-response; a CLI double shows what the real CLI does then (it retries, and the model
    double's 500 ends the turn). With ``cli=True`` (CLI doubles only) the CLI process itself
    dies with ``exit_code``, and its client reports the exit code."""
    return _named(
        "crash_mid_turn",
        [
            Text("Working on it"),
            ToolCall("bash", {"command": "make"}),
            ToolResult("building..."),
            Exit(code=exit_code, stderr="fatal: unexpected error", cli=cli),
        ],
    )


@_scenario(fault=True)
def stuck(preamble: str = "Thinking") -> Script:
    """The turn starts and then never finishes: no bytes, no terminal event.

    A correct client bounds the wait itself (a timeout or a user's cancel), then interrupts
    the run and reports it as killed, never hanging forever."""
    return _named("stuck", [Text(preamble), Stall()])


@_scenario(fault=False)
def slow(delay: float = 0.05, first_token_latency: float = 1.0) -> Script:
    """A slow but correct answer: late first token, pauses between deltas.

    A correct client shows progress as it comes, does not time out a stream that is still
    delivering, and ends the turn as completed. Delays run on the clock seam (free under
    the deterministic clock)."""
    return _named(
        "slow",
        [
            Delay(first_token_latency),
            Text("This answer takes its time to arrive.", interval=delay),
            Usage(input_tokens=12, output_tokens=8),
        ],
    )


def names() -> list[str]:
    """Every scenario name, in catalog order."""
    return list(_CATALOG)


def all() -> list[Scenario]:
    """Every scenario, in catalog order."""
    return list(_CATALOG.values())


def get(name: str) -> Scenario:
    """The scenario called ``name``; ``UnknownScenario`` lists the known ones."""
    __tracebackhide__ = True
    try:
        return _CATALOG[name]
    except KeyError:
        close = difflib.get_close_matches(name, _CATALOG, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UnknownScenario(
            f"no scenario named {name!r}.{hint} Known scenarios: {', '.join(_CATALOG)}"
        ) from None


def build(name: str, **params: Any) -> Script:
    """The script of scenario ``name`` with ``params``."""
    __tracebackhide__ = True
    return get(name)(**params)


def parameters(name: str) -> dict[str, Any]:
    """Scenario ``name``'s parameters and their defaults, in order."""
    signature = inspect.signature(get(name).build)
    return {p.name: p.default for p in signature.parameters.values()}


def _kind(default: Any) -> str:
    if isinstance(default, bool):
        return "boolean"
    if isinstance(default, int):
        return "integer"
    if isinstance(default, float):
        return "number"
    if isinstance(default, str):
        return "string"
    return "object"  # ``None``: an optional table (tool_use's input)


def parameter_kinds(name: str) -> dict[str, tuple[str, Any]]:
    """Scenario ``name``'s parameters: their JSON kind and default."""
    return {key: (_kind(default), default) for key, default in parameters(name).items()}


_A = {
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "object": "a JSON object",
}


def _from_text(kind: str, text: str) -> Any:
    if kind == "boolean":
        if text.lower() in ("true", "1", "yes"):
            return True
        if text.lower() in ("false", "0", "no"):
            return False
        raise ValueError("expected true or false")
    if kind == "integer":
        return int(text)
    if kind == "number":
        return float(text)
    if kind == "object":
        return msgspec.json.decode(text)
    return text


def coerce_params(
    name: str, raw: Mapping[str, Any], *, where: str, text: bool = False
) -> dict[str, Any]:
    """``raw`` checked against scenario ``name``'s parameters (names, kinds, bounds), as the
    keywords of ``build``; with ``text`` the values are strings to convert (a route's
    ``failures=2``). ``UsageError`` naming ``where`` and the parameter otherwise."""
    kinds = parameter_kinds(name)
    out: dict[str, Any] = {}
    for key, value in raw.items():
        place = f"{where}.{key}"
        if key not in kinds:
            known = ", ".join(kinds) or "none"
            raise UsageError(
                f"{place}: scenario {name!r} has no parameter {key!r} (its parameters: {known})"
            )
        kind, _ = kinds[key]
        if text:
            try:
                value = _from_text(kind, value)
            except (ValueError, msgspec.DecodeError) as error:
                raise UsageError(f"{place}: {value!r} is not {_A[kind]} ({error})") from None
        ok = {
            "boolean": isinstance(value, bool),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, int | float) and not isinstance(value, bool),
            "string": isinstance(value, str),
            "object": isinstance(value, dict) or value is None,
        }[kind]
        if not ok:
            raise UsageError(f"{place}: expected {_A[kind]}, got {value!r}")
        if kind in ("integer", "number") and not (0 <= value <= MAX_INT_PARAM):
            raise UsageError(f"{place}: {value!r} is out of range (0 to {MAX_INT_PARAM})")
        if kind == "number" and not (value == value and value <= MAX_FLOAT_PARAM):
            raise UsageError(f"{place}: {value!r} is out of range (0 to {MAX_FLOAT_PARAM} s)")
        if kind == "string" and len(value) > MAX_TEXT_PARAM:
            raise UsageError(f"{place}: longer than {MAX_TEXT_PARAM} characters")
        if (
            kind == "object"
            and value is not None
            and len(msgspec.json.encode(value)) > MAX_TEXT_PARAM
        ):
            raise UsageError(f"{place}: larger than {MAX_TEXT_PARAM} bytes as JSON")
        out[key] = float(value) if kind == "number" else value
    return out


def build_from_route(spec: str) -> Script:
    """The script a ``/scenarios/<spec>`` route names: a scenario name and its parameters
    after semicolons (``rate_limited;failures=2;retry_after_ms=10``)."""
    name, *pairs = spec.split(";")
    get(name)
    raw: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise UsageError(
                f"/scenarios/{spec}: {pair!r} is not a parameter (write name=value, as in "
                f"rate_limited;failures=2)"
            )
        raw[key] = value
    where = f"/scenarios/{name}"
    try:
        return build(name, **coerce_params(name, raw, where=where, text=True))
    except ScriptError as error:
        raise UsageError(f"{where}: {error}") from None
