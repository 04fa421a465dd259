"""The bottom of ``stuntset demo``: the row every layer's section returns, and where the
sections are.

Each layer declares its demo section in its own ``_demo`` module: a function returning
``DemoRow``\\ s, built on this module alone (never on the demo command above it). ``SECTIONS``
names them as ``"module:function"`` entries, in table order; ``stuntset demo``
(``stuntset._demo``) imports each one when it runs, so nothing is imported upward and a layer
whose extra is missing costs nothing until then.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import msgspec

__all__ = ["SECTIONS", "DemoRow", "Section", "load_section", "load_sections"]


class DemoRow(msgspec.Struct, frozen=True):
    """One scenario through one layer: what happened, and whether it was what it must be."""

    layer: str
    scenario: str
    runs: int
    events: int
    outcome: str
    ok: bool
    detail: str = ""


#: A layer's demo section: one row per scenario it plays.
Section = Callable[[], list[DemoRow]]

#: The layers' sections after the demo's own (the scripted agent), in table order.
SECTIONS: tuple[str, ...] = (
    "stuntset.doubles.model._demo:model_rows",
    "stuntset.doubles.cli.claude._demo:claude_rows",
    "stuntset.doubles.cli.codex._demo:codex_rows",
    "stuntset.runtime._demo:daemon_rows",
    "stuntset.cassettes._demo:cassette_rows",
)


def load_section(entry: str) -> Section:
    """The section a ``"module:function"`` entry names."""
    module, _, name = entry.partition(":")
    section = getattr(importlib.import_module(module), name, None)
    if not callable(section):
        raise LookupError(f"demo section {entry!r}: {module} has no function {name!r}")
    return section  # type: ignore[no-any-return]


def load_sections(entries: tuple[str, ...] = SECTIONS) -> list[Section]:
    """Every section ``entries`` names, in order."""
    return [load_section(entry) for entry in entries]
