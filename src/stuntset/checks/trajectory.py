"""Trajectory matching: did the agent call the tools it should have, with the right arguments?

``trajectory_of(source)`` reads the tool calls an agent made, as ``ToolStep(name, args)``,
from any of:

- normalized events (``tool.started``), as ``Event`` objects or their dicts;
- raw Claude Code ``stream-json`` (``tool_use`` blocks of ``assistant`` messages);
- raw Codex ``exec --json`` JSONL (``command_execution`` → ``command_execution``
  ``{"command"}``, ``file_change`` → ``{"changes"}``, ``web_search`` → ``{"query"}``,
  ``mcp_tool_call`` → its ``tool`` with its ``arguments``);
- a request journal or cassette (``model_requests``): the tool calls the app reported back
  to the model in its message history (Chat ``tool_calls``, Responses ``function_call``,
  Anthropic ``tool_use``), each once, in order;
- lines (``str``/``bytes`` of JSON Lines, or a JSONL file path) of the three raw kinds;
- an expected trajectory written by hand: ``ToolStep``, ``"name"`` (any arguments) or
  ``("name", {args})``.

``assert_trajectory(actual, expected, mode=..., args=...)`` compares them:

- ``mode``: ``"strict"`` (same calls, same order), ``"unordered"`` (same calls, any order),
  ``"subset"`` (the agent made no call outside ``expected``), ``"superset"`` (the agent
  made every call in ``expected``, maybe more);
- ``args``: ``"exact"``, ``"ignore"``, or a function ``(expected_args, actual_args) -> bool``;
  or a dict of those per tool name (the rest compared exactly). An expected step given as a
  bare name matches any arguments.

A failure (``TrajectoryMismatch``) shows both trajectories side by side, marking each call
that has no partner.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

from stuntset.checks._diff import render_value
from stuntset.errors import TrajectoryMismatch, UsageError
from stuntset.wires import messages_history_calls, wire_named

__all__ = [
    "ArgsMatch",
    "MatchMode",
    "ToolStep",
    "TrajectoryResult",
    "assert_trajectory",
    "match_trajectory",
    "trajectory_of",
]

MatchMode: TypeAlias = Literal["strict", "unordered", "subset", "superset"]
ArgsCompare: TypeAlias = Callable[[dict[str, Any], dict[str, Any]], bool]
ArgsMatch: TypeAlias = Literal["exact", "ignore"] | ArgsCompare
_MODES = ("strict", "unordered", "subset", "superset")


@dataclass(frozen=True, slots=True)
class ToolStep:
    """One tool call: its ``name`` and ``args`` (``None``: any arguments, in an expectation)."""

    name: str
    args: dict[str, Any] | None = None

    def __str__(self) -> str:
        if self.args is None:
            return f"{self.name}(...)"
        inner = ", ".join(f"{k}={render_value(v, 40)}" for k, v in self.args.items())
        return f"{self.name}({inner})"


# --- reading -------------------------------------------------------------------------------


def _from_event_dict(line: dict[str, Any]) -> list[ToolStep]:
    if line.get("type") == "tool.started":
        return [ToolStep(str(line.get("name")), dict(line.get("input") or {}))]
    return []


def _from_claude(line: dict[str, Any], seen: set[Any]) -> list[ToolStep]:
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    steps = []
    for block in content if isinstance(content, list) else []:
        if not (isinstance(block, dict) and block.get("type") == "tool_use"):
            continue
        key = block.get("id")
        if key is not None and key in seen:
            continue  # the same message repeated (partial messages): one call
        seen.add(key)
        steps.append(ToolStep(str(block.get("name")), dict(block.get("input") or {})))
    return steps


def _codex_step(item: dict[str, Any]) -> ToolStep | None:
    kind = item.get("type")
    if kind == "command_execution":
        return ToolStep("command_execution", {"command": item.get("command")})
    if kind == "file_change":
        return ToolStep("file_change", {"changes": item.get("changes") or []})
    if kind == "web_search":
        return ToolStep("web_search", {"query": item.get("query")})
    if kind == "mcp_tool_call":
        arguments = item.get("arguments")
        args = arguments if isinstance(arguments, dict) else {"arguments": arguments}
        return ToolStep(str(item.get("tool")), dict(args))
    return None


def _lines_of(data: str | bytes, origin: str) -> list[dict[str, Any]]:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    lines = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as error:
            raise UsageError(f"{origin}:{number}: not a JSON line ({error.msg})") from None
        if isinstance(value, dict):
            lines.append(value)
    return lines


def _from_lines(lines: Iterable[dict[str, Any]]) -> list[ToolStep]:
    steps: list[ToolStep] = []
    codex_seen: set[Any] = set()
    claude_seen: set[Any] = set()
    for line in lines:
        kind = line.get("type")
        if kind == "assistant":
            steps.extend(_from_claude(line, claude_seen))
        elif kind in ("item.started", "item.completed") and isinstance(line.get("item"), dict):
            item = line["item"]
            key = item.get("id")
            if key is not None and key in codex_seen:
                continue
            step = _codex_step(item)
            if step is not None:
                codex_seen.add(key)
                steps.append(step)
        else:
            steps.extend(_from_event_dict(line))
    return steps


def _history_calls(wire: str, body: dict[str, Any]) -> list[tuple[str, ToolStep]]:
    """The tool calls a request's history carries, as its wire reads them (Chat and
    Anthropic's ``messages`` reader for a wire the registry does not know)."""
    known = wire_named(wire)
    read = messages_history_calls if known is None else known.history_calls
    return [(key, _parsed(name, arguments)) for key, name, arguments in read(body)]


