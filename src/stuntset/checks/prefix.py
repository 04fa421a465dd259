"""Prompt-prefix stability: within a conversation, every request repeats the previous one's
prompt and only appends to it, so the provider's prompt cache keeps hitting.

``assert_prefix_stable(source)`` reads the requests a stand-in's journal recorded (or a
cassette's) and, for each request after the first of its conversation, checks against the
previous one:

- **system**: the system prompt / instructions are identical (Chat: the leading ``system`` /
  ``developer`` messages; Responses: ``instructions`` and leading system/developer items;
  Anthropic: ``system``);
- **tools**: the same tools, the same schemas, in the same order;
- **cache**: the cache-relevant fields are identical (``CACHE_FIELDS`` per wire: the model,
  tool choice, output format, thinking/reasoning, cache key);
- **messages**: the previous request's messages are a prefix of this one's. A Responses
  request that continues server-side (``previous_response_id`` or ``conversation``) sends only
  new items, so this check does not apply to it.

Anthropic ``cache_control`` markers are ignored (a breakpoint moves as the conversation grows
without changing the prompt), and a string ``content``/``system`` equals the one text block it
stands for. The first divergence is explained field by field, with body paths
(``messages[0].content: ... (first difference at character 41)``); a long value also shows a
window of text around its first difference, with its path (``stuntset.explain.window``).

Conversations: by default every request on one wire (and one cassette session) is one
conversation, in order. An app that runs several conversations in one test passes
``conversation=`` a function of the ``ModelRequest`` (``first_user_message`` is one).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass, field
from typing import Any

from stuntset.checks._diff import differences, render_value
from stuntset.checks.requests import ModelRequest, model_requests
from stuntset.errors import PrefixUnstable, UsageError
from stuntset.wires import WIRES, PrefixView, wire_named

__all__ = [
    "ASPECTS",
    "CACHE_FIELDS",
    "PrefixDivergence",
    "PrefixReport",
    "assert_prefix_stable",
    "find_prefix_divergence",
    "first_user_message",
]

#: Request fields that change what the provider can reuse from its prompt cache, per wire
#: (each wire's ``cache_fields``, in ``stuntset.wires``).
CACHE_FIELDS: dict[str, tuple[str, ...]] = {wire.name: wire.cache_fields for wire in WIRES}
#: The four checks, in the order a divergence reports them; each can be passed to ``ignore``.
ASPECTS = ("system", "tools", "cache", "messages")
#: Values longer than this (as compact JSON) get a window around their first difference.
_LONG = 100


def _view(request: ModelRequest) -> PrefixView:
    """The request as its wire's ``prefix_view`` reads it."""
    wire = wire_named(request.wire)
    if wire is None:
        raise UsageError(f"{request.describe()}: {request.wire!r} is not a model wire")
    return wire.prefix_view(request.body)


def _tool_name(tool: Any) -> str:
    if not isinstance(tool, dict):
        return repr(tool)
    function = tool.get("function")
    if isinstance(function, dict) and "name" in function:
        return str(function["name"])
    return str(tool.get("name") or tool.get("type") or "?")


def first_user_message(request: ModelRequest) -> Hashable:
    """A ``conversation`` key: the first non-system message (conversations that start with
    different user prompts are told apart)."""
    view = _view(request)
    first = view.messages[0] if view.messages else None
    return (request.wire, render_value(first, width=10_000))


@dataclass(frozen=True)
class PrefixDivergence:
    """The first request that broke its conversation's prefix: ``after`` against ``before``,
    with one entry per aspect that differs (``aspect``, lines naming each field)."""

    before: ModelRequest
    after: ModelRequest
    findings: list[tuple[str, list[str]]]

    @property
    def aspects(self) -> list[str]:
        return [aspect for aspect, _ in self.findings]

    def explain(self) -> str:
        lines = [
            f"the prompt prefix is not stable: {self.after.describe()} diverges from "
            f"{self.before.describe()}, the previous request of its conversation:"
        ]
        for aspect, details in self.findings:
            lines.append(f"  {aspect}:")
            lines.extend(f"    {line}" for line in details)
        lines.append(
            "Each request of a conversation should repeat the previous one's system prompt, "
            "tools (same order), cache-relevant fields and messages, then append; anything "
            "else misses the prompt cache. If these are different conversations, pass "
            "conversation= (e.g. stuntset.checks.first_user_message); to accept a change, "
            f"pass ignore= with any of {list(ASPECTS)} or a field name."
        )
        return "\n".join(lines)


@dataclass(frozen=True)
class PrefixReport:
    """What ``assert_prefix_stable`` checked: how many requests, in how many conversations."""

    requests: int
    conversations: int
    divergence: PrefixDivergence | None = field(default=None)


def _details(before: Any, after: Any, path: str = "") -> list[str]:
    found = differences(before, after, path, limit=8)
    return [d.describe() for d in found]


def _window(before: Any, after: Any, path: str = "") -> list[str]:
    """Where two long values first differ (its path, and a window of text around it), as
    ``stuntset.explain.window`` shows it; nothing for values short enough to read whole. The
    system prompt and cache fields are keyed by body path (``messages[0]``): their first
    differing key is the path shown."""
    from stuntset.explain.window import MISSING, mismatch_window

    if not path and isinstance(before, dict) and isinstance(after, dict):
        for key in [*before, *(k for k in after if k not in before)]:
            old, new = before.get(key, MISSING), after.get(key, MISSING)
            if old != new:
                return _window(old, new, key)
        return []
    if max(len(render_value(v, _LONG + 1)) for v in (before, after)) <= _LONG:
        return []

    shown = mismatch_window(before, after, labels=("before", "after"), path=path, indent="  ")
    return shown.splitlines()


