"""The Requests view: what the model doubles were asked and what they answered.

One row per journal entry (``stuntset.doubles.model.journal``): the wire, the scenario, the
matched turn, the status, the fault the script injected, and every frame of the reply with
its offset (bytes from the start of the body, and seconds on the double's clock: the
pauses the script asked for). Rows are filtered and searched in the page; ``rows_after``
serves the new ones to the page as they arrive.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from stuntset.doubles.model.double import ModelDouble
from stuntset.doubles.model.journal import JournalEntry
from stuntset.wires import WIRE_NAMES, Abort, Pause, Reply, Stall

from ._html import esc

__all__ = ["Exchange", "FrameRow", "exchanges", "render_rows", "render_view"]


@dataclass(frozen=True, slots=True)
class FrameRow:
    """One write of a reply: its byte offset, its time offset (s) and its text."""

    offset: int
    t: float
    text: str


@dataclass(frozen=True, slots=True)
class Exchange:
    """A request as the console shows it."""

    entry: JournalEntry
    fault: str | None
    frames: tuple[FrameRow, ...]
    ending: str | None  # "stall", "abort", "reset": how the reply ended, if not normally


def _frames(reply: Reply | None) -> tuple[tuple[FrameRow, ...], str | None]:
    if reply is None:
        return (), None
    rows: list[FrameRow] = []
    offset, t = 0, reply.wait
    ending: str | None = None
    for action in reply.actions:
        if isinstance(action, bytes):
            rows.append(FrameRow(offset, t, action.decode("utf-8", "replace")))
            offset += len(action)
        elif isinstance(action, Pause):
            t += action.seconds
        elif isinstance(action, Stall):
            ending = "stall"
        elif isinstance(action, Abort):
            ending = "reset" if action.reset else "abort"
    return tuple(rows), ending


def _fault(double: ModelDouble, entry: JournalEntry) -> str | None:
    """The fault steps of the turn that answered (from the script playing now)."""
    if entry.turn is None:
        return None
    script = double.script
    if entry.scenario is not None:
        found = double._scenarios.get(entry.scenario)
        if found is None:
            return None
        script = found.script
    turns = script.turns
    if not turns:
        return None
    turn = turns[entry.turn % len(turns)]
    tags = [
        str(step.__struct_config__.tag)
        for step in getattr(turn, "steps", ())
        if type(step).__name__ not in _PLAIN
    ]
    return ", ".join(tags) or None


#: Steps that are not faults.
_PLAIN = frozenset(
    {"Text", "Reasoning", "ToolCall", "ToolResult", "ApprovalRequest", "InputRequest", "Usage"}
    | {"Delay"}
)


def exchanges(double: ModelDouble, after: int = -1) -> list[Exchange]:
    """The requests of ``double`` after index ``after``, with their frames and fault."""
    found = []
    for entry, reply in double.journal.exchanges(after):
        frames, ending = _frames(reply)
        found.append(Exchange(entry, _fault(double, entry), frames, ending))
    return found


def _status(exchange: Exchange) -> str:
    status = exchange.entry.status
    if status is None:
        return exchange.ending or "no reply"
    return f"{status} {exchange.ending}" if exchange.ending else str(status)


def _body(value: Any) -> str:
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    return text if len(text) <= 4000 else text[:4000] + "…"


def _row(exchange: Exchange) -> str:
    entry = exchange.entry
    status = _status(exchange)
    failed = entry.status is None or entry.status >= 400 or exchange.ending is not None
    frames = "".join(
        f"<li><code>+{frame.offset} B · {frame.t * 1000:.0f} ms</code> "
        f"<span>{esc(frame.text.strip())}</span></li>"
        for frame in exchange.frames
    )
    wire = entry.wire or "-"
    scenario = entry.scenario or "-"
    turn = "-" if entry.turn is None else str(entry.turn + 1)
    fault = exchange.fault or "-"
    search = " ".join([entry.path, wire, scenario, fault, status, _body(entry.body)]).lower()
    return (
        f'<tr class="request{" failed" if failed else ""}" data-index="{entry.index}" '
        f'data-wire="{esc(wire)}" data-state="{"failed" if failed else "ok"}" '
        f'data-search="{esc(search)}">'
        f"<td>{entry.index + 1}</td><td>{esc(entry.method)} {esc(entry.path)}</td>"
        f"<td>{esc(wire)}</td><td>{esc(scenario)}</td><td>{esc(turn)}</td>"
        f"<td>{esc(fault)}</td><td>{esc(status)}</td>"
        f"<td><details><summary>{len(exchange.frames)} frame(s)</summary>"
        f"<p>request body: <code>{esc(_body(entry.body))}</code></p>"
        f'<ol class="frames">{frames}</ol></details></td></tr>'
    )


def render_rows(found: list[Exchange]) -> str:
    """Table rows for ``found`` (also what the page fetches as requests arrive)."""
    return "".join(_row(exchange) for exchange in found)


def render_view(source: Callable[[], ModelDouble | None]) -> str:
    """The body of the Requests page."""
    double = source()
    if double is None:
        return (
            "<p>No model double is attached to this console: run <code>stuntset console</code> "
            "or <code>stuntset serve --console</code> and point a client at it.</p>"
        )
    found = exchanges(double)
    last = found[-1].entry.index if found else -1
    return (
        '<form class="filters" role="search" aria-label="Filter requests">'
        '<label>Search <input type="search" name="q" id="request-search"></label>'
        '<label>Wire <select name="wire" id="request-wire"><option value="">all</option>'
        + "".join(f"<option>{esc(name)}</option>" for name in WIRE_NAMES)
        + "</select></label>"
        '<label>Status <select name="state" id="request-state"><option value="">all</option>'
        '<option value="ok">ok</option><option value="failed">failed</option></select></label>'
        "</form>"
        f'<p id="request-count" role="status">{len(found)} request(s)</p>'
        f'<table id="requests" data-last="{last}"><thead><tr><th>#</th><th>Request</th>'
        "<th>Wire</th><th>Scenario</th><th>Turn</th><th>Fault</th><th>Status</th>"
        f"<th>Reply</th></tr></thead><tbody>{render_rows(found)}</tbody></table>"
    )
