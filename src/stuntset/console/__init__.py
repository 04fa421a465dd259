"""The stuntset console: a web page for the stand-ins, the sessions and the cassettes.

Three views, server-rendered with a little plain JavaScript (package data; nothing from a
CDN): **Requests** (a model double's journal, live), **Sessions** (a session's timeline,
live over the daemon's WebSocket) and **Cassettes** (transcripts with timing bars, and a
side-by-side diff). Every route sits behind the daemon's guard (Host, Origin, token).
Served by ``stuntset console``, ``stuntset daemon --console`` and ``stuntset serve
--console``.
"""

from __future__ import annotations

from .app import ConsoleSources, console_app
from .mount import daemon_console, with_console

__all__ = ["ConsoleSources", "console_app", "daemon_console", "with_console"]
