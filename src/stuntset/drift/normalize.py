"""What of a run is compared: each normalized event reduced to the fields that say what
happened, none of the ones that name or time it.

Dropped everywhere: ``run_id``, ``ts``, ``seq`` and every id (``session_id``, ``item_id``,
``tool_call_id``, ``request_id``): each program mints its own. Dropped per kind:
``run.started``'s ``provider``/``model`` (the fake does not echo the model) and ``usage``'s
``cost`` (the real ``claude`` prices the tokens, the fake does not). ``tool.completed``'s
``output`` is compared (drift plays the binaries' own tools in a working directory laid out
so that the real tool prints the scripted result: ``native``); the working directory itself
is written ``$CWD``. ``run.crashed``'s ``message`` is free text (request ids, paths): what is
compared is its *class* (``message_class``: ``api error 401``, ``status 429``, ``not
found``…), which is what an app matching the message would see. Consecutive deltas of one
kind are joined into one step: how a program chunks text is not behaviour.

Parallel tool calls are compared as a set (``_calls_as_a_set``): a run of consecutive
``tool.started`` / ``tool.completed`` steps in which every call started also completed is
written as its calls, each started then completed, in the order of their spelt-out steps.
Which of two calls the model asked for at once starts or ends first is the runtime's timing,
not behaviour an app can rely on; what each call was and what it returned is compared whole.

What an app reads beyond the events is the last step, ``result`` (``result_step``): the
fields of the run's final result as its adapter read them (claude's ``ResultMessage``:
``subtype``, ``is_error``, ``api_error_status``, ``usage`` present; codex's
``turn/completed``: ``status``, ``error`` info, ``usage`` reported; exec's last event:
``status``, ``usage``). A side whose run ended without one has no such step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from stuntset.events import Event, to_builtins

__all__ = [
    "Step",
    "describe",
    "message_class",
    "normalize",
    "result_label",
    "result_step",
    "short",
    "spell",
]

#: One normalized step: its ``type`` first, then the compared fields.
Step = dict[str, Any]

_KEPT: dict[str, tuple[str, ...]] = {
    "run.started": (),
    "message.delta": ("text",),
    "message.completed": ("text",),
    "reasoning.delta": ("text",),
    "reasoning.completed": ("text",),
    "tool.started": ("name", "input"),
    "tool.completed": ("output", "is_error"),
    "approval.requested": ("tool",),
    "approval.resolved": ("decision",),
    "input.requested": ("prompt",),
    "input.resolved": ("text",),
    "usage": ("input_tokens", "output_tokens"),
    "run.completed": ("stop_reason",),
    "run.crashed": ("kind", "retryable", "message"),
    "run.killed": (),
}
_DELTAS = ("message.delta", "reasoning.delta")


def normalize(events: Iterable[Event], cwd: str = "") -> list[Step]:
    """The steps ``events`` compare by (see the module docs); ``cwd``, the program's working
    directory, is written ``$CWD`` wherever it appears."""
    steps: list[Step] = []
    calls: list[str | None] = []
    for event in events:
        raw = _relative(to_builtins(event), cwd) if cwd else to_builtins(event)
        kind = str(raw["type"])
        step: Step = {"type": kind}
        for name in _KEPT.get(kind, ()):
            step[name] = raw.get(name, _DEFAULTS.get(name))
        if kind == "run.crashed":
            step["message"] = message_class(str(step["message"] or ""))
        if kind in _DELTAS and steps and steps[-1]["type"] == kind:
            steps[-1]["text"] += step["text"]
            continue
        steps.append(step)
        calls.append(str(raw["tool_call_id"]) if kind in _TOOL_STEPS else None)
    return _calls_as_a_set(steps, calls)


_TOOL_STEPS = ("tool.started", "tool.completed")


def _calls_as_a_set(steps: list[Step], calls: list[str | None]) -> list[Step]:
    """``steps`` with each run of tool steps of two or more calls, every one of them both
    started and completed in the run, rewritten as its calls (started, completed) in the
    order of their spelt-out steps; ``calls[i]`` is step ``i``'s tool call id."""
    out: list[Step] = []
    i = 0
    while i < len(steps):
        end = i
        while end < len(steps) and calls[end] is not None:
            end += 1
        if end == i:
            out.append(steps[i])
            i += 1
            continue
        out.extend(_as_a_set(steps[i:end], calls[i:end]))
        i = end
    return out


