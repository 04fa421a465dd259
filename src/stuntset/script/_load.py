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


class _ScriptFile(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    turns: list[_TurnFile]
    seed: int = 0
    name: str | None = None
    format: str | None = None


_PATH = re.compile(r"`\$(?P<path>[^`]*)`")
_INDEX = re.compile(r"\.turns\[(?P<turn>\d+)\](?:\.steps\[(?P<step>\d+)\])?(?P<rest>.*)")


def _normalize_step(raw: Any, turn: int, step: int, source: str) -> Any:
    if not isinstance(raw, dict) or "kind" in raw:
        return raw
    if len(raw) != 1:
        raise ScriptError(
            f"a step needs a 'kind' (one of {', '.join(STEP_KINDS)}), or the shorthand "
            f"{{ <kind> = <value> }}; got keys {sorted(raw)}",
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


def _known_fields(data: Any, turn: int | None, step: int | None) -> list[str]:
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
            known = _known_fields(data, turn, step)
            text = f"unknown field {unknown.group(1)!r}{_did_you_mean(unknown.group(1), known)}"
            if known:
                text += f"; fields here: {', '.join(known)}"
    return ScriptError(text, source=source, turn=turn, step=step, field=field)


def _build(data: Any, source: str, wire: Wire | None) -> Script:
    data = _normalize(data, source)
    try:
        parsed = msgspec.convert(data, _ScriptFile)
    except msgspec.ValidationError as error:
        raise _validation_error(error, source, data) from None
    turns = tuple(
        Turn(steps=tuple(t.steps), match=t.match, times=t.times, name=t.name) for t in parsed.turns
    )
    script = Script(turns=turns, seed=parsed.seed, name=parsed.name, source=source)
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
    try:
        data = tomllib.loads(raw) if format == "toml" else json.loads(raw)
    except tomllib.TOMLDecodeError as error:
        raise ScriptError(f"not valid TOML: {error}", source=source) from None
    except json.JSONDecodeError as error:
        raise ScriptError(
            f"not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})",
            source=f"{source}:{error.lineno}",
        ) from None
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
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScriptError("no such file", source=str(file)) from None
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
            _TurnFile(steps=list(t.steps), match=t.match, times=t.times, name=t.name)
            for t in script.turns
        ],
        seed=script.seed,
        name=script.name,
    )
    return msgspec.json.encode(data).decode()
