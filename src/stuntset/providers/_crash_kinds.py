"""How an HTTP status from a model API becomes ``run.crashed``: one table for every adapter.

=================  ================  ==================================================
status             kind              retryable
=================  ================  ==================================================
401, 403           ``auth``          no
429                ``rate_limited``  yes
503, 529           ``overloaded``    yes
any other          ``http``          408, 409 and 5xx, as the openai and anthropic SDKs
                                     retry them (an ``x-should-retry`` header wins)
=================  ================  ==================================================

What differs between adapters stays with them: how the message reads (pydantic-ai and the
scripted provider prefix ``HTTP <status>:``; Claude Code's and Codex's own messages already
name the failure) and whether an ``x-should-retry`` header is known (only a script says).
"""

from __future__ import annotations

from stuntset.events import CrashKind

__all__ = ["status_crash"]


def status_crash(
    status: int, message: str, *, should_retry: bool | None = None
) -> tuple[CrashKind, str, bool]:
    """The ``run.crashed`` (kind, message, retryable) for a model API's HTTP ``status``.

    ``message`` is passed through as given. ``should_retry`` is the response's
    ``x-should-retry`` header, when known: the SDKs obey it over the status."""
    kind: CrashKind
    if status in (401, 403):
        kind = "auth"
    elif status == 429:
        kind = "rate_limited"
    elif status in (503, 529):
        kind = "overloaded"
    else:
        kind = "http"
    retryable = status in (408, 409, 429) or status >= 500
    if should_retry is not None:
        retryable = should_retry
    return kind, message, retryable
