"""Turns and scripts: what a double does, as data (or as a function of the request)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import msgspec

from stuntset.errors import ScriptError
from stuntset.script._limits import RateLimits
from stuntset.script._steps import (
    ApprovalRequest,
    SpawnFailure,
    Step,
    StepBase,
    ToolCall,
    ToolResult,
    kind_of,
)

__all__ = ["Match", "Script", "Turn", "TurnFunction", "TurnRequest", "TurnSource", "turn"]


class TurnRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What a double knows about the request a turn answers, wire-neutral.

    ``input_text`` is the latest user input (a prompt, or the last user message on a model
    wire); ``tool_results`` the ids of tool calls the request answers; ``body``/``headers``
    the raw request where there is one.
    """

    input_text: str = ""
    model: str | None = None
    wire: str = "agent"
    retry_count: int = 0
    tool_results: tuple[str, ...] = ()
    body: Any = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)


class Match(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """A data predicate on the request (all given fields must hold)."""

    contains: str | None = None
    """The request's input text contains this substring."""
    model: str | None = None
    """The request asks for exactly this model."""
    retry_count: int | None = None
    """The client's retry counter (``x-stainless-retry-count``) equals this."""
    tool_result: bool | None = None
    """The request does (True) or does not (False) carry tool results."""

    def matches(self, request: TurnRequest) -> bool:
        return (
            (self.contains is None or self.contains in request.input_text)
            and (self.model is None or self.model == request.model)
            and (self.retry_count is None or self.retry_count == request.retry_count)
            and (self.tool_result is None or self.tool_result == bool(request.tool_results))
        )

    def describe(self) -> str:
        fields = msgspec.structs.asdict(self)
        return ", ".join(f"{k}={v!r}" for k, v in fields.items() if v is not None) or "anything"


class Turn(msgspec.Struct, frozen=True, kw_only=True):
    """One turn: a model response (on model wires, one per tool round trip) or an agent turn.

    ``match`` and ``predicate`` restrict which request the turn answers (default: any, in
    order); ``times`` lets one turn answer that many requests. ``rate_limits`` is what the
    API reports about the account's quota with each of the turn's responses (the script's
    ``rate_limits`` when not given).
    """

    steps: tuple[Step, ...]
    match: Match | None = None
    predicate: Callable[[TurnRequest], bool] | None = None
    times: int = 1
    name: str | None = None
    rate_limits: RateLimits | None = None

    def accepts(self, request: TurnRequest) -> bool:
        if self.match is not None and not self.match.matches(request):
            return False
        return self.predicate is None or bool(self.predicate(request))

    def segments(self) -> list[tuple[Step, ...]]:
        """The turn as model responses: split where tool results come back from the client.

        ``[Text, ToolCall, ToolResult, Text]`` is two responses on a model wire: the first ends
        with the tool call, the second answers the request that carries the tool result.
        """
        parts: list[list[Step]] = [[]]
        for step in self.steps:
            if isinstance(step, ToolResult):
                if parts[-1]:
                    parts.append([])
                continue
            parts[-1].append(step)
        return [tuple(part) for part in parts if part] or [()]

    def describe(self) -> str:
        label = f"{self.name!r} " if self.name else ""
        kinds = ", ".join(kind_of(s) for s in self.steps) or "no steps"
        when = f" when {self.match.describe()}" if self.match else ""
        pred = " (with a predicate)" if self.predicate else ""
        return f"{label}[{kinds}]{when}{pred}"


#: A function that makes a turn from the request: the function flavour of a script.
TurnFunction: TypeAlias = Callable[[TurnRequest], "Turn | Sequence[Step]"]
#: What ``Script.of`` and ``turn`` accept for one turn.
TurnSource: TypeAlias = "Turn | Sequence[Step] | Step"


def turn(
    *steps: Step,
    match: Match | None = None,
    predicate: Callable[[TurnRequest], bool] | None = None,
    times: int = 1,
    name: str | None = None,
    rate_limits: RateLimits | None = None,
) -> Turn:
    """Build a turn from steps: ``turn(Text("hi"), Usage(3, 1))``."""
    return Turn(
        steps=tuple(steps),
        match=match,
        predicate=predicate,
        times=times,
        name=name,
        rate_limits=rate_limits,
    )


def _as_turn(item: Turn | Sequence[Step] | Step) -> Turn:
    if isinstance(item, Turn):
        return item
    if isinstance(item, StepBase):
        return Turn(steps=(item,))
    return Turn(steps=tuple(item))


def validate_turn(t: Turn, *, source: str, index: int) -> None:
    """Structural rules every wire shares; raises ``ScriptError`` naming the place."""
    if not isinstance(t.steps, tuple | list):
        raise ScriptError(
            f"steps must be a list of steps, got {t.steps!r}", source=source, turn=index
        )
    if t.times < 1:
        raise ScriptError(f"times must be at least 1, got {t.times!r}", source=source, turn=index)
    if t.rate_limits is not None and not isinstance(t.rate_limits, RateLimits):
        raise ScriptError(
            f"rate_limits must be a stuntset.script.RateLimits, got {t.rate_limits!r}",
            source=source,
            turn=index,
        )
    open_calls = 0
    for position, step in enumerate(t.steps):
        if not isinstance(step, StepBase):
            raise ScriptError(
                f"{step!r} is not a step (use stuntset.script.Text, ToolCall, …)",
                source=source,
                turn=index,
                step=position,
            )
        if isinstance(step, SpawnFailure) and position != 0:
            raise ScriptError(
                "spawn_failure can only be a turn's first step: nothing runs before a spawn",
                source=source,
                turn=index,
                step=position,
            )
        if isinstance(step, ToolCall):
            open_calls += 1
        elif isinstance(step, ToolResult) and step.tool_call_id is None:
            if not open_calls:
                raise ScriptError(
                    "tool_result answers no tool call: put a tool_call before it in the turn "
                    "(or name the call with tool_call_id)",
                    source=source,
                    turn=index,
                    step=position,
                )
            open_calls -= 1
        elif isinstance(step, ApprovalRequest) and step.tool is None and not open_calls:
            raise ScriptError(
                "approval_request asks about no tool: put a tool_call before it in the turn "
                "(or give it tool= and input=)",
                source=source,
                turn=index,
                step=position,
            )
        if step.ends_turn and position != len(t.steps) - 1:
            after = kind_of(t.steps[position + 1])
            raise ScriptError(
                f"{kind_of(step)} ends the turn, so the {after} step after it would never be "
                f"rendered; move it into a new turn",
                source=source,
                turn=index,
                step=position + 1,
            )


class Script(msgspec.Struct, frozen=True, kw_only=True):
    """What a double does: a list of turns, or a function of the request (or both: the
    function is asked when no scripted turn is left).

    ``seed`` makes whatever a double invents (ids, signatures) deterministic. ``source`` names
    where the script came from in error messages. ``rate_limits`` is what the API reports
    about the account's quota with every response of a turn that has none of its own.
    """

    turns: tuple[Turn, ...] = ()
    function: TurnFunction | None = None
    seed: int = 0
    name: str | None = None
    source: str = "<python>"
    rate_limits: RateLimits | None = None

    def __post_init__(self) -> None:
        if self.rate_limits is not None and not isinstance(self.rate_limits, RateLimits):
            raise ScriptError(
                f"rate_limits must be a stuntset.script.RateLimits, got {self.rate_limits!r}",
                source=self.source,
            )
        for index, t in enumerate(self.turns):
            validate_turn(t, source=self.source, index=index)

    @classmethod
    def of(
        cls,
        *turns: Turn | Sequence[Step] | Step,
        seed: int = 0,
        name: str | None = None,
        rate_limits: RateLimits | None = None,
    ) -> Script:
        """A script from turns; a bare list of steps (or one step) is a turn.

        ``Script.of([Text("hi")], [ToolCall("ls"), ToolResult("a.txt"), Text("done")])``
        """
        return cls(
            turns=tuple(_as_turn(t) for t in turns), seed=seed, name=name, rate_limits=rate_limits
        )

    @classmethod
    def from_function(
        cls,
        function: TurnFunction,
        *,
        seed: int = 0,
        name: str | None = None,
        rate_limits: RateLimits | None = None,
    ) -> Script:
        """A script whose every turn is made by ``function(request)``."""
        return cls(function=function, seed=seed, name=name, rate_limits=rate_limits)

    def then(self, *turns: Turn | Sequence[Step] | Step) -> Script:
        """This script with more turns appended."""
        return msgspec.structs.replace(self, turns=self.turns + tuple(_as_turn(t) for t in turns))

    def turn_from_function(self, request: TurnRequest, index: int) -> Turn:
        """Ask the function for a turn, and validate what it returned."""
        assert self.function is not None
        made = self.function(request)
        t = _as_turn(made)
        validate_turn(t, source=f"{self.source} (function {_qualname(self.function)})", index=index)
        return t

    def label(self) -> str:
        return self.name or self.source

    def rate_limits_of(self, t: Turn) -> RateLimits | None:
        """What the API reports about the quota with ``t``'s responses: its own rate limits,
        else the script's."""
        return t.rate_limits if t.rate_limits is not None else self.rate_limits

    def steps(self) -> list[Step]:
        """Every step of every scripted turn, in order."""
        return [step for t in self.turns for step in t.steps]


def _qualname(function: Callable[..., Any]) -> str:
    return getattr(function, "__qualname__", repr(function))
