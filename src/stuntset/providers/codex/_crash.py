"""How a Codex failure becomes ``run.crashed``: a failed turn's ``turn.error`` (its
``codexErrorInfo`` or HTTP status) and an exception out of the SDK (a missing binary, a
closed transport, a broken JSON-RPC line)."""

from __future__ import annotations

from typing import Any

from openai_codex.errors import CodexError, JsonRpcError, TransportClosedError
from pydantic import ValidationError

from stuntset.events import CrashKind
from stuntset.providers._crash_kinds import status_crash

__all__ = ["OutOfOrder", "crash_of", "turn_crash"]


#: ``codexErrorInfo`` values that name the failure without an HTTP status.
_INFO_KINDS: dict[str, tuple[CrashKind, bool]] = {
    "unauthorized": ("auth", False),
    "usageLimitExceeded": ("rate_limited", False),
    "serverOverloaded": ("overloaded", True),
    "internalServerError": ("http", True),
    "responseStreamDisconnected": ("protocol", True),
    "responseStreamConnectionFailed": ("http", True),
    "httpConnectionFailed": ("http", True),
    "responseTooManyFailedAttempts": ("http", True),
}


def turn_crash(error: dict[str, Any] | None) -> tuple[CrashKind, str, bool]:
    """The ``run.crashed`` (kind, message, retryable) for a failed turn's ``turn.error``."""
    error = error or {}
    message = str(error.get("message") or "the turn failed")
    info = error.get("codexErrorInfo")
    if isinstance(info, dict):
        for name, detail in info.items():
            status = detail.get("httpStatusCode") if isinstance(detail, dict) else None
            if isinstance(status, int):
                return status_crash(status, message)
            if name in _INFO_KINDS:
                kind, retryable = _INFO_KINDS[name]
                return kind, message, retryable
    elif isinstance(info, str) and info in _INFO_KINDS:
        kind, retryable = _INFO_KINDS[info]
        return kind, message, retryable
    return "internal", message, False


class OutOfOrder(Exception):
    """The app-server's notifications arrived in an impossible order."""


def crash_of(error: BaseException) -> tuple[CrashKind, str, bool]:
    """The ``run.crashed`` (kind, message, retryable) for an exception out of the SDK."""
    text = str(error) or type(error).__name__
    if isinstance(error, FileNotFoundError | PermissionError | NotADirectoryError):
        return "spawn_failed", text, False
    if isinstance(error, TransportClosedError):
        return "exited", text, False
    if isinstance(error, UnicodeDecodeError):
        return "protocol", f"undecodable bytes from the app-server: {text}", False
    if isinstance(error, OutOfOrder | ValidationError):
        return "protocol", text, False
    if isinstance(error, JsonRpcError):
        return "internal", f"{type(error).__name__}: {text}", False
    if isinstance(error, CodexError):  # an invalid JSON-RPC line or payload
        return "protocol", text, False
    if isinstance(error, TimeoutError):
        return "timeout", text, True
    return "internal", f"{type(error).__name__}: {text}", False
