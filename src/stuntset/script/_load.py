"""Scripts as files (TOML or JSON), for use from any language.

::

    name = "weather"
    seed = 7

    [[turns]]
    match = { contains = "weather" }
    steps = [
      { text = "Let me check." },                                   # shorthand: kind = value
      { kind = "tool_call", name = "get_weather", input = { city = "Paris" } },
      { tool_result = "sunny" },
      { text = "It is sunny.", chunks = 3 },
      { usage = { input_tokens = 12, output_tokens = 5 } },
    ]
    rate_limits = { primary = { used_percent = 42, window_minutes = 300 } }   # optional

A ``[rate_limits]`` table at the top sets them for every turn without its own
(``RateLimits``: ``primary`` and ``secondary`` windows, ``credits``).

A step is a table with a ``kind`` and its fields, or the shorthand ``{ <kind> = <value> }``
where the value is the fields table or the step's main field (``text``, ``seconds``…).
Errors name the file, the turn, the step and the field.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

import msgspec

from stuntset.errors import ScriptError
from stuntset.script._limits import RateLimitCredits, RateLimits, RateLimitWindow
from stuntset.script._model import Match, Script, Turn
from stuntset.script._steps import STEP_CLASSES, STEP_KINDS, Step
from stuntset.script._wire import Wire

__all__ = ["dumps_script", "load_script", "loads_script"]

#: The field a shorthand scalar value fills, per kind (``{ delay = 0.5 }``).
_MAIN_FIELD = {
    "text": "text",
    "reasoning": "text",
    "tool_result": "output",
    "approval_request": "tool",
    "input_request": "prompt",
    "delay": "seconds",
    "http_error": "status",
    "auth_expired": "message",
    "rate_limit": "message",
    "overloaded": "message",
    "stream_cut": "after_events",
    "malformed_json": "text",
    "garbage": "data",
    "exit": "code",
    "spawn_failure": "message",
}


class _TurnFile(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    steps: list[Step]
    match: Match | None = None
    times: int = 1
    name: str | None = None
    rate_limits: RateLimits | None = None


class _ScriptFile(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    turns: list[_TurnFile]
    seed: int = 0
    name: str | None = None
    format: str | None = None
    rate_limits: RateLimits | None = None


#: The fields of each table under ``rate_limits``, for "did you mean" on an unknown field.
_LIMIT_FIELDS = {
    "rate_limits": RateLimits,
    "rate_limits.primary": RateLimitWindow,
    "rate_limits.secondary": RateLimitWindow,
    "rate_limits.credits": RateLimitCredits,
}


# Resolve the file structs' annotations now, while this module is in sys.modules: msgspec
# resolves string annotations through sys.modules on first use, and a module dropped from it
# since (pytester's in-process runs restore sys.modules) would fail with a NameError then.
msgspec.convert({"turns": [{"steps": []}]}, _ScriptFile)

_PATH = re.compile(r"`\$(?P<path>[^`]*)`")
_INDEX = re.compile(r"\.turns\[(?P<turn>\d+)\](?:\.steps\[(?P<step>\d+)\])?(?P<rest>.*)")


def _shorthand_kind(raw: dict[str, Any]) -> str | None:
    """The kind of a shorthand step with more fields (``{ text = "hi", chunks = 3 }``): the
    one key that names a kind whose fields cover every other key."""
    found = [
        key
        for key in raw
        if key in STEP_CLASSES
        and not isinstance(raw[key], dict)
        and all(other in STEP_CLASSES[key].__struct_fields__ for other in raw if other != key)
    ]
    return found[0] if len(found) == 1 else None


def _normalize_step(raw: Any, turn: int, step: int, source: str) -> Any:
    if not isinstance(raw, dict) or "kind" in raw:
        return raw
    if len(raw) != 1:
        kind = _shorthand_kind(raw)
        if kind is not None and kind in _MAIN_FIELD:
            rest = {key: value for key, value in raw.items() if key != kind}
            return {"kind": kind, _MAIN_FIELD[kind]: raw[kind], **rest}
        raise ScriptError(
            f"a step needs a 'kind' (one of {', '.join(STEP_KINDS)}), or the shorthand "
            f"{{ <kind> = <value> }} (with more fields of that kind beside it); got keys "
            f"{sorted(raw)}",
            source=source,
            turn=turn,
            step=step,
        )
    ((kind, value),) = raw.items()
    if kind not in STEP_CLASSES:
        raise ScriptError(
            f"unknown step kind {kind!r}{_did_you_mean(kind, STEP_KINDS)}",
            source=source,
            turn=turn,
            step=step,
        )
    if isinstance(value, dict):
        return {"kind": kind, **value}
    if value is True and kind not in _MAIN_FIELD:
        return {"kind": kind}
    if kind not in _MAIN_FIELD:
        raise ScriptError(
            f"{kind} has no main field; write {{ {kind} = {{ field = value }} }} or "
            f"{{ {kind} = true }}",
            source=source,
            turn=turn,
            step=step,
        )
    return {"kind": kind, _MAIN_FIELD[kind]: value}


def _did_you_mean(word: str, choices: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _normalize(data: Any, source: str) -> Any:
    if not isinstance(data, dict):
        raise ScriptError(
            f"a script is a table with 'turns', got {type(data).__name__}", source=source
        )
    turns = data.get("turns")
    if isinstance(turns, list):
        for t_index, raw_turn in enumerate(turns):
            if isinstance(raw_turn, dict) and isinstance(raw_turn.get("steps"), list):
                raw_turn["steps"] = [
                    _normalize_step(raw, t_index, s_index, source)
                    for s_index, raw in enumerate(raw_turn["steps"])
                ]
    return data


def _known_fields(
    data: Any, turn: int | None, step: int | None, field: str | None = None
) -> list[str]:
    if step is None and field in _LIMIT_FIELDS:
        return list(_LIMIT_FIELDS[field].__struct_fields__)
    if turn is None:
        return list(_ScriptFile.__struct_fields__)
    if step is None:
        return list(_TurnFile.__struct_fields__)
    try:
        kind = data["turns"][turn]["steps"][step]["kind"]
        return list(STEP_CLASSES[kind].__struct_fields__)
    except (KeyError, IndexError, TypeError):
        return []


def _validation_error(error: msgspec.ValidationError, source: str, data: Any) -> ScriptError:
    message = str(error)
    found = _PATH.search(message)
    path = found.group("path") if found else ""
    text = re.sub(r"\s*-\s*at\s*$", "", _PATH.sub("", message))
    turn = step = None
    field: str | None = None
    where = _INDEX.match(path)
    if where:
        turn = int(where.group("turn"))
        step = int(where.group("step")) if where.group("step") is not None else None
        field = where.group("rest").lstrip(".") or None
    elif path.strip("."):
        field = path.strip(".")
    if field == "kind" and "Invalid value" in text:
        bad = re.search(r"Invalid value '([^']*)'", text)
        if bad:
            text = f"unknown step kind {bad.group(1)!r}{_did_you_mean(bad.group(1), STEP_KINDS)}"
    elif "unknown field" in text:
        unknown = re.search(r"unknown field `([^`]*)`", text)
        if unknown:
            known = _known_fields(data, turn, step, field)
            text = f"unknown field {unknown.group(1)!r}{_did_you_mean(unknown.group(1), known)}"
            if known:
                text += f"; fields here: {', '.join(known)}"
    return ScriptError(text, source=source, turn=turn, step=step, field=field)


#: Deeper than this, a script is refused (a tool input is a few levels deep; the doubles
#: encode what they are given, and every level costs a frame of recursion somewhere).
MAX_DEPTH = 64


def _check_values(data: Any, source: str) -> None:
    """Refuse what no double can send: strings holding lone surrogates (not encodable as
    UTF-8), integers beyond 64 bits, and nesting deeper than ``MAX_DEPTH``. Errors name the
    place."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_DEPTH:
            raise _place_error(f"nested deeper than {MAX_DEPTH} levels", path, source)
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as error:
                raise _place_error(
                    f"holds a lone surrogate ({value[error.start]!r} at character "
                    f"{error.start}), which cannot be sent as UTF-8",
                    path,
                    source,
                ) from None
        elif isinstance(value, int) and not -(2**63) <= value < 2**63:
            raise _place_error(
                f"the integer {str(value)[:20]}… ({len(str(abs(value)))} digits) is beyond 64 "
                f"bits, more than a double (or a client in another language) can hold",
                path,
                source,
            )
        elif isinstance(value, dict):
            for key, item in value.items():
                stack.append((key, path))
                stack.append((item, (*path, str(key))))
        elif isinstance(value, list):
            stack.extend((item, (*path, index)) for index, item in enumerate(value))


