"""The body of ``stuntset log doctor``."""

from __future__ import annotations

from rich.table import Table

from stuntset._cli_output import console
from stuntset.log.doctor import BadRow

__all__ = ["print_doctor"]


def print_doctor(db: str, rows: list[BadRow], *, moved: bool) -> int:
    """Print the rows that do not decode; the exit status (1: some are left in place)."""
    out = console()
    if not rows:
        out.print(f"{db}: every event decodes")
        return 0
    table = Table("session", "seq", "why", title=f"{db}: {len(rows)} row(s) that do not decode")
    for row in rows:
        table.add_row(row.session_id, str(row.seq), row.why)
    out.print(table)
    if moved:
        out.print(f"moved {len(rows)} row(s) to the table events_aside; the sessions read again")
        return 0
    out.print("leave them, or move them aside: stuntset log doctor DB --move-aside")
    return 1
