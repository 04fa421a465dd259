"""``drift()``: every chosen catalog scenario played through each real CLI and its fake
(``runners``), normalized (``normalize``), compared (``compare``) and judged against the
allowlist (``allowlist``); the report as a table, Markdown or JSON.

Runs go concurrently, ``jobs`` at a time (each is one program over its own double, in its own
directories); ids and the clock are the deterministic seams (the double skips its scripted
delays, the fakes play theirs at a tenth or a hundredth).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio

from stuntset import scenarios as catalog
from stuntset.checks._grid import columns, scenario_names, work_root
from stuntset.events import Event
from stuntset.seams import deterministic

from .allowlist import ALLOWLIST, Allowed, Race, load_allowlist
from .compare import differences
from .native import native_script, prepare
from .normalize import describe, normalize, result_label, result_step
from .runners import (
    CLIS,
    COLUMNS,
    NODE_GEMINI,
    SDKS,
    Played,
    binary_version,
    chosen_binary,
    missing,
    play_side,
)
from .sessions import session_plan

__all__ = ["DriftCell", "DriftReport", "drift", "outcome_of", "readme_table"]


@dataclass
class DriftCell:
    """One scenario × column (``cli``: ``claude``, ``claude-session``, ``codex``,
    ``codex-exec``, ``gemini``): ``status`` is ``same``, ``allowed`` (differs, as the
    allowlist says), ``differs`` (not allowed), ``error`` (a side could not be played), ``not
    installed`` (no real binary: ``reason`` says why) or ``not played`` (the column does not
    play the scenario: ``sessions``); ``real``/``fake`` how each run ended."""

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
    stale: list[Allowed | Race] = field(default_factory=list)  # entries that matched nothing
    binaries: dict[str, str] = field(default_factory=dict)  # CLI → "<path> (<version>)"
    missing: dict[str, str] = field(default_factory=dict)  # CLI → why it was not played

    @property
    def failed(self) -> bool:
        """A difference outside the allowlist, a side not played, or an allowlist entry that
        matched nothing."""
        return bool(self.stale) or any(c.status in ("differs", "error") for c in self.cells)

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
                "binaries": self.binaries,
                "missing": self.missing,
                "cells": [asdict(cell) for cell in self.cells],
                "stale_allowlist": [asdict(entry) for entry in self.stale],
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str) -> DriftReport:
        """A report back from ``to_json()`` (``stuntset drift --json``)."""
        data = json.loads(text)
        stale: list[Allowed | Race] = []
        for e in data["stale_allowlist"]:
            if not isinstance(e["column"], str):
                e["column"] = tuple(e["column"])
            if "outcomes" in e:
                stale.append(Race(**{**e, "outcomes": tuple(tuple(o) for o in e["outcomes"])}))
            else:
                stale.append(Allowed(**e))
        cells = [DriftCell(**cell) for cell in data["cells"]]
        return cls(cells, data["seconds"], stale, data.get("binaries", {}), data.get("missing", {}))

    def markdown(self) -> str:
        """scenario × CLI → same / allowed / differs (the first difference)."""
        table = self.table()
        clis = list(dict.fromkeys(cell.cli for cell in self.cells))
        lines = ["| scenario | " + " | ".join(clis) + " |", "|---|" + "---|" * len(clis)]
        for scenario, row in table.items():
            cells = " | ".join(_md(row[cli].label) if cli in row else "" for cli in clis)
            lines.append(f"| `{scenario}` | {cells} |")
        return "\n".join(lines) + "\n"


def readme_table(report: DriftReport, allowed: list[Allowed | Race] | None = None) -> str:
    """The README's table: per scenario and CLI, how the real binary's run ended, how the
    fake's did (with its final result's fields in brackets: ``completed [success, usage]``,
    except for a pair with a race, whose result the race may decide), and the verdict —
    ``same``, or ``allowed (<kind of reason>)`` when the allowlist has an entry for the pair
    (a racy pair stays ``allowed`` when it came out the same), so the table changes only when
    an outcome or the allowlist does."""
    entries = load_allowlist() if allowed is None else allowed
    found: dict[tuple[str, str], set[str]] = {}
    for entry in entries:
        for column in entry.columns:
            found.setdefault((entry.scenario, column), set()).add(entry.kind)
    kinds = {pair: ", ".join(sorted(names)) for pair, names in found.items()}
    raced = {(e.scenario, c) for e in entries if isinstance(e, Race) for c in e.columns}
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
            shown = [
                _with_result(outcome, steps, (scenario, cli) in raced)
                for outcome, steps in ((cell.real, cell.real_steps), (cell.fake, cell.fake_steps))
            ]
            parts.append(f" {shown[0]} | {shown[1]} | {verdict} |")
        lines.append(f"| `{scenario}` |" + "".join(parts))
    return "\n".join(lines) + "\n"


def _with_result(outcome: str, steps: list[dict[str, Any]], raced: bool) -> str:
    """``outcome`` with the final result's fields (the last step, when it is one)."""
    if not outcome:
        return "—"
    if raced or not steps or steps[-1]["type"] != "result":
        return outcome
    return f"{outcome} [{result_label({k: v for k, v in steps[-1].items() if k != 'type'})}]"


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
    scenario: str, cli: str, real: Played, fake: Played, allowed: Sequence[Allowed | Race]
) -> tuple[DriftCell, list[Allowed | Race]]:
    """The cell of one pair, and the allowlist entries that matched it: a race's outcomes
    first (each side must show a known one; its span then compares equal), then every
    difference left must be covered by an ``[[allowed]]`` entry."""
    real_steps = normalize(real.events, real.cwd) + result_step(real.result)
    fake_steps = normalize(fake.events, fake.cwd) + result_step(fake.result)
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
    mine = [e for e in allowed if e.scenario == scenario and cli in e.columns]
    problem = ""
    if real.error is not None:
        problem = f"real: {real.error}"
    elif fake.error is not None:
        problem = f"fake: {fake.error}"
    if problem:
        cell.status, cell.difference = "error", problem
        return cell, []
    used: list[Allowed | Race] = []
    ours, theirs = list(real_steps), list(fake_steps)
    for race in (e for e in mine if isinstance(e, Race)):
        picked = [race.outcome(ours), race.outcome(theirs)]
        for side, outcome, steps in zip(("real", "fake"), picked, (ours, theirs), strict=True):
            if outcome is None:
                shown = describe(steps[race.step]) if race.step < len(steps) else "(nothing)"
                cell.status = "differs"
                cell.difference = (
                    f"step {race.step}: the {side} side's outcome of the race is not one the "
                    f"allowlist knows (it shows {shown})"
                )
                return cell, used
        used.append(race)
        if picked[0] != picked[1]:
            cell.status, cell.reason = "allowed", race.reason
            cell.difference = (
                f"step {race.step}: race outcome {picked[0]} (real), {picked[1]} (fake)"
            )
        for steps, outcome in zip((ours, theirs), picked, strict=True):
            assert outcome is not None
            steps[race.step : race.step + len(race.outcomes[outcome])] = [{"type": "race"}]
    for tail in (e for e in mine if isinstance(e, Allowed) and e.field == "rest"):
        if tail.rest(ours, theirs):
            used.append(tail)
            cell.status, cell.reason = "allowed", tail.reason
            cell.difference = f"from step {tail.step} on: {tail.kind}"
            ours, theirs = ours[: tail.step], theirs[: tail.step]
    found = differences(ours, theirs)
    if not found:
        return cell, used
    explained: list[str] = []
    for difference in found:
        entry = next(
            (e for e in mine if isinstance(e, Allowed) and e.covers(cli, scenario, difference)),
            None,
        )
        if entry is None:
            cell.status, cell.difference = "differs", difference.explain()
            return cell, used
        if all(e is not entry for e in used):
            used.append(entry)
        explained.append(difference.explain())
    cell.status = "allowed"
    cell.difference = "; ".join(explained)
    cell.reason = " / ".join(e.reason for e in used)
    return cell, used


