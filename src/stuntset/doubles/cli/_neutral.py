"""The catalog's wire-neutral tools, played on a fake CLI as the tool the real binary has.

The catalog scripts tools no CLI has (``read_file``, ``bash``, ``list_files``): a model
double passes them to the app, which defines its own tools; a CLI defines its tools itself,
and the real ``claude`` answers such a call ``No such tool available``, the real ``codex``
``unsupported call`` (observed, 2.1.332 and codex-cli 0.163). So a fake CLI plays each of
them as the binary's own tool, with the input that tool takes and the output it reports:

================  =============================================  ==========================
neutral tool      claude                                         codex
================  =============================================  ==========================
``read_file``     ``Read`` ``{"file_path": <path>}``             ``exec_command``
                                                                 ``{"cmd": "cat <path>"}``
``bash``          ``Bash`` ``{"command": <command>}``            ``exec_command``
                                                                 ``{"cmd": <command>}``
``list_files``    ``Bash`` ``{"command": "ls -p <path>"}``       ``exec_command``
                                                                 ``{"cmd": "ls -p <path>"}``
================  =============================================  ==========================

and the scripted result as that tool reports it (claude's ``Read`` numbers the lines,
``1\\t<text>``; its ``Bash`` names an empty output; ``ls`` ends a listing with a newline,
which codex keeps). Any other name the binary lacks is played as the binary answers it (the
fakes' own modules say how). ``stuntset.drift.native`` builds on this table for drift, where
the real binary runs the tool in a prepared working directory.

Runs in the test process (the plan compilers), never in a fake's process.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import msgspec

from stuntset.script import Script, Step, ToolCall, ToolResult, Turn

__all__ = ["NEUTRAL_TOOLS", "command", "native_call", "native_output", "native_tools"]

#: The catalog's wire-neutral tools (see the module docs).
NEUTRAL_TOOLS = ("read_file", "bash", "list_files")
#: What claude's ``Bash`` reports for a command that printed nothing.
CLAUDE_NO_OUTPUT = "(Bash completed with no output)"


def command(call: ToolCall) -> str:
    """The shell command a neutral ``call`` is (``cat``, ``ls -p`` or the command given)."""
    if call.name == "read_file":
        return f"cat {shlex.quote(str(call.input.get('path', '')))}"
    if call.name == "list_files":
        return f"ls -p {shlex.quote(str(call.input.get('path', '.')))}"
    return str(call.input.get("command", ""))


def native_call(program: str, call: ToolCall, cwd: Path | None = None) -> ToolCall:
    """The neutral ``call`` as ``program``'s (``claude`` or ``codex``) own tool; ``cwd``
    makes claude's ``Read`` path absolute (as a model gives it)."""
    if program == "claude":
        if call.name == "read_file":
            path = str(call.input.get("path", ""))
            given = {"file_path": path if cwd is None else str(cwd / path)}
            return msgspec.structs.replace(call, name="Read", input=given)
        return msgspec.structs.replace(call, name="Bash", input={"command": command(call)})
    return msgspec.structs.replace(call, name="exec_command", input={"cmd": command(call)})


def native_output(program: str, call: ToolCall, output: Any) -> Any:
    """What ``program``'s tool reports for the neutral ``call`` that printed ``output``."""
    if not isinstance(output, str):
        return output
    if program == "claude":
        if call.name == "read_file":
            return "\n".join(f"{n}\t{line}" for n, line in enumerate(output.split("\n"), 1))
        return output or CLAUDE_NO_OUTPUT
    return output + "\n" if call.name == "list_files" else output


def native_tools(script: Script, program: str) -> Script:
    """``script`` with each neutral call (and the result that answers it) played as
    ``program``'s own tool; ``script`` itself when it has none."""
    turns = tuple(_native_turn(turn, program) for turn in script.turns)
    if all(new is old for new, old in zip(turns, script.turns, strict=True)):
        return script
    return msgspec.structs.replace(script, turns=turns)


def _native_turn(turn: Turn, program: str) -> Turn:
    if not any(isinstance(s, ToolCall) and s.name in NEUTRAL_TOOLS for s in turn.steps):
        return turn
    calls: dict[str, ToolCall] = {}  # neutral calls by id
    waiting: list[ToolCall | None] = []  # every call still to be answered, in order
    steps: list[Step] = []
    for step in turn.steps:
        if isinstance(step, ToolCall):
            neutral = step.name in NEUTRAL_TOOLS
            if neutral and step.id is not None:
                calls[step.id] = step
            waiting.append(step if neutral else None)
            steps.append(native_call(program, step) if neutral else step)
            continue
        if isinstance(step, ToolResult) and waiting:
            named = calls.get(step.tool_call_id) if step.tool_call_id is not None else None
            answered = named if named is not None else waiting[0]
            if named is not None and named in waiting:
                waiting.remove(named)
            elif named is None:
                waiting.pop(0)
            if answered is not None:
                output = native_output(program, answered, step.output)
                step = msgspec.structs.replace(step, output=output)
        steps.append(step)
    return msgspec.structs.replace(turn, steps=tuple(steps))
