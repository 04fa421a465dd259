"""The catalog's tool scenarios played with each binary's *own* tools.

The catalog scripts wire-neutral tools (``read_file``, ``bash``, ``list_files``) that neither
real binary has: the real ``claude`` answers them ``No such tool available``, the real
``codex`` ``unsupported call``, so comparing them compares nothing. ``native_script``
rewrites each scripted call into the tool the program really has, with the input it takes
and the output it reports, as the fake CLIs play them (``stuntset.doubles.cli._neutral``
holds that table); here claude's ``Read`` path is made absolute in the run's directory. And
``prepare`` lays out the working directory so that the real tool's output *is* the
script's result (the file ``read_file`` reads holds its scripted output; ``ls -p`` finds the
scripted listing; ``make`` finds a Makefile that prints the scripted text): the real binary
runs the tool, the fake replays the result, and the two outputs are compared.

A scripted question (``InputRequest``) becomes, for ``claude``, the model calling its
``AskUserQuestion`` tool (two options, ``yes`` and ``no``: the real tool refuses fewer),
asked through ``can_use_tool`` and answered ``yes`` by the drift run, and the result the real
tool reports for that answer. For ``codex`` it becomes the model calling codex's own
``request_user_input`` (one question, the same two options); codex runs in its Default mode,
where it refuses the call ("request_user_input is unavailable in Default mode", observed on
codex-cli 0.163), so neither side asks and the model's next response follows.

Where the real binary asks permission for a call (claude's ``Bash`` for a command that is
not read-only), the rewritten script asks too (an ``ApprovalRequest`` after the call), so
the fake asks where the real one does; the drift run allows every request.

``gemini``'s own tools, its question and its output displays are ``gemini_cli``'s table
(``gemini_cli.native_script``): headless with ``--yolo`` it asks nobody.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import msgspec

from stuntset.doubles.cli._neutral import NEUTRAL_TOOLS, native_call, native_output
from stuntset.doubles.cli._neutral import command as _command
from stuntset.script import (
    ApprovalRequest,
    InputRequest,
    Script,
    Step,
    ToolCall,
    ToolResult,
    Turn,
)

__all__ = ["NATIVE_TOOLS", "native_script", "prepare"]

#: The catalog's tools and what each becomes (see the module docs).
NATIVE_TOOLS = NEUTRAL_TOOLS
#: Commands claude's ``Bash`` runs without asking (read-only).
_CLAUDE_UNASKED = ("ls", "cat")
#: Commands codex asks for (its own "dangerous command" check; exec asks nobody).
_CODEX_ASKED = ("rm",)


def _native_result(program: str, call: ToolCall, result: ToolResult) -> ToolResult:
    """The result the real tool reports. Codex runs commands in its default sandbox, which
    is read-only: a command that writes (``rm``) fails there, after its approval."""
    command = _command(call)
    if program == "codex" and command.startswith("rm -rf "):
        target = command.removeprefix("rm -rf ")
        failed = f"rm: cannot remove '{target}': Read-only file system\n"
        return msgspec.structs.replace(result, output=failed, is_error=True)
    return msgspec.structs.replace(result, output=native_output(program, call, result.output))


def _asks(program: str, call: ToolCall) -> bool:
    """The real binary asks permission before running the rewritten ``call``."""
    if call.name == "read_file":
        return False
    first = _command(call).split(" ")[0]
    return first not in _CLAUDE_UNASKED if program == "claude" else first in _CODEX_ASKED


def native_script(script: Script, program: str, cwd: Path) -> Script:
    """``script`` with its catalog tool calls (``NATIVE_TOOLS``) rewritten into ``program``'s
    own tools (``claude`` or ``codex``; ``gemini``: ``gemini_cli.native_script``), for a run
    in ``cwd``; other scripts unchanged."""
    if program == "gemini":
        from .gemini_cli import native_script as gemini_script

        return gemini_script(script)
    turns = [_native_turn(turn, program, cwd) for turn in script.turns]
    if all(new is old for new, old in zip(turns, script.turns, strict=True)):
        return script
    return msgspec.structs.replace(script, turns=tuple(turns))


def _question(prompt: str) -> list[Step]:
    """claude's ``AskUserQuestion`` for ``prompt``, asked, and the result of a ``yes``."""
    options = [{"label": "yes", "description": "Go ahead"}, {"label": "no", "description": "Stop"}]
    question = {"question": prompt, "header": "Question", "options": options}
    answered = (
        f'Your questions have been answered: "{prompt}"="yes". '
        "You can now continue with these answers in mind."
    )
    return [
        ToolCall("AskUserQuestion", {"questions": [{**question, "multiSelect": False}]}),
        ApprovalRequest(),
        ToolResult(answered),
    ]


