"""The browser snapshot tier: a real Chromium (the user's own, through Playwright's
executable path), ARIA snapshots of a page compared with committed files, and a WebSocket
fault gate between a page and its server. See ``chromium``, ``snapshot`` and ``wsgate``."""

from __future__ import annotations

from .chromium import LAUNCH_ARGS, find_chromium, missing_reason
from .snapshot import PageSnapshot, SnapshotFiles
from .wsgate import WebSocketGate

__all__ = [
    "LAUNCH_ARGS",
    "PageSnapshot",
    "SnapshotFiles",
    "WebSocketGate",
    "find_chromium",
    "missing_reason",
]
