"""The console's page frame: one HTML layout, its navigation, links, and escaping.

Pages are built as strings with every value escaped here (``esc``); nothing comes from a CDN:
the stylesheet and the script are package data served under ``/console/static/``.

The token travels in the address, never in a cookie (a browser sends a cookie for
``127.0.0.1`` to every port of it, so to every other local server): a page opened with
``?token=`` carries it on in every link and form (``href``, ``hidden_token``) and on
``<main data-token>`` for the script's fetches and WebSocket.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from urllib.parse import urlencode

__all__ = ["VIEWS", "esc", "hidden_token", "href", "page"]

#: The three views: (path under the console, title).
VIEWS = (("requests", "Requests"), ("sessions", "Sessions"), ("cassettes", "Cassettes"))


def esc(value: object) -> str:
    """``value`` as text safe inside HTML (element content and quoted attributes)."""
    return escape(str(value), quote=True)


def href(
    base: str, path: str, params: Iterable[tuple[str, str]] = (), *, token: str | None = None
) -> str:
    """The escaped address of ``base + path`` with ``params`` (URL-quoted) and the page's
    ``token``, if it was opened with one."""
    query = [*params, *([("token", token)] if token else [])]
    return esc(f"{base}{path}" + (f"?{urlencode(query)}" if query else ""))


def hidden_token(token: str | None) -> str:
    """The form field that carries the page's token on to the form's target."""
    return f'<input type="hidden" name="token" value="{esc(token)}">' if token else ""


def page(
    base: str, view: str, title: str, body: str, *, data: str = "", token: str | None = None
) -> str:
    """A whole console page: ``body`` (already HTML) under the navigation, ``view`` marked
    current; ``data`` (already escaped attributes) goes on ``<main>`` for the script."""
    links = "".join(
        f'<a href="{href(base, "/" + name, token=token)}"'
        f"{' aria-current=page' if name == view else ''}>{label}</a>"
        for name, label in VIEWS
    )
    carried = f' data-token="{esc(token)}"' if token else ""
    return (
        "<!doctype html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{esc(title)} · stuntset console'
        f'</title><link rel="stylesheet" href="{href(base, "/static/console.css", token=token)}">'
        f'<script defer src="{href(base, "/static/console.js", token=token)}"></script></head>'
        f'<body><header><strong>stuntset console</strong><nav aria-label="Views">{links}</nav>'
        f'</header><main data-view="{esc(view)}" data-base="{esc(base)}"{data}{carried}>'
        f"<h1>{esc(title)}</h1>{body}</main></body></html>\n"
    )