#: What codex answers its question tool with in Default mode (observed, codex-cli 0.163).
CODEX_REFUSED_QUESTION = "request_user_input is unavailable in Default mode"


def _codex_question(prompt: str) -> list[Step]:
    """codex's ``request_user_input`` for ``prompt``, and codex's answer in Default mode."""
    options = [{"label": "yes", "description": "Go ahead"}, {"label": "no", "description": "Stop"}]
    question = {"id": "q_1", "header": "Question", "question": prompt, "options": options}
    return [
        ToolCall("request_user_input", {"questions": [question]}),
        ToolResult(CODEX_REFUSED_QUESTION, is_error=True),
    ]


def _native_turn(turn: Turn, program: str, cwd: Path) -> Turn:
    asks = any(isinstance(s, InputRequest) for s in turn.steps)
    if not asks and not any(isinstance(s, ToolCall) and s.name in NATIVE_TOOLS for s in turn.steps):
        return turn
    steps: list[Step] = []
    waiting: list[ToolCall] = []  # catalog calls whose result is still to come, in order
    for step in turn.steps:
        if isinstance(step, ToolCall) and step.name in NATIVE_TOOLS:
            waiting.append(step)
            steps.append(native_call(program, step, cwd))
            if _asks(program, step):
                steps.append(ApprovalRequest())
        elif isinstance(step, ApprovalRequest) and steps and isinstance(steps[-1], ApprovalRequest):
            continue  # the catalog's own request, already placed where the binary asks
        elif isinstance(step, ApprovalRequest) and waiting and not _asks(program, waiting[-1]):
            continue  # the real binary does not ask for this call
        elif isinstance(step, ToolResult) and waiting:
            steps.append(_native_result(program, waiting.pop(0), step))
        elif isinstance(step, InputRequest):
            steps.extend(
                _question(step.prompt) if program == "claude" else _codex_question(step.prompt)
            )
        else:
            steps.append(step)
    return msgspec.structs.replace(turn, steps=tuple(steps))


def prepare(script: Script, cwd: Path) -> None:
    """Lay out ``cwd`` so that each catalog tool call of ``script``, run for real, outputs its
    scripted result (see the module docs)."""
    cwd.mkdir(parents=True, exist_ok=True)
    for turn in script.turns:
        waiting: list[ToolCall] = []
        for step in turn.steps:
            if isinstance(step, ToolCall) and step.name in NATIVE_TOOLS:
                waiting.append(step)
            elif isinstance(step, ToolResult) and waiting:
                _lay_out(waiting.pop(0), str(step.output), cwd)


def _lay_out(call: ToolCall, output: str, cwd: Path) -> None:
    if call.name == "read_file":
        (cwd / str(call.input.get("path", ""))).write_text(output, encoding="utf-8")
    elif call.name == "list_files":
        folder = cwd / str(call.input.get("path", "."))
        for name in output.split("\n"):
            if name.endswith("/"):
                (folder / name).mkdir(parents=True, exist_ok=True)
            elif name:
                (folder / name).write_text("", encoding="utf-8")
    elif _command(call) == "make":
        (cwd / "Makefile").write_text(f"all:\n\t@printf %s {shlex.quote(output)}\n")
    elif _command(call).startswith("rm -rf "):
        (cwd / _command(call).removeprefix("rm -rf ")).mkdir(parents=True, exist_ok=True)