def _parsed(name: Any, arguments: Any) -> ToolStep:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            arguments = {"arguments": arguments}
    args = arguments if isinstance(arguments, dict) else {"arguments": arguments}
    return ToolStep(str(name), args)


def _from_requests(source: Any) -> list[ToolStep]:
    from stuntset.checks.requests import model_requests

    seen: set[str] = set()
    steps: list[ToolStep] = []
    for request in model_requests(source):
        for key, step in _history_calls(request.wire, request.body):
            if key not in seen:
                seen.add(key)
                steps.append(step)
    return steps


def _expected_item(item: Any, position: int) -> ToolStep:
    if isinstance(item, ToolStep):
        return item
    if isinstance(item, str):
        return ToolStep(item)
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
        args = item[1]
        if args is None or isinstance(args, Mapping):
            return ToolStep(item[0], None if args is None else dict(args))
    raise UsageError(
        f"trajectory item {position}: {item!r} is not a ToolStep, a tool name or a "
        f"(name, args) pair"
    )


def trajectory_of(source: Any) -> list[ToolStep]:
    """The tool calls recorded in ``source`` (see the module docstring), in order."""
    from stuntset.cassettes.format import Cassette, is_cassette
    from stuntset.events import EventBase, to_builtins

    if isinstance(source, bytes) or (isinstance(source, str) and "\n" in source):
        return _from_lines(_lines_of(source, "<lines>"))
    if isinstance(source, os.PathLike | str):
        path = Path(source)
        if is_cassette(path):
            return _from_requests(path)
        try:
            data = path.read_bytes()
        except OSError as error:
            raise UsageError(
                f"{path}: cannot read a trajectory from it: {error.strerror}"
            ) from None
        return _from_lines(_lines_of(data, str(path)))
    if isinstance(source, Cassette) or (
        getattr(source, "requests", None) is not None and not callable(source.requests)
    ):
        return _from_requests(source)
    if not isinstance(source, Iterable):
        raise UsageError(
            f"cannot read a trajectory from {source!r}: pass events, raw stream-json or Codex "
            f"JSONL (lines, a file, or parsed dicts), a stand-in or cassette, or ToolSteps"
        )
    items = list(source)
    if all(isinstance(i, EventBase) for i in items):
        return _from_lines(to_builtins(i) for i in items)
    if items and all(isinstance(i, dict) for i in items):
        return _from_lines(items)
    if items and all(isinstance(i, str) and i.lstrip().startswith("{") for i in items):
        return _from_lines(_lines_of("\n".join(items), "<lines>"))
    if items and all(hasattr(i, "path") and hasattr(i, "body") for i in items):
        return _from_requests(items)
    return [_expected_item(item, n) for n, item in enumerate(items)]


# --- matching ------------------------------------------------------------------------------


def _args_rule(args: ArgsMatch | Mapping[str, ArgsMatch], name: str) -> ArgsMatch:
    if isinstance(args, Mapping):
        return args.get(name, "exact")
    return args


def _matches(
    expected: ToolStep, actual: ToolStep, args: ArgsMatch | Mapping[str, ArgsMatch]
) -> bool:
    if expected.name != actual.name:
        return False
    if expected.args is None:
        return True
    rule = _args_rule(args, expected.name)
    if rule == "ignore":
        return True
    if rule == "exact":
        return expected.args == (actual.args or {})
    return bool(rule(expected.args, actual.args or {}))


