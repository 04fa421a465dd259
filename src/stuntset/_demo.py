"""``stuntset demo``: play the whole scenario catalog through the doubles, check every stream
against the event contract, and print what happened. Exits non-zero if any check fails.

Each double contributes a section: a function returning rows (a section per layer, so the
table shows the same catalog at every layer).
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import msgspec
from rich.table import Table

from stuntset import scenarios
from stuntset._cli_output import console
from stuntset.driver import drive
from stuntset.errors import HarnessFailure
from stuntset.events import Event, RunStarted
from stuntset.providers import ScriptedProvider
from stuntset.seams import deterministic

__all__ = ["SECTIONS", "DemoRow", "agent_rows", "run_demo"]


class DemoRow(msgspec.Struct, frozen=True):
    layer: str
    scenario: str
    runs: int
    events: int
    outcome: str
    ok: bool
    detail: str = ""


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


#: Sections of the demo, in order. Doubles append theirs.
SECTIONS: list[Callable[[], list[DemoRow]]] = [agent_rows]


def run_demo(sections: list[Callable[[], list[DemoRow]]] | None = None) -> int:
    """Print the demo table; 1 if any check failed, else 0."""
    rows = [row for section in (SECTIONS if sections is None else sections) for row in section()]
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


def _model_double_rows() -> list[DemoRow]:
    from stuntset.doubles.model._demo import model_rows

    return model_rows()


SECTIONS.append(_model_double_rows)


def _claude_cli_rows() -> list[DemoRow]:
    from stuntset.doubles.cli.claude._demo import claude_rows

    return claude_rows()


SECTIONS.append(_claude_cli_rows)


def _codex_cli_rows() -> list[DemoRow]:
    from stuntset.doubles.cli.codex._demo import codex_rows

    return codex_rows()


SECTIONS.append(_codex_cli_rows)


def _daemon_rows() -> list[DemoRow]:
    from stuntset.runtime._demo import daemon_rows

    return daemon_rows()


SECTIONS.append(_daemon_rows)


def _cassette_rows() -> list[DemoRow]:
    from stuntset.cassettes._demo import cassette_rows

    return cassette_rows()


SECTIONS.append(_cassette_rows)
