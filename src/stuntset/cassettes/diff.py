"""A semantic diff of two cassettes, interaction by interaction: what was asked (method, path,
body fields; for a CLI run its argv and each line the client sent) and what came back (status,
and the response read as script steps: text, tool calls, usage), not a text diff of JSON."""

from __future__ import annotations

import json
from itertools import zip_longest
from typing import Any

import msgspec

from stuntset.cassettes.format import Cassette, Interaction, reading, short_json
from stuntset.cassettes.to_script import steps_of
from stuntset.script import kind_of

__all__ = ["diff_cassettes"]


def _short(value: Any) -> str:
    return short_json(value, 100)


def _window(before: dict[str, Any], after: dict[str, Any], key: str) -> list[str]:
    """Where the two values of ``key`` first differ (path and a window around it), when
    ``_short`` cut either of them."""
    a, b = before.get(key), after.get(key)
    if max(len(short_json(a, 10_000)), len(short_json(b, 10_000))) <= 100:
        return []
    from stuntset.explain.window import mismatch_window

    one = {key: a} if key in before else {}
    other = {key: b} if key in after else {}
    shown = mismatch_window(one, other, labels=("old", "new"), path="request", indent="    ")
    return shown.splitlines()


def _content(interaction: Interaction) -> list[str]:
    return [f"{kind_of(step)} {_short(_public(step))}" for step in steps_of(interaction)]


def _public(step: Any) -> dict[str, Any]:
    fields: dict[str, Any] = msgspec.to_builtins(step)
    return {
        k: v for k, v in fields.items() if k not in ("kind", "chunks", "chunk_size", "fragments")
    }


def _asked(interaction: Interaction) -> dict[str, Any]:
    """What the request asked, field by field. For a CLI run: its argv and what the client
    sent, without timing or the ids the client chose for its requests."""
    body = interaction.request.body
    if not isinstance(body, dict):
        return {"body": body}
    if not interaction.wire.endswith("-cli"):
        return body
    from stuntset.doubles.cli._replay_run import without_client_ids

    sent = []
    for line in body.get("stdin", []):
        try:
            sent.append(without_client_ids(json.loads(line["data"])))
        except ValueError:
            sent.append(line["data"])
    return {"argv": body.get("argv"), **{f"stdin[{n}]": m for n, m in enumerate(sent)}}


def _reading(cassette: Cassette, interaction: Interaction) -> tuple[dict[str, Any], list[str]]:
    """What an interaction asked and answered, read once (a content not shaped like its wire
    is a ``CassetteError`` naming its file and line)."""
    with reading(cassette, interaction):
        return _asked(interaction), _content(interaction)


def _interaction_diff(
    old: Interaction,
    new: Interaction,
    before: tuple[dict[str, Any], list[str]],
    after: tuple[dict[str, Any], list[str]],
) -> list[str]:
    lines = []
    for label, a, b in (
        ("method", old.request.method, new.request.method),
        ("path", old.request.path, new.request.path),
        ("status", old.response.status, new.response.status),
    ):
        if a != b:
            lines.append(f"  {label}: {a} → {b}")
    (asked_before, old_steps), (asked_after, new_steps) = before, after
    for key in sorted(set(asked_before) | set(asked_after)):
        if asked_before.get(key) != asked_after.get(key):
            lines.append(
                f"  request.{key}: {_short(asked_before.get(key))} → {_short(asked_after.get(key))}"
            )
            lines += _window(asked_before, asked_after, key)
    for index, (a, b) in enumerate(zip_longest(old_steps, new_steps)):
        if a != b:
            lines.append(f"  response step {index}: {a or '(none)'} → {b or '(none)'}")
    return lines


def diff_cassettes(old: Cassette, new: Cassette) -> list[str]:
    """Lines describing every difference (empty when the two say the same)."""
    lines: list[str] = []
    for position, (a, b) in enumerate(zip_longest(old.interactions, new.interactions)):
        if a is None:
            lines.append(f"+ {b.id}: {b.request.method} {b.request.path} (only in {new.source})")
        elif b is None:
            lines.append(f"- {a.id}: {a.request.method} {a.request.path} (only in {old.source})")
        else:
            changes = _interaction_diff(a, b, _reading(old, a), _reading(new, b))
            if changes:
                lines.append(f"~ interaction {position + 1} ({a.id} → {b.id}):")
                lines += changes
    return lines
