"""The Sessions view: the host's sessions, and one session's timeline.

The list is rendered from the host's rows. A session's page is a frame the script fills
live over the daemon's WebSocket (``subscribe`` from its cursor, again after a reconnect; a
rollback that passed the cursor is shown and the timeline cut back to it).
"""

from __future__ import annotations

from urllib.parse import quote

from stuntset.runtime.models import SessionRecord
from stuntset.runtime.service import SessionService

from ._html import esc, href

__all__ = ["render_list", "render_session"]

_NO_HOST = (
    "<p>No session host here: the Sessions view is served by <code>stuntset daemon "
    "--console</code> and <code>stuntset console</code>.</p>"
)


def render_list(base: str, service: SessionService | None, *, token: str | None = None) -> str:
    """The body of the Sessions page: one link per session, newest first."""
    if service is None:
        return _NO_HOST
    sessions = sorted(
        service.store.all(SessionRecord), key=lambda s: (s.created_at, s.session_id), reverse=True
    )
    if not sessions:
        return '<p role="status">No sessions yet.</p>'
    items = "".join(
        f'<li><a href="{href(base, "/sessions/" + quote(s.session_id, safe=""), token=token)}">'
        f"{esc(s.session_id)}</a> "
        f"· {esc(s.provider)}{' · closed' if s.closed else ''} · "
        f"{len(service.runs(s.session_id))} run(s)</li>"
        for s in sessions
    )
    return f'<ul class="sessions" aria-label="Sessions">{items}</ul>'


def render_session(
    base: str, service: SessionService | None, session_id: str, *, token: str | None = None
) -> str | None:
    """The frame of one session's timeline (``None``: no such session)."""
    if service is None:
        return _NO_HOST
    record = service.store.get(SessionRecord, session_id)
    if record is None:
        return None
    return (
        f"<p>provider <strong>{esc(record.provider)}</strong> · "
        f'<a href="{href(base, "/sessions", token=token)}">all sessions</a></p>'
        '<p id="connection" role="status">connecting…</p>'
        '<p id="notice" role="alert" hidden></p>'
        '<ol id="timeline" aria-label="Timeline" data-seq="0" data-state="running"></ol>'
    )