def _place_error(message: str, path: tuple[str | int, ...], source: str) -> ScriptError:
    turn = step = None
    rest = list(path)
    if len(rest) >= 2 and rest[0] == "turns" and isinstance(rest[1], int):
        turn, rest = rest[1], rest[2:]
        if len(rest) >= 2 and rest[0] == "steps" and isinstance(rest[1], int):
            step, rest = rest[1], rest[2:]
    shown = rest if len(rest) <= 6 else [*rest[:3], "…", *rest[-2:]]
    field = ".".join(str(part) if isinstance(part, str) else f"[{part}]" for part in shown)
    return ScriptError(
        message, source=source, turn=turn, step=step, field=field.replace(".[", "[") or None
    )


def _build(data: Any, source: str, wire: Wire | None) -> Script:
    _check_values(data, source)
    data = _normalize(data, source)
    try:
        parsed = msgspec.convert(data, _ScriptFile)
    except msgspec.ValidationError as error:
        raise _validation_error(error, source, data) from None
    turns = tuple(
        Turn(
            steps=tuple(t.steps),
            match=t.match,
            times=t.times,
            name=t.name,
            rate_limits=t.rate_limits,
        )
        for t in parsed.turns
    )
    script = Script(
        turns=turns,
        seed=parsed.seed,
        name=parsed.name,
        source=source,
        rate_limits=parsed.rate_limits,
    )
    return wire.check(script) if wire is not None else script


