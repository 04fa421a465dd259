"""``CodexProvider``: the settings every run of one Codex session shares (binary, working
folder, environment, model, approval policy), its clock and ids, and the session's thread."""

from __future__ import annotations

import threading
from typing import Any, Literal

from openai_codex import CodexConfig

from stuntset.errors import UsageError
from stuntset.providers.base import Capabilities
from stuntset.providers.codex._run import CodexRun
from stuntset.seams import current_clock, current_ids

__all__ = ["Approvals", "CodexProvider", "CollaborationMode"]

Approvals = Literal["ask", "auto_review", "deny_all"]
CollaborationMode = Literal["default", "plan"]
_POLICIES: dict[str, dict[str, Any]] = {
    "ask": {"approvalPolicy": "on-request", "approvalsReviewer": "user"},
    "auto_review": {"approvalPolicy": "on-request", "approvalsReviewer": "auto_review"},
    "deny_all": {"approvalPolicy": "never"},
}


class CodexProvider:
    """Starts Codex runs on ``codex_bin`` (e.g. the fake one from ``stuntset.install_cli``;
    ``None``: the SDK's pinned runtime). ``cwd`` / ``env`` / ``config_overrides`` go to the
    ``CodexConfig``; ``model`` to the thread. ``approvals`` is ``"ask"``, ``"auto_review"`` or
    ``"deny_all"`` (see the module docs). ``collaboration_mode`` is ``"default"`` (Codex
    never asks the user) or ``"plan"`` (it asks: ``input.requested``). ``session_id``
    resumes that Codex thread.

    ``close_timeout`` bounds how long closing a run waits for its process to go. ``clock``
    and ``ids`` default to the seams in force.
    """

    __test__ = False

    def __init__(
        self,
        codex_bin: str | None = None,
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        config_overrides: tuple[str, ...] = (),
        model: str | None = None,
        approvals: Approvals = "ask",
        collaboration_mode: CollaborationMode = "default",
        name: str = "codex",
        session_id: str | None = None,
        close_timeout: float = 10.0,
        clock: Any = None,
        ids: Any = None,
    ) -> None:
        if approvals not in _POLICIES:
            raise UsageError(f"approvals must be one of {', '.join(_POLICIES)}, got {approvals!r}")
        if collaboration_mode not in ("default", "plan"):
            raise UsageError(
                f"collaboration_mode must be 'default' or 'plan', got {collaboration_mode!r}"
            )
        self.collaboration_mode: CollaborationMode = collaboration_mode
        self.codex_bin = None if codex_bin is None else str(codex_bin)
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.config_overrides = tuple(config_overrides)
        self.model = model
        self.approvals: Approvals = approvals
        self._name = name
        self.close_timeout = close_timeout
        self.clock = clock if clock is not None else current_clock()
        self.ids = ids if ids is not None else current_ids()
        self._lock = threading.Lock()  # ids and clock are used from the runs' threads too
        self._session_id = session_id or ""
        self.runs: list[CodexRun] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            approvals=self.approvals == "ask",
            input_requests=self.collaboration_mode == "plan",
            interrupt=True,
            resume=True,
            reasoning=True,
            usage=True,
        )

    @property
    def session_id(self) -> str:
        """The Codex thread id ("" until the first run has started its thread)."""
        return self._session_id

    def config(self) -> CodexConfig:
        return CodexConfig(
            codex_bin=self.codex_bin,
            cwd=self.cwd,
            env=self.env,
            config_overrides=self.config_overrides,
        )

    def thread_params(self) -> dict[str, Any]:
        params = dict(_POLICIES[self.approvals])
        if self.model is not None:
            params["model"] = self.model
        if self.cwd is not None:
            params["cwd"] = self.cwd
        return params

    def turn_params(self, model: str) -> dict[str, Any] | None:
        """What ``turn/start`` carries besides the input: Plan mode's ``collaborationMode``
        (its settings name the thread's ``model``); nothing in Default mode."""
        if self.collaboration_mode == "default":
            return None
        return {"collaborationMode": {"mode": "plan", "settings": {"model": model}}}

    def new_id(self, kind: str) -> str:
        with self._lock:
            return str(self.ids.new(kind))

    def now(self) -> float:
        with self._lock:
            return float(self.clock.now())

    def start(self, prompt: str, *, resume: str | None = None) -> CodexRun:
        if resume is not None:
            self._session_id = resume
        run = CodexRun(self, self.new_id("run"), prompt, self._session_id)
        self.runs.append(run)
        return run

    def _adopt(self, thread_id: str) -> None:
        self._session_id = thread_id

    async def aclose(self) -> None:
        for run in self.runs:
            await run.aclose()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(codex_bin={self.codex_bin!r}, session_id={self._session_id!r})"
        )