def _unmatched(
    entry: Allowed | Race,
    cells: dict[tuple[str, str], DriftCell],
    used: list[tuple[Allowed | Race, str]],
) -> bool:
    """``entry`` matched nothing in a column of its that was played and judged this run."""
    return any(
        cells[column, entry.scenario].status not in ("not played", "not installed", "error")
        and not any(e is entry and c == column for e, c in used)
        for column in entry.columns
        if (column, entry.scenario) in cells
    )


def drift(
    clis: Iterable[str] | None = None,
    scenarios: Iterable[str] | None = None,
    *,
    allowlist: str | Path = ALLOWLIST,
    jobs: int = 4,
    timeout: float = 60.0,
    workdir: str | Path | None = None,
    progress: Callable[[DriftCell], Any] | None = None,
    claude_bin: str | Path | None = None,
    codex_bin: str | Path | None = None,
    gemini_bin: str | Path | None = None,
    node_gemini: Path = NODE_GEMINI,
) -> DriftReport:
    """Play ``scenarios`` (default: the catalog) on ``clis`` (default: every column), real
    and fake, and judge each pair (see the module docs). The real binaries: ``claude_bin`` /
    ``codex_bin`` / ``gemini_bin``, else ``$STUNTSET_CLAUDE_BIN`` / ``$STUNTSET_CODEX_BIN``
    / ``$STUNTSET_GEMINI_BIN``, else the bundled ones (gemini: the Node tier's); the report
    names each one's version, and why a column whose binary was not found was not played
    (its cells ``not installed``; the other columns still run). ``node_gemini``: where the
    Node tier's ``gemini`` is looked for."""
    chosen = columns(clis, CLIS, "CLI")
    names = scenario_names(scenarios)
    allowed = load_allowlist(allowlist)
    given = {"claude": claude_bin, "codex": codex_bin, "gemini": gemini_bin}
    programs = dict.fromkeys(COLUMNS[cli] for cli in chosen)
    binaries = {p: chosen_binary(p, given[p], node_gemini=node_gemini) for p in programs}
    with work_root(workdir, "stuntset-drift-") as root, deterministic():
        report = anyio.run(
            _drift, chosen, names, allowed, root, jobs, timeout, progress, binaries, node_gemini
        )
    report.binaries = {
        p: f"{b} ({binary_version(b)})" for p, b in binaries.items() if b is not None
    }
    report.missing = {p: missing(p, node_gemini) for p, b in binaries.items() if b is None}
    return report