def _pairing(
    expected: list[ToolStep], actual: list[ToolStep], args: ArgsMatch | Mapping[str, ArgsMatch]
) -> dict[int, int]:
    """A maximum matching expected index → actual index (augmenting paths; lists are short)."""
    partner: dict[int, int] = {}  # actual → expected
    fits = [[j for j, a in enumerate(actual) if _matches(e, a, args)] for e in expected]

    def place(i: int, tried: set[int]) -> bool:
        for j in fits[i]:
            if j in tried:
                continue
            tried.add(j)
            if j not in partner or place(partner[j], tried):
                partner[j] = i
                return True
        return False

    for i in range(len(expected)):
        place(i, set())
    return {i: j for j, i in partner.items()}


@dataclass(frozen=True)
class TrajectoryResult:
    """How ``actual`` compared with ``expected``: ``ok``, and the unpaired positions."""

    ok: bool
    mode: str
    expected: list[ToolStep]
    actual: list[ToolStep]
    missing: list[int]  # expected positions without a partner (or wrong, in strict mode)
    extra: list[int]  # actual positions without a partner

    def side_by_side(self) -> str:
        left = [f"{i:>2}  {step}" for i, step in enumerate(self.expected)]
        right = [f"{i:>2}  {step}" for i, step in enumerate(self.actual)]
        width = max([len("expected"), *(len(line) for line in left)]) + 2
        rows = [f"  {'expected':<{width}}| actual"]
        for n in range(max(len(left), len(right))):
            l_text = left[n] if n < len(left) else ""
            r_text = right[n] if n < len(right) else ""
            l_mark = "<- missing" if n in self.missing else ""
            r_mark = "<- extra" if n in self.extra else ""
            mark = "!" if (l_mark or r_mark) else " "
            row = f"{mark} {l_text:<{width}}| {r_text}"
            notes = ", ".join(
                x for x in (l_mark and f"expected {n} missing", r_mark and f"actual {n} extra") if x
            )
            rows.append(f"{row}   ({notes})" if notes else row)
        return "\n".join(line.rstrip() for line in rows)


def match_trajectory(
    actual: Any,
    expected: Any,
    *,
    mode: MatchMode = "strict",
    args: ArgsMatch | Mapping[str, ArgsMatch] = "exact",
) -> TrajectoryResult:
    """Compare without raising (see ``assert_trajectory``)."""
    if mode not in _MODES:
        raise UsageError(f"mode={mode!r}: expected one of {list(_MODES)}")
    if isinstance(args, str) and args not in ("exact", "ignore"):
        raise UsageError(f"args={args!r}: expected 'exact', 'ignore', a function or a dict of them")
    got = trajectory_of(actual)
    want = trajectory_of(expected)
    if mode == "strict":
        bad = [
            n
            for n in range(max(len(want), len(got)))
            if n >= len(want) or n >= len(got) or not _matches(want[n], got[n], args)
        ]
        missing = [n for n in bad if n < len(want)]
        extra = [n for n in bad if n < len(got)]
        return TrajectoryResult(not bad, mode, want, got, missing, extra)
    pairs = _pairing(want, got, args)
    missing = [i for i in range(len(want)) if i not in pairs]
    paired = set(pairs.values())
    extra = [j for j in range(len(got)) if j not in paired]
    if mode == "subset":
        missing = []  # allowed: only calls outside the expected ones count
    if mode == "superset":
        extra = []  # allowed: only expected calls that were not made count
    return TrajectoryResult(not missing and not extra, mode, want, got, missing, extra)


def assert_trajectory(
    actual: Any,
    expected: Any,
    *,
    mode: MatchMode = "strict",
    args: ArgsMatch | Mapping[str, ArgsMatch] = "exact",
) -> list[ToolStep]:
    """Fail with ``TrajectoryMismatch`` (both trajectories side by side) unless the tool calls
    in ``actual`` match ``expected`` under ``mode`` and ``args``; return the actual calls."""
    __tracebackhide__ = True
    result = match_trajectory(actual, expected, mode=mode, args=args)
    if not result.ok:
        rule = args if isinstance(args, str) else "custom"
        what = {
            "strict": "the same tool calls in the same order",
            "unordered": "the same tool calls in any order",
            "subset": "no tool call outside the expected ones",
            "superset": "every expected tool call (others allowed)",
        }[mode]
        raise TrajectoryMismatch(
            f"the agent's trajectory does not match (mode={mode!r}: {what}; args={rule!r}):\n"
            f"{result.side_by_side()}\n"
            f"{len(result.actual)} actual call(s), {len(result.expected)} expected. To relax the "
            f"comparison pass mode= ('unordered', 'subset', 'superset') or args= ('ignore', a "
            f"function, or a dict per tool)."
        )
    return result.actual
