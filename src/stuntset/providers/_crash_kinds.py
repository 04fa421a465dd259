"""How an HTTP status from a model API becomes ``run.crashed``: one table for every adapter.

=================  ================  ==================================================
status             kind              retryable
=================  ================  ==================================================
401, 403           ``auth``          no
400 + reason       ``auth``          no: Google's reason ``API_KEY_INVALID`` (below)
429                ``rate_limited``  yes
503, 529           ``overloaded``    yes
any other          ``http``          408, 409 and 5xx, as the openai and anthropic SDKs
                                     retry them (an ``x-should-retry`` header wins)
=================  ================  ==================================================

What differs between adapters stays with them: how the message reads (pydantic-ai and the
scripted provider prefix ``HTTP <status>:``; Claude Code's and Codex's own messages already
name the failure) and whether an ``x-should-retry`` header is known (only a script says).

The one special case: the Gemini Developer API answers an expired or invalid API key with
400 ``INVALID_ARGUMENT``, not 401, and says so only in the body's ``google.rpc.ErrorInfo``
reason ``API_KEY_INVALID`` (docs/protocol-gemini.md#errors). An adapter that can read that
body passes the reason (``google_reason``); by status alone it would be a plain ``http``.
"""

from __future__ import annotations

from typing import Any

from stuntset.events import CrashKind

__all__ = ["google_reason", "status_crash"]

#: The ``google.rpc.ErrorInfo`` reasons that mean the credentials are bad, whatever the status.
_AUTH_REASONS = frozenset({"API_KEY_INVALID"})


def google_reason(body: object) -> str | None:
    """The ``reason`` of the ``google.rpc.ErrorInfo`` in a Google API error body
    (``{"error": {"details": [{"@type": "…ErrorInfo", "reason": …}]}}``), if any."""
    error: Any = body.get("error", body) if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("ErrorInfo"):
            reason = detail.get("reason")
            if isinstance(reason, str):
                return reason
    return None


def status_crash(
    status: int,
    message: str,
    *,
    should_retry: bool | None = None,
    reason: str | None = None,
) -> tuple[CrashKind, str, bool]:
    """The ``run.crashed`` (kind, message, retryable) for a model API's HTTP ``status``.

    ``message`` is passed through as given. ``should_retry`` is the response's
    ``x-should-retry`` header, when known: the SDKs obey it over the status. ``reason`` is
    a Google API error's ``ErrorInfo`` reason, when known (``google_reason``)."""
    kind: CrashKind
    if status in (401, 403) or reason in _AUTH_REASONS:
        # Gemini's expired key is a 400 with the reason API_KEY_INVALID: an auth failure
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