async def _drift(
    clis: list[str],
    names: list[str],
    allowed: list[Allowed | Race],
    root: Path,
    jobs: int,
    timeout: float,
    progress: Callable[[DriftCell], Any] | None,
    binaries: dict[str, Path | None],
    node_gemini: Path,
) -> DriftReport:
    import importlib.util
    import time

    began = time.monotonic()
    limiter = anyio.CapacityLimiter(max(1, jobs))
    cells: dict[tuple[str, str], DriftCell] = {}
    used: list[tuple[Allowed | Race, str]] = []  # each entry with a column it matched in

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
            cwd = where / which / "cwd"
            prepare(script, cwd)
            async with limiter:
                sides[which] = await play_side(
                    cli,
                    which,
                    native_script(script, COLUMNS[cli], cwd),
                    where / which,
                    binary=binary,
                    timeout=timeout,
                    prompts=prompts,
                )
                sides[which].cwd = str(cwd)

        async with anyio.create_task_group() as group:
            group.start_soon(side, "real")
            group.start_soon(side, "fake")
        cell, matched = _judge(name, cli, sides["real"], sides["fake"], allowed)
        used.extend((entry, cli) for entry in matched)
        cells[cli, name] = cell
        if progress is not None:
            progress(cell)

    async with anyio.create_task_group() as group:
        for cli in clis:
            binary = binaries[COLUMNS[cli]]
            sdk = SDKS[cli]
            if binary is None or (sdk is not None and importlib.util.find_spec(sdk) is None):
                why = missing(COLUMNS[cli], node_gemini) if binary is None else f"no {sdk} package"
                for name in names:
                    cells[cli, name] = DriftCell(name, cli, "not installed", reason=why)
                continue
            for name in names:
                group.start_soon(one, cli, name, binary)
    ordered = [cells[cli, name] for name in names for cli in clis]
    stale = [e for e in allowed if _unmatched(e, cells, used)]
    return DriftReport(ordered, time.monotonic() - began, stale)
