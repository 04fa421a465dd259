"""The console's page frame: one HTML layout, its navigation, and escaping.

Pages are built as strings with every value escaped here (``esc``); nothing comes from a CDN:
the stylesheet and the script are package data served under ``/console/static/``.
"""

from __future__ import annotations

from html import escape

__all__ = ["VIEWS", "esc", "page"]

#: The three views: (path under the console, title).
VIEWS = (("requests", "Requests"), ("sessions", "Sessions"), ("cassettes", "Cassettes"))


def esc(value: object) -> str:
    """``value`` as text safe inside HTML (element content and quoted attributes)."""
    return escape(str(value), quote=True)


def page(base: str, view: str, title: str, body: str, *, data: str = "") -> str:
    """A whole console page: ``body`` (already HTML) under the navigation, ``view`` marked
    current; ``data`` (already escaped attributes) goes on ``<main>`` for the script."""
    links = "".join(
        f'<a href="{esc(base)}/{name}"{" aria-current=page" if name == view else ""}>{label}</a>'
        for name, label in VIEWS
    )
    return (
        "<!doctype html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{esc(title)} · stuntset console'
        f'</title><link rel="stylesheet" href="{esc(base)}/static/console.css">'
        f'<script defer src="{esc(base)}/static/console.js"></script></head>'
        f'<body><header><strong>stuntset console</strong><nav aria-label="Views">{links}</nav>'
        f'</header><main data-view="{esc(view)}" data-base="{esc(base)}"{data}>'
        f"<h1>{esc(title)}</h1>{body}</main></body></html>\n"
    )
