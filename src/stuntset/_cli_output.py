"""Rich rendering for the ``stuntset`` command (tables to stdout, kept out of the logic)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from stuntset import scenarios
from stuntset.cassettes import Cassette
from stuntset.script import Script, kind_of

__all__ = ["console", "print_cassette", "print_scenarios", "print_script_summary", "print_verify"]


def console() -> Console:
    out = Console(highlight=False, soft_wrap=False)
    if not out.is_terminal:
        out.width = max(out.width, 140)
    return out


def print_scenarios() -> None:
    table = Table(title="stuntset scenario catalog")
    table.add_column("scenario", style="bold")
    table.add_column("kind")
    table.add_column("what it is")
    for entry in scenarios.all():
        table.add_row(
            escape(entry.name), "failure" if entry.fault else "feature", escape(entry.description)
        )
    console().print(table)


def print_script_summary(script: Script) -> None:
    # names and match strings come from the file: shown as written, never read as Rich markup
    table = Table(
        title=f"{escape(script.label())}: {len(script.turns)} turn(s), seed {script.seed}"
    )
    table.add_column("turn", justify="right")
    table.add_column("times", justify="right")
    table.add_column("match")
    table.add_column("steps")
    for index, t in enumerate(script.turns):
        name = f"{t.name} " if t.name else ""
        table.add_row(
            escape(f"{index} {name}".strip()),
            str(t.times),
            escape(t.match.describe()) if t.match else "any",
            ", ".join(kind_of(s) for s in t.steps),
        )
    console().print(table)


def print_verify(paths: tuple[str, ...]) -> int:
    """Scan ``paths``: a secret is a line on stdout (exit 1); a file that does not parse, or a
    named path that is no regular file, a line on stderr naming file and line (exit 2); a
    skipped entry of a tree, a note on stderr."""
    import click

    from stuntset.cassettes import verify_tree
    from stuntset.cassettes.verify import NOTES

    out = console()
    total = 0
    problems = []
    for path in paths:
        checked, found = verify_tree(path)
        total += checked
        problems.extend(found)
    for problem in problems:
        if problem.kind == "secret":
            out.print(problem.describe(), markup=False)
        else:
            label = "note" if problem.kind in NOTES else "error"
            click.echo(f"{label}: {problem.describe()}", err=True)
    counted = [p for p in problems if p.kind not in NOTES]
    out.print(f"checked {total} cassette/JSONL file(s): {len(counted)} problem(s)")
    if any(p.kind == "invalid" for p in problems):
        return 2
    return 1 if counted else 0


def print_cassette(cassette: Cassette, *, frames: bool = False) -> None:
    from stuntset.cassettes.show import transcript

    out = console()
    for line in transcript(cassette, frames=frames):
        out.print(line, markup=False)
