"""The catalog's wire-neutral tools, played on a fake CLI as the tool the real binary has.

The catalog scripts tools no CLI has (``read_file``, ``bash``, ``list_files``): a model
double passes them to the app, which defines its own tools; a CLI defines its tools itself,
and the real ``claude`` answers such a call ``No such tool available``, the real ``codex``
``unsupported call`` (observed, 2.1.332 and codex-cli 0.163). So a fake CLI plays each of
them as the binary's own tool, with the input that tool takes and the output it reports:

* ``read_file`` ``{"path": p}``: claude ``Read`` ``{"file_path": p}``, its result numbered
  (``1\\t<text>``); codex ``exec_command`` ``{"cmd": "cat p"}``; gemini its own
  ``read_file`` ``{"file_path": p}``, its result a read's display (``""``);
* ``bash`` ``{"command": c}``: claude ``Bash`` ``{"command": c}`` (an empty output is
  ``(Bash completed with no output)``); codex ``exec_command`` ``{"cmd": c}``; gemini
  ``run_shell_command`` ``{"command": c}``;
* ``list_files`` ``{"path": p}``: claude ``Bash`` and codex ``exec_command`` ``ls -p p``
  (codex keeps the newline ``ls`` ends with); gemini ``list_directory`` ``{"dir_path":
  p}``, with no output (its display is not text).

(Outputs observed on claude 2.1.332, codex-cli 0.163 and gemini-cli 0.61.0.) A gemini
``read_file`` call with its ``file_path`` is already gemini's and stays as it is. Any other
name the binary lacks is played as the binary answers it (the fakes' own modules say how).
``stuntset.drift.native`` builds on this for drift, where the real binary runs the tool in a
prepared working directory.

Runs in the test process (the plan compilers), never in a fake's process.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import msgspec

from stuntset.script import Script, Step, ToolCall, ToolResult, Turn

__all__ = [
    "NEUTRAL_TOOLS",
    "command",
    "native_call",
    "native_output",
    "native_tools",
    "neutral",
]

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


def neutral(program: str, call: ToolCall) -> bool:
    """Whether ``call`` is one of the catalog's neutral tools (not ``program``'s own)."""
    if call.name not in NEUTRAL_TOOLS:
        return False
    return not (program == "gemini" and call.name == "read_file" and "file_path" in call.input)


def native_call(program: str, call: ToolCall, cwd: Path | None = None) -> ToolCall:
    """The neutral ``call`` as ``program``'s (``claude``, ``codex`` or ``gemini``) own tool;
    ``cwd`` makes claude's ``Read`` path absolute (as a model gives it)."""
    if program == "claude":
        if call.name == "read_file":
            path = str(call.input.get("path", ""))
            given = {"file_path": path if cwd is None else str(cwd / path)}
            return msgspec.structs.replace(call, name="Read", input=given)
        return msgspec.structs.replace(call, name="Bash", input={"command": command(call)})
    if program == "gemini":
        path = str(call.input.get("path", ""))
        if call.name == "read_file":
            return msgspec.structs.replace(call, input={"file_path": path})
        if call.name == "list_files":
            return msgspec.structs.replace(
                call, name="list_directory", input={"dir_path": path or "."}
            )
        shell = {"command": str(call.input.get("command", ""))}
        return msgspec.structs.replace(call, name="run_shell_command", input=shell)
    return msgspec.structs.replace(call, name="exec_command", input={"cmd": command(call)})


def native_output(program: str, call: ToolCall, output: Any) -> Any:
    """What ``program``'s tool reports for the neutral ``call`` that printed ``output``."""
    if program == "gemini":
        if call.name == "read_file":
            return ""  # a read's display
        return None if call.name == "list_files" else output  # a listing's is not text
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
    if not any(isinstance(s, ToolCall) and neutral(program, s) for s in turn.steps):
        return turn
    # every call still to be answered, in order: (its id, the call if neutral)
    waiting: list[tuple[str | None, ToolCall | None]] = []
    steps: list[Step] = []
    for step in turn.steps:
        if isinstance(step, ToolCall):
            played = neutral(program, step)
            waiting.append((step.id, step if played else None))
            steps.append(native_call(program, step) if played else step)
            continue
        if isinstance(step, ToolResult) and waiting:
            named = [
                w for w in waiting if step.tool_call_id is not None and w[0] == step.tool_call_id
            ]
            answered = (named or waiting)[0]
            waiting.remove(answered)
            if answered[1] is not None:
                output = native_output(program, answered[1], step.output)
                step = msgspec.structs.replace(step, output=output)
        steps.append(step)
    return msgspec.structs.replace(turn, steps=tuple(steps))
