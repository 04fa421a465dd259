"""``stuntset serve --verdicts``: the resilience verdicts of what the server's double has seen
so far, for clients in any language. ``GET /stuntset/verdicts`` answers JSON (the options of
``resilience_verdicts`` as query parameters); at exit the server prints them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs

import msgspec

from stuntset.checks.resilience import resilience_verdicts
from stuntset.errors import UsageError

__all__ = ["VERDICTS_PATH", "verdicts_body", "verdicts_lines", "with_verdicts"]

VERDICTS_PATH = "/stuntset/verdicts"

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]

_FLOATS = ("min_backoff", "stall_bound", "slack")


def _options(query: str) -> dict[str, Any]:
    """``resilience_verdicts`` options from a query string (``UsageError`` naming a bad one)."""
    options: dict[str, Any] = {}
    for name, values in parse_qs(query, keep_blank_values=True).items():
        value = values[-1]
        try:
            if name == "max_attempts":
                options[name] = int(value)
            elif name in _FLOATS:
                options[name] = float(value)
            elif name == "outcome":
                options[name] = value or None
            elif name == "ignore":
                options[name] = [rule for v in values for rule in v.split(",") if rule]
            else:
                raise UsageError(
                    f"{VERDICTS_PATH}: unknown parameter {name!r}; it takes max_attempts, "
                    f"min_backoff, stall_bound, slack, outcome and ignore"
                )
        except ValueError as error:
            if isinstance(error, UsageError):
                raise
            raise UsageError(f"{VERDICTS_PATH}: {name}={value!r} is not a number") from None
    return options


def verdicts_body(double: Any, query: str = "") -> tuple[int, bytes]:
    """``(status, JSON body)`` for ``GET /stuntset/verdicts?query``."""
    try:
        verdicts = resilience_verdicts(double, **_options(query))
    except UsageError as error:
        return 400, msgspec.json.encode({"error": str(error)})
    body = {
        "requests": double.journal.count,
        "verdicts": [msgspec.structs.asdict(v) for v in verdicts],
    }
    return 200, msgspec.json.encode(body)


def verdicts_lines(double: Any) -> list[str]:
    """What ``stuntset serve --verdicts`` prints at exit: one line a verdict, or that none."""
    verdicts = resilience_verdicts(double)
    if not verdicts:
        return [
            f"stuntset serve: resilience: no rule broken over {double.journal.count} request(s)"
        ]
    head = f"stuntset serve: resilience: {len(verdicts)} rule(s) broken:"
    return [head, *(f"  {v}" for v in verdicts)]


def with_verdicts(app: ASGIApp, double: Any) -> ASGIApp:
    """``app`` with ``GET /stuntset/verdicts`` answered from ``double``'s journal."""

    async def verdicts_app(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != VERDICTS_PATH:
            await app(scope, receive, send)
            return
        if scope["method"] != "GET":
            status, body = 405, msgspec.json.encode({"error": f"{VERDICTS_PATH}: GET only"})
        else:
            status, body = verdicts_body(double, scope.get("query_string", b"").decode("latin-1"))
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return verdicts_app
