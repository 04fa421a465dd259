"""Tools on both sides of the model: what the app declares, and what its collaborator gets.

One helper, ``assert_tool``, checks a tool at either boundary:

- **declared**: ``assert_tool(stand_in, "get_weather", schema={...})`` reads the tool list
  the app sent (every request that carries one, on any of the model wires) and checks the
  tool is there with exactly that parameter schema (and ``description``, if given);
  ``function=`` checks the schema against the Python function that implements the tool
  (its parameter names and which are required);
- **received**: the app's tool implementation is wrapped with ``ToolCalls.record``; after a
  scripted ``ToolCall`` was played, ``assert_tool(calls, step)`` checks the collaborator was
  called with the arguments the model sent, each of the type its annotation names (an enum,
  not the raw string; an int, not ``"3"``), rendered back to JSON equal to the scripted
  arguments. ``arguments=`` overrides what is expected.

Failures raise ``ToolMismatch`` naming the request or call and each differing field.
"""

from __future__ import annotations

import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from stuntset.checks._diff import MISSING, differences
from stuntset.errors import ToolMismatch, UsageError
from stuntset.wires import WIRES, wire_named

__all__ = ["DeclaredTool", "ReceivedCall", "ToolCalls", "assert_tool", "declared_tools"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class DeclaredTool:
    """A tool as the model is shown it: ``parameters`` is its JSON schema on every wire (Chat
    ``function.parameters``, Responses ``parameters``, Anthropic ``input_schema``)."""

    name: str
    description: str | None
    parameters: Any


@dataclass(frozen=True, slots=True)
class ReceivedCall:
    """One call of a recorded tool function: the arguments it was bound to (by name, defaults
    not filled in) and the annotations of its parameters."""

    name: str
    arguments: dict[str, Any]
    annotations: dict[str, Any] = field(default_factory=dict)


class ToolCalls:
    """Records the calls of the app's tool functions (a fake's journal, not a mock: the
    wrapped function still runs)::

        calls = ToolCalls()
        tools = {"get_weather": calls.record(weather_service.get)}
    """

    def __init__(self) -> None:
        self.calls: list[ReceivedCall] = []

    def record(self, function: F, *, name: str | None = None) -> F:
        """``function``, recording each call under ``name`` (default: its ``__name__``)."""
        signature = inspect.signature(function)
        try:
            hints = typing.get_type_hints(function)
        except Exception:
            hints = {}
        annotations = {p: hints[p] for p in signature.parameters if p in hints}
        tool: str = name or str(getattr(function, "__name__", "tool"))

        @functools.wraps(function)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            self.calls.append(ReceivedCall(tool, dict(bound.arguments), annotations))
            return function(*args, **kwargs)

        return recorded  # type: ignore[return-value]

    def of(self, name: str) -> list[ReceivedCall]:
        return [call for call in self.calls if call.name == name]


def declared_tools(source: Any) -> list[tuple[str, dict[str, DeclaredTool]]]:
    """For each request in ``source`` that carries a tool list: where it came from and its
    tools by name."""
    from stuntset.checks.requests import model_requests

    out = []
    for request in model_requests(source):
        wire = wire_named(request.wire)
        declared = (wire or WIRES[0]).declared_tools(request.body)
        if declared is None:
            continue
        named = {name: DeclaredTool(name, about, schema) for name, about, schema in declared}
        out.append((request.describe(), named))
    return out


# --- received arguments -----------------------------------------------------------------------


def _type_ok(value: Any, annotation: Any) -> bool:
    if annotation is Any or annotation is inspect.Parameter.empty:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return value in typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, member) for member in typing.get_args(annotation))
    if annotation is None or annotation is type(None):
        return value is None
    target = origin or annotation
    if not isinstance(target, type):
        return True  # a TypeVar, a Protocol alias...: nothing to check here
    if target is float and isinstance(value, int) and not isinstance(value, bool):
        return True
    if target in (int, float) and isinstance(value, bool):
        return False
    return isinstance(value, target)