def _as_a_set(run: list[Step], ids: list[str | None]) -> list[Step]:
    started: dict[str | None, Step] = {}
    completed: dict[str | None, Step] = {}
    for step, call in zip(run, ids, strict=True):
        side = started if step["type"] == "tool.started" else completed
        if call in side:
            return run
        side[call] = step
    if len(started) < 2 or started.keys() != completed.keys():
        return run
    pairs = sorted((spell(started[c]), spell(completed[c]), c) for c in started)
    return [step for _, _, c in pairs for step in (started[c], completed[c])]


#: A crash message's class: the first pattern it matches (``{0}``: the pattern's group).
_MESSAGE_CLASSES = (
    ("api error {0}", re.compile(r"API Error: (\d{3})")),
    ("status {0}", re.compile(r"status:? (\d{3})")),
    ("not found", re.compile(r"not found|No such file", re.I)),
    ("high demand", re.compile(r"high demand", re.I)),
    ("not json", re.compile(r"JSON|decode", re.I)),
    ("closed", re.compile(r"closed|exited|exit code", re.I)),
    ("timeout", re.compile(r"timed? ?out", re.I)),
)


def message_class(message: str) -> str:
    """The class of a crash message (see ``_MESSAGE_CLASSES``), ``other`` when none fits."""
    for name, pattern in _MESSAGE_CLASSES:
        found = pattern.search(message)
        if found:
            return name.format(*found.groups())
    return "other"


def _relative(value: Any, cwd: str) -> Any:
    if isinstance(value, str):
        return value.replace(cwd, "$CWD")
    if isinstance(value, dict):
        return {k: _relative(v, cwd) for k, v in value.items()}
    if isinstance(value, list):
        return [_relative(v, cwd) for v in value]
    return value


_DEFAULTS: dict[str, Any] = {
    "is_error": False,
    "retryable": False,
    "input": {},
    "stop_reason": "end_turn",
}


def describe(step: Step | None) -> str:
    """``step`` in one line: ``tool.started name='Bash' input={...}``; ``(nothing)``."""
    if step is None:
        return "(nothing)"
    fields = " ".join(f"{k}={short(v)}" for k, v in step.items() if k != "type")
    return f"{step['type']} {fields}".rstrip()


def spell(step: Step) -> str:
    """``step`` spelt out whole, as the allowlist writes it:
    ``run.crashed kind='http' retryable=True`` (``describe`` without cutting values)."""
    fields = " ".join(f"{k}={v!r}" for k, v in step.items() if k != "type")
    return f"{step['type']} {fields}".rstrip()


def short(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def result_step(fields: dict[str, Any]) -> list[Step]:
    """The ``result`` step of a run's final result ``fields`` (none when it had none)."""
    return [{"type": "result", **fields}] if fields else []


def result_label(fields: dict[str, Any]) -> str:
    """A final result in a few words, for the table: ``success, usage``, ``error_during_execution,
    is_error, api 500, no usage``, ``failed, responseStreamDisconnected 401, no usage``."""
    words: list[str] = []
    for name, value in fields.items():
        if name == "usage":
            words.append("usage" if value else "no usage")
        elif name == "is_error":
            if value:
                words.append("is_error")
        elif name == "api_error_status":
            if value is not None:
                words.append(f"api {value}")
        elif value is not None:
            words.append(str(value))
    return ", ".join(words)
