"""Hypothesis strategies over the failure space, and properties to judge an app with them.

``scripts(base)`` draws a script from the app's happy conversation ``base`` (one model
response a turn) with faults inserted: fault kind × position (before the first byte, after k
events, inside tool-call arguments, between a tool call and its result, on turn n) × retries
(a fault turn played ``times`` requests in a row), and ``framings()`` the SSE framing stress,
constrained to what the target double can
play (``wire``: a model wire's name, ``claude`` or ``codex``, or a ``Wire``; default: every
model wire). Scripts are data,
so Hypothesis shrinks them: fewer faults, earlier turns, simpler kinds, fewer retries.

``judge(...)`` runs the ready-made properties over one example: the app never hangs
(bounded), ends in one of its declared outcomes, does not report a partial answer as complete,
leaks no stream, and breaks no resilience rule. On a failure it raises ``FuzzFailure``
whose message has the minimal script as TOML (``stuntset script check`` reads it), the file
it was written to, the command that replays it and the ``@example`` that pins it.

``CI`` is a settings profile for CI: derandomized, bounded, no deadline (register it with
``settings.load_profile("stuntset-ci")``). Needs the ``hypothesis`` extra.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from stuntset.errors import FuzzFailure, MissingExtra, UsageError

try:
    import hypothesis
except ImportError as missing:  # hypothesis is the `hypothesis` extra, not a base dependency
    raise MissingExtra(
        "stuntset.strategies needs hypothesis, which is not installed: "
        "pip install 'stuntset[hypothesis]'"
    ) from missing
from hypothesis import strategies as st

from stuntset.script import (
    AuthExpired,
    Exit,
    Garbage,
    HttpError,
    MalformedJson,
    Overloaded,
    RateLimit,
    Script,
    Stall,
    Step,
    StreamCut,
    ToolCall,
    ToolResult,
    Turn,
    Wire,
)

__all__ = [
    "CI",
    "FAULT_KINDS",
    "POSITIONS",
    "BrokenProperty",
    "FuzzFailure",
    "dumps_script_toml",
    "faults",
    "framings",
    "judge",
    "reset",
    "scripts",
]

#: The positions a fault can take in a conversation.
POSITIONS = (
    "before_first_byte",  # the request gets no good reply at all: a status, no response
    "after_events",  # the reply streams k events, then breaks
    "inside_tool_arguments",  # a tool call's argument fragments are cut
    "between_call_and_result",  # the request carrying a tool result meets the fault
)
#: Fault kinds by where they can happen.
FAULT_KINDS = {
    "before_first_byte": ("rate_limit", "overloaded", "http_error", "auth_expired", "reset"),
    "after_events": ("stream_cut", "malformed_json", "garbage", "stall"),
}
_STATUSES = (400, 401, 403, 404, 500, 502, 503)

CI = hypothesis.settings(
    derandomize=True,
    max_examples=60,
    deadline=None,
    database=None,
    print_blob=False,
    suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture],
)
hypothesis.settings.register_profile("stuntset-ci", CI)


class _Renders(Protocol):
    """What a target double declares: whether it can play a script (``ScriptError`` if not)."""

    def check(self, script: Script) -> Script: ...


class _ModelWires:
    """Every model wire at once (``scripts``' default target): a script must render on each."""

    name = "every model wire"

    def check(self, script: Script) -> Script:
        from stuntset.wires import check_script

        return check_script(script)


def _wire_of(wire: str | Wire | None) -> _Renders:
    if wire is None:
        return _ModelWires()
    if isinstance(wire, Wire):
        return wire
    if wire == "claude":
        from stuntset.doubles.cli.claude import CLAUDE_WIRE

        return CLAUDE_WIRE
    if wire == "codex":
        from stuntset.doubles.cli.codex import CODEX_WIRE

        return CODEX_WIRE
    from stuntset.wires import MODEL_WIRES

    for declared in MODEL_WIRES:
        if declared.name == wire:
            return declared
    names = [w.name for w in MODEL_WIRES] + ["claude", "codex"]
    raise UsageError(f"wire={wire!r}: not a wire stuntset knows; one of {names}")


def faults(position: str = "before_first_byte") -> st.SearchStrategy[Step]:
    """One fault step that can happen at ``position`` (``POSITIONS``)."""
    if position in ("before_first_byte", "between_call_and_result"):
        return st.one_of(
            st.just(RateLimit()),
            st.just(Overloaded()),
            st.sampled_from(_STATUSES).map(lambda status: HttpError(status=status)),
            st.just(AuthExpired()),
            st.just(Exit(reset=True)),
        )
    if position in ("after_events", "inside_tool_arguments"):
        return st.one_of(
            st.integers(0, 8).map(lambda k: StreamCut(after_events=k)),
            st.just(MalformedJson()),
            st.just(Garbage()),
            st.just(Stall()),
        )
    raise UsageError(f"position={position!r}: one of {list(POSITIONS)}")


@dataclass(frozen=True)
class _Insert:
    position: str
    turn: int
    fault: Step
    times: int


def _tool_turns(base: Sequence[Turn]) -> list[int]:
    return [i for i, t in enumerate(base) if any(isinstance(s, ToolCall) for s in t.steps)]


@st.composite
def _inserts(draw: st.DrawFn, base: Sequence[Turn], max_retries: int) -> _Insert:
    positions = ["before_first_byte", "after_events"]
    tools = _tool_turns(base)
    if tools:
        positions += ["inside_tool_arguments", "between_call_and_result"]
    position = draw(st.sampled_from(positions))
    if position == "inside_tool_arguments":
        n = draw(st.sampled_from(tools))
        call = next(s for s in base[n].steps if isinstance(s, ToolCall))
        # the first event opens the call, then its argument fragments stream
        fault: Step = StreamCut(after_events=draw(st.integers(1, call.fragments + 1)))
    elif position == "between_call_and_result":
        n = draw(st.sampled_from([i + 1 for i in tools]))  # may be past the last turn
        fault = draw(faults("before_first_byte"))
    else:
        n = draw(st.integers(0, len(base) - 1))
        fault = draw(faults(position))
    times = draw(st.integers(1, max_retries))
    return _Insert(position, n, fault, times)


def _build(base: Sequence[Turn], inserts: Iterable[_Insert], seed: int) -> Script:
    by_turn: dict[int, list[_Insert]] = {}
    for insert in inserts:
        by_turn.setdefault(insert.turn, []).append(insert)
    turns: list[Turn] = []
    for n, turn in enumerate(base):
        for insert in by_turn.get(n, []):
            if insert.position in ("before_first_byte", "between_call_and_result"):
                steps: tuple[Step, ...] = (insert.fault,)
            else:  # the turn's own steps, broken where the fault says
                steps = (*[s for s in turn.steps if not isinstance(s, ToolResult)], insert.fault)
            turns.append(Turn(steps=steps, times=insert.times))
        turns.append(turn)
    for insert in by_turn.get(len(base), []):  # after the last turn: the next request's fault
        turns.append(Turn(steps=(insert.fault,), times=insert.times))
    return Script(turns=tuple(turns), seed=seed, name="fuzzed")


def scripts(
    base: Script | Sequence[Turn],
    *,
    wire: str | Wire | None = None,
    max_faults: int = 2,
    max_retries: int = 3,
    truncate: bool = True,
) -> st.SearchStrategy[Script]:
    """Scripts: ``base``'s turns (one model response each, played in order) with up to
    ``max_faults`` faults inserted, each played on ``1..max_retries`` requests in a row.
    With ``truncate`` the conversation may also stop early (the double then answers the
    next request with a 500 marked ``x-should-retry: false``), so a failure shrinks to the
    fewest turns that show it. Every drawn script renders on ``wire`` (a model wire's name,
    ``claude``, ``codex`` or a ``Wire``; default: every model wire)."""
    turns = list(base.turns if isinstance(base, Script) else base)
    if not turns:
        raise UsageError("scripts(base): base needs at least one turn (the app's happy path)")
    if max_faults < 0 or max_retries < 1:
        raise UsageError(f"max_faults={max_faults}, max_retries={max_retries}: need >= 0 and >= 1")
    return _scripts(turns, _wire_of(wire), max_faults, max_retries, truncate)


@st.composite
def _scripts(
    draw: st.DrawFn,
    turns: list[Turn],
    target: _Renders,
    max_faults: int,
    max_retries: int,
    truncate: bool,
) -> Script:
    if truncate and len(turns) > 1:
        turns = turns[: draw(st.integers(1, len(turns)))]
    inserts = draw(st.lists(_inserts(turns, max_retries), min_size=0, max_size=max_faults))
    script = _build(turns, inserts, seed=0)
    hypothesis.assume(_renders(target, script))
    return script


def _renders(wire: _Renders, script: Script) -> bool:
    from stuntset.errors import ScriptError

    try:
        wire.check(script)
    except ScriptError:
        return False
    return True


def framings(*, bad_gzip: bool = False) -> st.SearchStrategy[Any]:
    """SSE framing stress (``stuntset.Framing``: line endings, tiny writes, keep-alive
    comments, unknown events, multi-line data, a repeated first event; ``bad_gzip`` too if
    asked), shrinking towards plain framing. Give one to ``reset(double, script, framing=)``."""
    from stuntset.wires import Framing

    return st.builds(
        Framing,
        line_ending=st.sampled_from(["\n", "\r\n", "\r"]),
        write_size=st.none() | st.integers(1, 64),
        keepalive=st.booleans(),
        unknown_events=st.booleans(),
        multiline_data=st.booleans(),
        repeat_first_event=st.booleans(),
        bad_gzip=st.booleans() if bad_gzip else st.just(False),
    )


def reset(double: Any, script: Script, *, framing: Any = None) -> Any:
    """Make ``double`` fresh for one example and return what the app should use.

    A model double (a ``stand_in`` or ``ModelDouble``): it plays ``script`` from its start
    and forgets the previous example's requests (``framing``: a ``Framing`` for its streams
    from now on, e.g. drawn from ``framings()``); returned as given. A fake CLI fixture
    (``fake_claude`` / ``fake_codex``): ``script`` is installed as a fresh fake (its unused
    turns allowed) and that ``InstalledCli`` is returned: point the app at its ``path`` and
    judge it, not the fixture (which holds every example's fakes)."""
    if callable(double) and hasattr(double, "_installed"):
        return double(script, allow_unused_turns=True)
    inner = getattr(double, "double", double)
    if framing is not None:  # every stream from now on (PLAIN_FRAMING to go back)
        from stuntset.wires import PLAIN_FRAMING

        inner.framing = framing
        inner._templates_on = framing == PLAIN_FRAMING
    inner.play(script)
    inner.journal.reset()
    with inner._lock:
        inner._unanswered.clear()
    return double


# --- writing a script back as TOML ---------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = [f"{_key(k)} = {_toml_value(v)}" for k, v in value.items() if v is not None]
        return "{ " + ", ".join(items) + " }"
    raise UsageError(f"cannot write {value!r} as TOML")


def _key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def dumps_script_toml(script: Script) -> str:
    """``script`` as TOML that ``load_script`` and ``stuntset script check`` read back."""
    from stuntset.script import dumps_script

    data = json.loads(dumps_script(script))
    lines: list[str] = []
    for key in ("name", "seed"):
        if data.get(key) is not None:
            lines.append(f"{key} = {_toml_value(data[key])}")
    for turn in data.get("turns", []):
        lines.append("")
        lines.append("[[turns]]")
        for key, value in turn.items():
            if key != "steps" and value is not None:
                lines.append(f"{_key(key)} = {_toml_value(value)}")
        steps = turn.get("steps", [])
        lines.append("steps = [")
        lines.extend(f"  {_toml_value(step)}," for step in steps)
        lines.append("]")
    return "\n".join(lines) + "\n"


# --- the properties ------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokenProperty:
    """A broken property: its ``name`` and what was seen."""

    name: str
    message: str


def judge(
    app: Callable[[], Any],
    double: Any,
    script: Script,
    *,
    outcomes: Iterable[str],
    timeout: float = 10.0,
    outcome_of: Callable[[Any], str] = lambda result: str(getattr(result, "outcome", result)),
    save_to: str | Path | None = None,
    replay: str | None = None,
    leaks: Iterable[str] = ("streams", "processes"),
    **rules: Any,
) -> Any:
    """Run ``app()`` (the app's run over ``double``, already ``reset`` to ``script``) and
    check the properties: it ends within ``timeout`` seconds (``never_hangs``), in one of
    ``outcomes`` (``declared_outcome``; ``outcome_of(result)``, default ``result.outcome``),
    a partial answer is not reported as ``completed`` (``no_partial_as_complete``: a cut,
    stalled or broken stream not retried), nothing of ``leaks`` (kinds of
    ``check_no_leaks``: the double's streams, child processes) is left open (``no_leak``),
    and no resilience rule is broken (``rules``: the options of ``check_resilience``).
    Returns ``app()``'s result; raises ``FuzzFailure``.

    ``save_to``: a folder to write the failing script to (``fuzzed-<hash>.toml``);
    ``replay``: the command that replays a saved script (``{path}`` is replaced)."""
    __tracebackhide__ = True
    from stuntset.checks import check_no_leaks, resilience_verdicts, within
    from stuntset.errors import ResourceLeak, WaitTimeout

    declared = set(outcomes)
    broken: list[BrokenProperty] = []
    result: Any = None
    hung = False
    try:
        with (
            check_no_leaks(kinds=leaks, where="the app's run"),
            within(timeout, what="the app's run"),
        ):
            result = app()
    except WaitTimeout:
        hung = True
        broken.append(BrokenProperty("never_hangs", f"the app did not end within {timeout:g} s"))
    except ResourceLeak as leak:
        broken.append(BrokenProperty("no_leak", " ".join(str(leak).split())))
    if not hung:
        outcome = outcome_of(result)
        if outcome not in declared:
            broken.append(
                BrokenProperty(
                    "declared_outcome",
                    f"the app ended in {outcome!r}, not one of {sorted(declared)}",
                )
            )
        inner = getattr(double, "double", double)
        for verdict in resilience_verdicts(inner, outcome=_judged(outcome), **rules):
            rule = verdict.rule
            name = "no_partial_as_complete" if rule == "cut_stream_swallowed" else rule
            broken.append(BrokenProperty(name, verdict.message))
        if hasattr(inner, "journal"):
            broken.extend(_partial(inner, outcome))
    if broken:
        raise FuzzFailure(_report(broken, script, save_to, replay))
    return result


def _judged(outcome: str) -> Any:
    return outcome if outcome in ("completed", "error") else None


def _partial(double: Any, outcome: str) -> list[BrokenProperty]:
    """A broken stream (malformed, garbage, stalled) as the last reply while the app says it
    completed (cut streams are the resilience rule's)."""
    if outcome != "completed":
        return []
    from stuntset.wires import Stall

    exchanges = double.journal.exchanges()
    if not exchanges:
        return []
    entry, reply = exchanges[-1]
    played = getattr(double, "player", None)
    steps: tuple[Any, ...] = ()
    if played is not None and entry.turn is not None:
        steps = double.script.turns[entry.turn].steps
    bad = next((s for s in steps if isinstance(s, MalformedJson | Garbage | Stall)), None)
    if bad is None and reply is not None and any(isinstance(a, Stall) for a in reply.actions):
        bad = Stall()
    if bad is None:
        return []
    return [
        BrokenProperty(
            "no_partial_as_complete",
            f"request #{entry.index}'s reply was broken ({type(bad).__name__}) and the app "
            f"reported a complete answer",
        )
    ]


def _report(
    broken: list[BrokenProperty], script: Script, save_to: str | Path | None, replay: str | None
) -> str:
    toml = dumps_script_toml(script)
    lines = [f"the app broke {len(broken)} property(ies) on this script:"]
    lines += [f"  {v.name}: {v.message}" for v in broken]
    lines += ["", "the script (TOML; `stuntset script check FILE` reads it):", toml.rstrip()]
    if save_to is not None:
        import hashlib

        folder = Path(save_to)
        folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha1(toml.encode()).hexdigest()[:10]
        path = folder / f"fuzzed-{digest}.toml"
        path.write_text(toml)
        lines += ["", f"written to {path}"]
        if replay is not None:
            lines.append(f"replay: {replay.format(path=path)}")
        lines.append(f"pin it: @example(script=load_script({str(path)!r}))")
    return "\n".join(lines)
