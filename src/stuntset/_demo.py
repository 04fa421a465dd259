"""``stuntset demo``: play the whole scenario catalog through the doubles, check every stream
against the event contract, and print what happened. Exits non-zero if any check fails.

Each layer contributes a section: a function returning rows (a section per layer, so the
table shows the same catalog at every layer), declared in its own ``_demo`` module on
``stuntset._demo_rows`` and collected here; no layer imports this module.
"""

from __future__ import annotations

import anyio
from rich.table import Table

from stuntset import scenarios
from stuntset._cli_output import console
from stuntset._demo_rows import DemoRow, Section, load_sections
from stuntset.driver import drive
from stuntset.errors import HarnessFailure
from stuntset.events import Event, RunStarted
from stuntset.providers import ScriptedProvider
from stuntset.seams import deterministic

__all__ = ["DemoRow", "agent_rows", "run_demo"]


async def _play(entry: scenarios.Scenario) -> DemoRow:
    provider = ScriptedProvider(entry.build())
    outcomes: list[str] = []
    total = 0

    def stuck_guard(event: Event) -> bool:
        # the stuck scenario never ends by itself: interrupt it once it has started
        return entry.name == "stuck" and isinstance(event, RunStarted)

    try:
        while provider.player.unused():
            events = await drive(
                provider.start(f"demo prompt for {entry.name}"), interrupt_when=stuck_guard
            )
            total += len(events)
            outcomes.append(events[-1].type)
        provider.assert_all_turns_used()
    except HarnessFailure as failure:
        return DemoRow(
            "agent (scripted)", entry.name, len(outcomes), total, "", False, str(failure)
        )
    return DemoRow("agent (scripted)", entry.name, len(outcomes), total, " → ".join(outcomes), True)


def agent_rows() -> list[DemoRow]:
    """The catalog through the in-process scripted provider, deterministic."""

    async def main() -> list[DemoRow]:
        return [await _play(entry) for entry in scenarios.all()]

    with deterministic():
        return anyio.run(main)


def run_demo(sections: list[Section] | None = None) -> int:
    """Print the demo table (by default: the scripted agent, then every layer's section
    that ``stuntset._demo_rows.SECTIONS`` names); 1 if any check failed, else 0."""
    if sections is None:
        sections = [agent_rows, *load_sections()]
    rows = [row for section in sections for row in section()]
    table = Table(title="stuntset demo: the scenario catalog, checked against the event contract")
    for column in ("layer", "scenario", "runs", "events", "terminal state", "contract"):
        table.add_column(column, justify="right" if column in ("runs", "events") else "left")
    for row in rows:
        verdict = "[green]ok[/green]" if row.ok else f"[red]FAILED[/red] {row.detail}"
        table.add_row(row.layer, row.scenario, str(row.runs), str(row.events), row.outcome, verdict)
    out = console()
    out.print(table)
    failed = [row for row in rows if not row.ok]
    out.print(
        f"{len(rows) - len(failed)} of {len(rows)} checks passed"
        + (f"; failed: {', '.join(r.scenario for r in failed)}" if failed else "")
    )
    return 1 if failed else 0