def loads_script(
    text: str | bytes,
    *,
    format: Literal["toml", "json"] = "toml",
    source: str = "<string>",
    wire: Wire | None = None,
) -> Script:
    """Parse a script from TOML or JSON text; ``wire`` checks that every step renders on it."""
    raw = text.decode() if isinstance(text, bytes) else text
    kind = "TOML" if format == "toml" else "JSON"
    try:
        data = tomllib.loads(raw) if format == "toml" else json.loads(raw)
    except tomllib.TOMLDecodeError as error:
        raise ScriptError(f"not valid TOML: {error}", source=source) from None
    except json.JSONDecodeError as error:
        raise ScriptError(
            f"not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})",
            source=f"{source}:{error.lineno}",
        ) from None
    except RecursionError:
        raise ScriptError(
            f"not a usable {kind} script: nested too deep (a script nests at most "
            f"{MAX_DEPTH} levels)",
            source=source,
        ) from None
    except ValueError as error:  # an integer of more than 4,300 digits
        raise ScriptError(f"not a usable {kind} script: {error}", source=source) from None
    return _build(data, source, wire)


def load_script(path: str | Path, *, wire: Wire | None = None) -> Script:
    """Load a ``.toml`` or ``.json`` script file."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise ScriptError(
            f"unknown script format {suffix or '(no suffix)'!r}: use a .toml or .json file",
            source=str(file),
        )
    if file.exists() and not file.is_file():  # a FIFO would block the read forever
        kind = "a folder" if file.is_dir() else "not a regular file (a FIFO or a device)"
        raise ScriptError(f"it is {kind}, not a script file", source=str(file))
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScriptError("no such file", source=str(file)) from None
    except OSError as error:  # a part of the path is a file, no permission, …
        raise ScriptError(f"cannot read it: {error.strerror or error}", source=str(file)) from None
    except UnicodeDecodeError as error:
        raise ScriptError(
            f"not UTF-8 text ({error.reason} at byte {error.start})", source=str(file)
        ) from None
    return loads_script(
        text, format="toml" if suffix == ".toml" else "json", source=str(file), wire=wire
    )


def dumps_script(script: Script) -> str:
    """The script as JSON that ``loads_script(..., format="json")`` reads back.

    Scripts that hold Python callables (``predicate``, ``function``) cannot be written.
    """
    if script.function is not None or any(t.predicate is not None for t in script.turns):
        raise ScriptError(
            "this script holds Python callables (a function or a predicate), which cannot be "
            "written to a file; use Match data instead",
            source=script.source,
        )
    data = _ScriptFile(
        turns=[
            _TurnFile(
                steps=list(t.steps),
                match=t.match,
                times=t.times,
                name=t.name,
                rate_limits=t.rate_limits,
            )
            for t in script.turns
        ],
        seed=script.seed,
        name=script.name,
        rate_limits=script.rate_limits,
    )
    return msgspec.json.encode(data).decode()
