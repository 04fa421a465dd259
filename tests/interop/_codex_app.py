"""Play one turn through the real, unmodified ``openai-codex`` SDK (``codex app-server``) and
keep what it received as a comparable trace: the same driver for the fake ``codex`` and for
the real binary over the model double, so a test can compare the two."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openai_codex import Codex, CodexConfig
from openai_codex.generated.v2_all import AccountRateLimitsUpdatedNotification

from stuntset.drift.runners import codex_home, real_binary

#: The real ``codex`` from openai-codex-cli-bin, when installed.
REAL_CODEX = real_binary("codex")


@dataclass
class Trace:
    """What the SDK got for one turn: the turn's notifications as comparable tuples, the
    ``account/rateLimits/updated`` payloads (routed to the SDK's global queue: they name no
    turn) and how the turn ended."""

    turn: list[tuple[Any, ...]] = field(default_factory=list)
    rate_limits: list[dict[str, Any]] = field(default_factory=list)
    status: str = ""


def _entry(method: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
    item = params.get("item") or {}
    if method == "item/started":
        return (method, item.get("type"))
    if method == "item/completed":
        kind = item.get("type")
        if kind == "agentMessage":
            return (method, kind, item.get("text"))
        if kind == "userMessage":
            return (method, kind, [c.get("text") for c in item.get("content") or []])
        return (method, kind, item.get("status"))
    if method == "item/agentMessage/delta":
        return (method, params.get("delta"))
    if method == "thread/tokenUsage/updated":
        usage = params["tokenUsage"]
        last, total = usage["last"], usage["total"]
        return (method, last["inputTokens"], last["outputTokens"], total["inputTokens"])
    if method == "error":
        error = params["error"]
        return (method, error["message"], error["codexErrorInfo"], params["willRetry"])
    if method == "turn/completed":
        return (method, params["turn"]["status"])
    return None  # other notifications of the turn are not compared


@contextmanager
def opened(config: CodexConfig) -> Iterator[Codex]:
    """``Codex(config=…)``, closed with the pipes the SDK's ``close()`` leaves open."""
    codex = Codex(config=config)
    try:
        yield codex
    finally:
        proc = codex._client._proc
        codex.close()
        if proc is not None:
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()


def play(
    config: CodexConfig,
    prompt: str,
    *,
    steer: str | None = None,
    steer_when: Callable[[str, dict[str, Any]], bool] | None = None,
) -> Trace:
    """Run one turn; with ``steer``, send it (``TurnHandle.steer``) once ``steer_when``
    (method, params) first holds (default: the first text delta)."""
    when = steer_when or (lambda method, params: method == "item/agentMessage/delta")
    trace = Trace()
    with opened(config) as codex:
        thread = codex.thread_start()
        handle = thread.turn(prompt)
        pending = steer
        for notification in handle.stream():
            params = notification.payload.model_dump(by_alias=True, mode="json")
            entry = _entry(notification.method, params)
            if entry is not None:
                trace.turn.append(entry)
            if notification.method == "turn/completed":
                trace.status = params["turn"]["status"]
            if pending is not None and when(notification.method, params):
                handle.steer(pending)
                pending = None
        # everything the server sent before turn/completed has been routed by now
        queued = codex._client._router._global_notifications
        while not queued.empty():
            payload = queued.get_nowait()
            if isinstance(payload, BaseException):  # pragma: no cover - a reader failure
                raise payload
            if isinstance(payload.payload, AccountRateLimitsUpdatedNotification):
                dumped = payload.payload.model_dump(by_alias=True, mode="json")
                trace.rate_limits.append(dumped["rateLimits"])
    return trace


def fake_config(cli_path: Path, where: Path, overrides: tuple[str, ...] = ()) -> CodexConfig:
    """The fake with the same ``CODEX_HOME/config.toml`` as the real binary gets (the fake
    reads its provider's retry settings; it calls no model API)."""
    env = codex_home(where / "codex-home", "http://127.0.0.1:9/openai/v1")
    return CodexConfig(
        codex_bin=str(cli_path),
        cwd=str(where),
        env={"CODEX_HOME": env["CODEX_HOME"]},
        config_overrides=overrides,
    )


def real_config(base_url: str, where: Path, overrides: tuple[str, ...] = ()) -> CodexConfig:
    """The real binary with a ``CODEX_HOME`` whose model provider (``stuntset``) is the
    Responses double at ``base_url`` (as ``stuntset drift`` runs it)."""
    assert REAL_CODEX is not None
    cwd = where / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **codex_home(where / "codex-home", base_url)}
    return CodexConfig(codex_bin=str(REAL_CODEX), cwd=str(cwd), env=env, config_overrides=overrides)
