"""``drift()``: every chosen catalog scenario played through each real CLI and its fake
(``runners``), normalized (``normalize``), compared (``compare``) and judged against the
allowlist (``allowlist``); the report as a table, Markdown or JSON.

Runs go concurrently, ``jobs`` at a time (each is one program over its own double, in its own
directories); ids and the clock are the deterministic seams (the double skips its scripted
delays, the fakes play theirs at a tenth or a hundredth).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio

from stuntset import scenarios as catalog
from stuntset.checks._grid import columns, scenario_names, work_root
from stuntset.events import Event
from stuntset.seams import deterministic

from .allowlist import ALLOWLIST, Allowed, load_allowlist
from .compare import first_difference
from .normalize import normalize
from .runners import CLIS, SDKS, Played, play_side, real_binary
from .sessions import session_plan

__all__ = ["DriftCell", "DriftReport", "drift", "outcome_of", "readme_table"]


@dataclass
class DriftCell:
    """One scenario × column (``cli``: ``claude``, ``claude-session``, ``codex``,
    ``codex-exec``): ``status`` is ``same``, ``allowed`` (differs, as the allowlist says),
    ``differs`` (not allowed), ``error`` (a side could not be played), ``not installed`` or
    ``not played`` (the column does not play the scenario: ``sessions``); ``real``/``fake``
    how each run ended."""

    scenario: str
    cli: str
    status: str
    real: str = ""
    fake: str = ""
    difference: str = ""
    reason: str = ""
    seconds: dict[str, float] = field(default_factory=dict)  # side → wall time of its run
    requests: int = 0  # model requests the real binary made (its retries show here)
    real_steps: list[dict[str, Any]] = field(default_factory=list)
    fake_steps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def label(self) -> str:
        if self.status in ("same", "not installed", "not played"):
            return self.status
        if self.status == "allowed":
            return f"allowed: {self.difference}"
        if self.status == "error":
            return f"ERROR {self.difference}"
        return f"DIFFERS {self.difference}"


@dataclass
class DriftReport:
    cells: list[DriftCell]
    seconds: float = 0.0
    stale: list[Allowed] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(cell.status in ("differs", "error") for cell in self.cells)

    def table(self) -> dict[str, dict[str, DriftCell]]:
        """scenario → cli → cell."""
        found: dict[str, dict[str, DriftCell]] = {}
        for cell in self.cells:
            found.setdefault(cell.scenario, {})[cell.cli] = cell
        return found

    def to_json(self) -> str:
        return json.dumps(
            {
                "seconds": round(self.seconds, 2),
                "failed": self.failed,
                "cells": [asdict(cell) for cell in self.cells],
                "stale_allowlist": [asdict(entry) for entry in self.stale],
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str) -> DriftReport:
        """A report back from ``to_json()`` (``stuntset drift --json``)."""
        data = json.loads(text)
        stale = [
            Allowed(
                **{
                    **e,
                    "differs": e["differs"]
                    if isinstance(e["differs"], str)
                    else tuple(e["differs"]),
                }
            )
            for e in data["stale_allowlist"]
        ]
        return cls([DriftCell(**cell) for cell in data["cells"]], data["seconds"], stale)

    def markdown(self) -> str:
        """scenario × CLI → same / allowed / differs (the first difference)."""
        table = self.table()
        clis = list(dict.fromkeys(cell.cli for cell in self.cells))
        lines = ["| scenario | " + " | ".join(clis) + " |", "|---|" + "---|" * len(clis)]
        for scenario, row in table.items():
            cells = " | ".join(_md(row[cli].label) if cli in row else "" for cli in clis)
            lines.append(f"| `{scenario}` | {cells} |")
        return "\n".join(lines) + "\n"


def readme_table(report: DriftReport, allowed: list[Allowed] | None = None) -> str:
    """The README's table: per scenario and CLI, how the real binary's run ended, how the
    fake's did, and the verdict — ``same``, or ``allowed (<kind of reason>)`` when the
    allowlist has an entry for the pair (a racy pair stays ``allowed`` when it came out the
    same), so the table changes only when an outcome or the allowlist does."""
    entries = load_allowlist() if allowed is None else allowed
    kinds = {(e.scenario, e.cli): e.reason.split(":")[0] for e in entries}
    table = report.table()
    clis = list(dict.fromkeys(cell.cli for cell in report.cells))
    head = "".join(f" {c}: real | {c}: fake | {c} |" for c in clis)
    lines = ["| scenario |" + head, "|---|" + "---|---|---|" * len(clis)]
    for scenario, row in table.items():
        parts = []
        for cli in clis:
            cell = row[cli]
            kind = kinds.get((scenario, cli))
            if cell.status in ("differs", "error"):
                verdict = "**differs**"
            elif cell.status in ("not installed", "not played"):
                verdict = cell.status
            else:
                verdict = "same" if kind is None else f"allowed ({kind})"
            parts.append(f" {cell.real or '—'} | {cell.fake or '—'} | {verdict} |")
        lines.append(f"| `{scenario}` |" + "".join(parts))
    return "\n".join(lines) + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def outcome_of(events: list[Event], error: str | None = None) -> str:
    """How a run ended, as the matrix writes it: ``completed``, ``killed``, ``crashed:
    <kind>`` (``(retryable)``); ``no terminal`` when none came."""
    if error is not None and not any(e.terminal for e in events):
        return "no terminal"
    for event in events:
        if event.terminal:
            label = event.type.removeprefix("run.")
            kind = getattr(event, "kind", None)
            if kind is not None:
                label += f": {kind}"
            if getattr(event, "retryable", False):
                label += " (retryable)"
            return label
    return "no terminal"


def _judge(
    scenario: str, cli: str, real: Played, fake: Played, allowed: list[Allowed]
) -> tuple[DriftCell, Allowed | None]:
    real_steps, fake_steps = normalize(real.events), normalize(fake.events)
    cell = DriftCell(
        scenario,
        cli,
        "same",
        real=outcome_of(real.events, real.error),
        fake=outcome_of(fake.events, fake.error),
        seconds={"real": round(real.seconds, 2), "fake": round(fake.seconds, 2)},
        requests=real.requests,
        real_steps=real_steps,
        fake_steps=fake_steps,
    )
    problem = ""
    if real.error is not None:
        problem = f"real: {real.error}"
    elif fake.error is not None:
        problem = f"fake: {fake.error}"
    difference = first_difference(real_steps, fake_steps)
    explanation = problem or (difference.explain() if difference is not None else "")
    if not explanation:
        return cell, None
    cell.difference = explanation
    for entry in allowed:
        if entry.covers(scenario, cli, explanation):
            cell.status, cell.reason = "allowed", entry.reason
            return cell, entry
    cell.status = "error" if problem else "differs"
    return cell, None


def drift(
    clis: Iterable[str] | None = None,
    scenarios: Iterable[str] | None = None,
    *,
    allowlist: str | Path = ALLOWLIST,
    jobs: int = 4,
    timeout: float = 60.0,
    workdir: str | Path | None = None,
    progress: Callable[[DriftCell], Any] | None = None,
) -> DriftReport:
    """Play ``scenarios`` (default: the catalog) on ``clis`` (default: both), real and fake,
    and judge each pair (see the module docs)."""
    chosen = columns(clis, CLIS, "CLI")
    names = scenario_names(scenarios)
    allowed = load_allowlist(allowlist)
    with work_root(workdir, "stuntset-drift-") as root, deterministic():
        return anyio.run(_drift, chosen, names, allowed, root, jobs, timeout, progress)


async def _drift(
    clis: list[str],
    names: list[str],
    allowed: list[Allowed],
    root: Path,
    jobs: int,
    timeout: float,
    progress: Callable[[DriftCell], Any] | None,
) -> DriftReport:
    import importlib.util
    import time

    began = time.monotonic()
    limiter = anyio.CapacityLimiter(max(1, jobs))
    cells: dict[tuple[str, str], DriftCell] = {}
    used: set[Allowed] = set()

    async def one(cli: str, name: str, binary: Path) -> None:
        script = catalog.build(name)
        prompts: list[str] | None = None
        if cli == "claude-session":
            plan = session_plan(name)
            if plan is None:
                cells[cli, name] = DriftCell(name, cli, "not played")
                return
            script, prompts = plan
        where = root / cli / name
        sides: dict[str, Played] = {}

        async def side(which: Any) -> None:
            async with limiter:
                sides[which] = await play_side(
                    cli,
                    which,
                    script,
                    where / which,
                    binary=binary,
                    timeout=timeout,
                    prompts=prompts,
                )

        async with anyio.create_task_group() as group:
            group.start_soon(side, "real")
            group.start_soon(side, "fake")
        cell, entry = _judge(name, cli, sides["real"], sides["fake"], allowed)
        if entry is not None:
            used.add(entry)
        cells[cli, name] = cell
        if progress is not None:
            progress(cell)

    async with anyio.create_task_group() as group:
        for cli in clis:
            binary = real_binary(cli)
            sdk = SDKS[cli]
            if binary is None or (sdk is not None and importlib.util.find_spec(sdk) is None):
                for name in names:
                    cells[cli, name] = DriftCell(name, cli, "not installed")
                continue
            for name in names:
                group.start_soon(one, cli, name, binary)
    ordered = [cells[cli, name] for name in names for cli in clis]
    chosen = {(cell.scenario, cell.cli) for cell in ordered}
    stale = [e for e in allowed if (e.scenario, e.cli) in chosen and e not in used]
    return DriftReport(ordered, time.monotonic() - began, stale)