def _as_json(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return _as_json(value.value)
    try:
        return msgspec.to_builtins(value)
    except TypeError:
        return value


def _check_received(call: ReceivedCall, expected: dict[str, Any], where: str) -> None:
    __tracebackhide__ = True
    lines = []
    for name, value in call.arguments.items():
        annotation = call.annotations.get(name, inspect.Parameter.empty)
        if not _type_ok(value, annotation):
            lines.append(
                f"{name}: got {value!r} ({type(value).__name__}), but the parameter is "
                f"annotated {getattr(annotation, '__name__', annotation)!s}: the app passed the "
                f"model's raw value on without converting it"
            )
    received = {k: _as_json(v) for k, v in call.arguments.items()}
    for difference in differences(expected, received):
        if difference.after is MISSING and difference.path in expected:
            lines.append(
                f"{difference.path}: the model sent {difference.before!r}, the "
                f"collaborator never received it"
            )
        else:
            lines.append(
                difference.describe().replace(" -> ", " (sent by the model) -> ", 1) + " (received)"
            )
    if lines:
        raise ToolMismatch(
            f"{where}: the collaborator did not receive what the model sent:\n"
            + "\n".join(f"  {line}" for line in lines)
            + f"\n  model sent: {expected!r}\n  received:   {call.arguments!r}"
        )


# --- declared schema --------------------------------------------------------------------------


def _schema_vs_function(tool: DeclaredTool, function: Callable[..., Any]) -> list[str]:
    params = {
        name: p
        for name, p in inspect.signature(function).parameters.items()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and name not in ("self", "cls")
    }
    schema = tool.parameters if isinstance(tool.parameters, dict) else {}
    properties = list((schema.get("properties") or {}).keys())
    required = set(schema.get("required") or [])
    lines = []
    for name in params:
        if name not in properties:
            lines.append(f"parameter {name!r} of {function.__name__}() is not in the schema")
    for name in properties:
        if name not in params:
            lines.append(f"schema property {name!r} is not a parameter of {function.__name__}()")
    for name, p in params.items():
        needed = p.default is inspect.Parameter.empty
        if name in properties and needed != (name in required):
            state = "required" if name in required else "optional"
            lines.append(
                f"{name!r} is {state} in the schema but "
                f"{'has no default' if needed else 'has a default'} in {function.__name__}()"
            )
    return lines


def _check_declared(
    source: Any,
    name: str,
    schema: Any,
    description: str | None,
    function: Callable[..., Any] | None,
) -> DeclaredTool:
    __tracebackhide__ = True
    found = declared_tools(source)
    if not found:
        raise ToolMismatch(
            f"no request declared any tools, so {name!r} was never shown to the model "
            f"(did the app talk to this stand-in, and pass tools=?)"
        )
    tool: DeclaredTool | None = None
    for where, tools in found:
        tool = tools.get(name)
        if tool is None:
            raise ToolMismatch(
                f"{where} does not declare the tool {name!r}; it declares {sorted(tools)}"
            )
        lines: list[str] = []
        if schema is not MISSING:
            lines += [d.describe() for d in differences(schema, tool.parameters, "parameters")]
        if description is not None and description != tool.description:
            lines.append(f"description: {tool.description!r}, expected {description!r}")
        if function is not None:
            lines += _schema_vs_function(tool, function)
        if lines:
            raise ToolMismatch(
                f"{where}: the tool {name!r} the model is shown differs from what the test "
                f"expects (expected -> declared):\n" + "\n".join(f"  {line}" for line in lines)
            )
    assert tool is not None
    return tool


def assert_tool(
    source: Any,
    tool: Any,
    *,
    schema: Any = MISSING,
    description: str | None = None,
    function: Callable[..., Any] | None = None,
    arguments: dict[str, Any] | None = None,
    call: int = 0,
) -> Any:
    """Check a tool where it crosses a boundary (see the module docstring).

    ``source`` is a ``ToolCalls`` recorder (the received side: ``tool`` is a scripted
    ``ToolCall`` step or a name with ``arguments=``; ``call`` picks which of its calls, 0 the
    first) or anything ``model_requests`` reads (the declared side: ``tool`` is the name;
    ``schema``, ``description``, ``function`` what to check). Returns the ``ReceivedCall`` or
    the ``DeclaredTool``.
    """
    __tracebackhide__ = True
    step_args = getattr(tool, "input", None)  # a scripted ToolCall's arguments
    name = tool if isinstance(tool, str) else getattr(tool, "name", None)
    if not isinstance(name, str):
        raise UsageError(f"tool={tool!r}: expected a tool name or a scripted ToolCall step")
    if isinstance(source, ToolCalls):
        expected = arguments if arguments is not None else step_args
        if not isinstance(expected, dict):
            raise UsageError(
                f"assert_tool({name!r}) on recorded calls needs the arguments the model sent: "
                f"pass the scripted ToolCall step, or arguments={{...}}"
            )
        made = source.of(name)
        if len(made) <= call:
            recorded = sorted({c.name for c in source.calls})
            raise ToolMismatch(
                f"the collaborator {name!r} was called {len(made)} time(s), so there is no call "
                f"#{call}; recorded calls: {recorded or 'none'}. Did the app run the tool call, "
                f"and is the function wrapped with ToolCalls.record?"
            )
        _check_received(made[call], expected, f"call #{call} of {name!r}")
        return made[call]
    if schema is MISSING and description is None and function is None:
        raise UsageError(
            f"assert_tool({name!r}) on requests checks the declared tool: pass schema=, "
            f"description= or function="
        )
    return _check_declared(source, name, schema, description, function)
