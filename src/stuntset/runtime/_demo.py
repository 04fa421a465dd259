"""The daemon's section of ``stuntset demo``: scripted sessions through a real daemon over a
real WebSocket, disconnecting mid-stream and resuming from the cursor; the invariants hold
when the stream seen across the reconnect passes the event contract and equals a full replay,
event for event (so their projections are equal too)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import msgspec

from stuntset._demo_rows import DemoRow
from stuntset.contract import check_events
from stuntset.errors import HarnessFailure
from stuntset.events import Event, decode, encode, is_terminal
from stuntset.runtime.client import DaemonClient
from stuntset.runtime.daemon import DaemonHandle, start_daemon
from stuntset.runtime.testing import scenario_registry
from stuntset.seams import deterministic

__all__ = ["DEMO_SCENARIOS", "daemon_rows"]

DEMO_SCENARIOS = (
    "happy_path",
    "tool_use",
    "interleaved_streaming",
    "crash_mid_turn",
)
_LAYER = "daemon (websocket, resumed)"


def _events(raw: list[dict[str, Any]]) -> list[Event]:
    return [decode(msgspec.json.encode(item)) for item in raw]


def _play(daemon: DaemonHandle, workdir: Path, scenario: str) -> DemoRow:
    with daemon.client() as first:
        task = first.call("create_task", workdir=str(workdir))
        session_id = first.call("create_session", task_id=task["task_id"], provider=scenario)[
            "session_id"
        ]
        first.call("subscribe", session_id=session_id)
        first.call("start_turn", session_id=session_id, prompt=f"demo prompt for {scenario}")
        seen = first.events(3)  # then the connection drops mid-stream
        epoch, after = first.position(session_id)  # what a client keeps while away
    with daemon.client() as second:
        second.call("subscribe", session_id=session_id, after=after, epoch=epoch)
        while not is_terminal(_events(seen[-1:])[0]):
            seen += second.events(1)
    with DaemonClient(daemon.info) as third:
        third.call("subscribe", session_id=session_id)
        replay = third.events(len(seen))
    live, replayed = _events(seen), _events(replay)
    check_events(live)
    if live != replayed:  # (equal events project to equal views: no projection to compare)
        at = next(i for i, (a, b) in enumerate(zip(live, replayed, strict=True)) if a != b)
        raise HarnessFailure(
            f"{scenario}: the resumed stream differs from the replay at event #{at}: live "
            f"{encode(live[at]).decode()}, replayed {encode(replayed[at]).decode()}"
        )
    return DemoRow(_LAYER, scenario, 1, len(live), live[-1].type, True)


def _row(daemon: DaemonHandle, workdir: Path, scenario: str) -> DemoRow:
    """``scenario``'s row: played, or what went wrong."""
    try:
        return _play(daemon, workdir, scenario)
    except (HarnessFailure, TimeoutError, OSError) as failure:
        return DemoRow(_LAYER, scenario, 0, 0, "", False, str(failure))


def daemon_rows() -> list[DemoRow]:
    """A few catalog scenarios through one daemon, each resumed after a disconnect."""
    rows: list[DemoRow] = []
    with deterministic(), tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        daemon = start_daemon(db=root / "demo.db", providers=scenario_registry())
        try:
            rows.extend(_row(daemon, root, scenario) for scenario in DEMO_SCENARIOS)
        finally:
            daemon.stop()
    return rows
