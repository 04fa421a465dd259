"""Wires: what a double can render. A script is checked against a wire when it is loaded."""

from __future__ import annotations

import msgspec

from stuntset.errors import ScriptError
from stuntset.script._model import Script, Turn
from stuntset.script._steps import STEP_KINDS, ToolCall, ToolResult, kind_of

__all__ = ["AGENT_WIRE", "Wire"]


class Wire(msgspec.Struct, frozen=True, kw_only=True):
    """A protocol a double speaks, and the step kinds it can render.

    ``renders``: kinds it turns into bytes. ``ignores``: kinds that happen on the other side
    of this wire and are skipped (an approval is the agent host's business, not the model's).
    ``reasons``: why an unsupported kind cannot be rendered, for the error message.
    """

    name: str
    renders: frozenset[str]
    ignores: frozenset[str] = frozenset()
    reasons: dict[str, str] = msgspec.field(default_factory=dict)
    #: Every tool call must get its result within the turn (agent wires run the tools).
    require_tool_results: bool = False
    #: Tools whose call is the agent's answer: the runtime ends there, no result follows
    #: (Claude Code's ``StructuredOutput``, how an agent hook answers).
    answer_tools: frozenset[str] = frozenset()
    #: Renders a stream fault with ``cli=True`` (the CLI process itself breaks its own
    #: stdout): only the agent doubles; a model API has no CLI of its own to break.
    cli_faults: bool = False

    def check(self, script: Script) -> Script:
        """Raise ``ScriptError`` naming the first step this wire cannot render; else return
        the script."""
        for index, t in enumerate(script.turns):
            self.check_turn(t, index=index, source=script.source)
        return script

    def check_turn(self, t: Turn, *, index: int, source: str = "<python>") -> None:
        calls = results = 0
        for position, step in enumerate(t.steps):
            calls += isinstance(step, ToolCall) and step.name not in self.answer_tools
            results += isinstance(step, ToolResult)
            kind = kind_of(step)
            if getattr(step, "cli", False) and not self.cli_faults:
                raise ScriptError(
                    f"{kind} with cli=True is the CLI process itself breaking (its own stdout, or "
                    f"its exit), which "
                    f"only the CLI doubles (fake claude, fake codex) and the scripted provider "
                    f"render; on this wire use {kind} without cli=True (the stream breaks "
                    f"here)",
                    source=source,
                    turn=index,
                    step=position,
                    wire=self.name,
                )
            if kind in self.renders or kind in self.ignores:
                continue
            why = self.reasons.get(kind, "this double has no way to render it")
            raise ScriptError(
                f"{kind} cannot be rendered on this wire: {why}. "
                f"Renderable here: {', '.join(sorted(self.renders))}",
                source=source,
                turn=index,
                step=position,
                wire=self.name,
            )
        if (
            self.require_tool_results
            and calls > results
            and not (t.steps and t.steps[-1].ends_turn)
        ):
            raise ScriptError(
                f"{calls} tool call(s) but {results} tool result(s): an agent runs its tools, "
                f"so every tool_call needs a tool_result in the same turn",
                source=source,
                turn=index,
                wire=self.name,
            )


#: The in-process scripted provider renders every step at agent level.
AGENT_WIRE = Wire(
    name="agent", renders=frozenset(STEP_KINDS), require_tool_results=True, cli_faults=True
)