def _key_order(before: Any, after: Any, path: str) -> list[str]:
    """Places where the same keys come in another order (a tool schema is rendered into the
    prompt as sent, so a reordered ``properties`` is a different prompt)."""
    found: list[str] = []
    if isinstance(before, dict) and isinstance(after, dict):
        if list(before) != list(after) and set(before) == set(after):
            found.append(f"{path or '(top)'}: key order changed: {list(before)} -> {list(after)}")
        for key in before:
            if key in after:
                found += _key_order(before[key], after[key], f"{path}.{key}" if path else key)
    elif isinstance(before, list) and isinstance(after, list):
        for index, (x, y) in enumerate(zip(before, after, strict=False)):
            found += _key_order(x, y, f"{path}[{index}]")
    return found


def _tool_findings(before: list[Any], after: list[Any]) -> list[str]:
    if before == after:
        # equal as values; the same keys in another order still change the rendered prompt
        return [
            line for i, t in enumerate(before) for line in _key_order(t, after[i], f"tools[{i}]")
        ]
    names_before = [_tool_name(t) for t in before]
    names_after = [_tool_name(t) for t in after]
    lines = []
    added = [n for n in names_after if n not in names_before]
    removed = [n for n in names_before if n not in names_after]
    if added:
        lines.append(f"added: {added}")
    if removed:
        lines.append(f"removed: {removed}")
    common_before = [n for n in names_before if n in names_after]
    common_after = [n for n in names_after if n in names_before]
    if common_before != common_after:
        lines.append(f"order changed: {names_before} -> {names_after}")
    for index, name in enumerate(names_after):
        if name in names_before:
            old = before[names_before.index(name)]
            for line in _details(old, after[index], f"tools[{index}]"):
                lines.append(f"{name!r}: {line}")
            lines += _window(old, after[index], f"tools[{index}]")
    return lines


def _message_findings(before: PrefixView, after: PrefixView) -> list[str]:
    if after.chained:
        return []
    old, new = before.messages, after.messages
    for index, message in enumerate(old):
        place = f"{after.key}[{after.offset + index}]"
        if index >= len(new):
            return [
                f"{after.key}: {len(new)} message(s) after the system prompt, fewer than the "
                f"previous request's {len(old)}: the history was cut or rewritten from {place} on"
            ]
        if new[index] != message:
            return [
                f"{place} is not the previous request's message {before.offset + index}: "
                f"the history was rewritten",
                *_details(message, new[index], place),
                *_window(message, new[index], place),
            ]
    return []


def _compare(
    before: ModelRequest, after: ModelRequest, ignore: Collection[str]
) -> list[tuple[str, list[str]]]:
    old, new = _view(before), _view(after)
    findings: list[tuple[str, list[str]]] = []
    if "system" not in ignore and old.system != new.system:
        findings.append(
            ("system", _details(old.system, new.system) + _window(old.system, new.system))
        )
    if "tools" not in ignore:
        tools = _tool_findings(old.tools, new.tools)
        if tools:
            findings.append(("tools", tools))
    if "cache" not in ignore:
        cache_old = {k: v for k, v in old.cache.items() if k not in ignore}
        cache_new = {k: v for k, v in new.cache.items() if k not in ignore}
        if cache_old != cache_new:
            findings.append(
                ("cache", _details(cache_old, cache_new) + _window(cache_old, cache_new))
            )
    if "messages" not in ignore:
        messages = _message_findings(old, new)
        if messages:
            findings.append(("messages", messages))
    return findings


def _default_conversation(request: ModelRequest) -> Hashable:
    return (request.wire, request.session)


def find_prefix_divergence(
    source: Any,
    *,
    conversation: Callable[[ModelRequest], Hashable] | None = None,
    ignore: Collection[str] = (),
) -> PrefixReport:
    """Check ``source`` (see ``model_requests``) and return the report; its ``divergence`` is
    the first request that broke its conversation's prefix, or ``None``."""
    if isinstance(ignore, str):
        raise UsageError(f"ignore= takes a collection of names, not the string {ignore!r}")
    key = conversation or _default_conversation
    requests = model_requests(source)
    last: dict[Hashable, ModelRequest] = {}
    for request in requests:
        name = key(request)
        previous = last.get(name)
        last[name] = request
        if previous is None:
            continue
        if previous.wire != request.wire:
            raise UsageError(
                f"{request.describe()} and {previous.describe()} are in one conversation "
                f"{name!r} but on different wires; give conversation= a key that tells them apart"
            )
        findings = _compare(previous, request, ignore)
        if findings:
            return PrefixReport(
                len(requests), len(last), PrefixDivergence(previous, request, findings)
            )
    return PrefixReport(len(requests), len(last))


def assert_prefix_stable(
    source: Any,
    *,
    conversation: Callable[[ModelRequest], Hashable] | None = None,
    ignore: Collection[str] = (),
    min_requests: int = 2,
) -> PrefixReport:
    """Fail with ``PrefixUnstable`` at the first request whose prompt is not the previous
    one's plus new messages (see the module docstring); return what was checked.

    ``source``: a stand-in (``.requests``), a ``Cassette`` or cassette path, or a list of
    journal entries / interactions / ``ModelRequest``. Fewer than ``min_requests`` model
    requests is a failure too (a check over nothing proves nothing; pass ``min_requests=1``
    where one request is right).
    """
    __tracebackhide__ = True
    report = find_prefix_divergence(source, conversation=conversation, ignore=ignore)
    if report.divergence is not None:
        raise PrefixUnstable(report.divergence.explain())
    if report.requests < min_requests:
        raise PrefixUnstable(
            f"only {report.requests} model request(s) were recorded, fewer than "
            f"min_requests={min_requests}: the prefix check had nothing to compare. Did the "
            f"app talk to this stand-in (or record into this cassette)?"
        )
    return report
