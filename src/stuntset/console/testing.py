"""A console over a real daemon and a real model double, for tests (and the demo).

``running_console(folder)`` starts a model double (a ``StandIn`` on loopback), a daemon on
``folder/console.db`` (the catalog scenarios as providers) with the console mounted, and
stops both after. ``ConsoleServer`` gives the URLs and the pieces: ``service`` (its log, to
append to), ``client()`` (the daemon's WebSocket API) and ``stand_in`` (to send requests to).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from starlette.types import ASGIApp

from stuntset import scenarios
from stuntset.doubles.model.serve import StandIn
from stuntset.runtime.client import DaemonClient
from stuntset.runtime.daemon import DaemonHandle, start_daemon
from stuntset.runtime.service import SessionService
from stuntset.runtime.testing import scenario_registry
from stuntset.script import Script

from .mount import daemon_console

__all__ = ["ConsoleServer", "play_session", "running_console"]


@dataclass
class ConsoleServer:
    daemon: DaemonHandle
    service: SessionService
    stand_in: StandIn
    cassettes: Path | None = None

    @property
    def token(self) -> str:
        return self.daemon.info.token

    def url(self, path: str = "/") -> str:
        """The console page at ``path`` (``/requests``, ``/sessions/<id>``...)."""
        return f"{self.daemon.info.url}/console{path}"

    def login_url(self, path: str = "/") -> str:
        """``url(path)`` with the token: a browser that opens it carries the token on in the
        page's links, forms, fetches and WebSocket."""
        joiner = "&" if "?" in path else "?"
        return f"{self.url(path)}{joiner}token={self.token}"

    def client(self) -> DaemonClient:
        return self.daemon.client()


@contextmanager
def running_console(
    folder: Path, *, cassettes: Path | None = None, script: Script | None = None
) -> Iterator[ConsoleServer]:
    """A console with its daemon and model double, stopped after."""
    stand_in = StandIn(script or scenarios.build("happy_path")).start()
    services: list[SessionService] = []
    console = daemon_console(double=lambda: stand_in.double, cassettes=cassettes)

    def make(service: SessionService) -> ASGIApp:
        services.append(service)
        return console(service)

    try:
        handle = start_daemon(
            db=folder / "console.db", providers=scenario_registry(repeat=1), console=make
        )
        try:
            yield ConsoleServer(handle, services[0], stand_in, cassettes)
        finally:
            handle.stop()
    finally:
        stand_in.close()


def play_session(
    console: ConsoleServer, provider: str, workdir: Path, prompt: str = "go"
) -> tuple[str, int]:
    """Run one turn of a session on ``provider`` to its end, over the daemon's API: approvals
    are allowed, input requests answered ``main``, a run that only started (``stuck``) is
    interrupted. Returns the session id and the ``seq`` of its terminal event."""
    with console.client() as client:
        task = client.call("create_task", workdir=str(workdir))
        session_id = client.call("create_session", task_id=task["task_id"], provider=provider)[
            "session_id"
        ]
        client.call("subscribe", session_id=session_id)
        client.call("start_turn", session_id=session_id, prompt=prompt)
        while True:
            message = client.next_message()
            if message["type"] != "event":
                raise AssertionError(f"unexpected message {message!r}")
            event = message["event"]
            kind = event["type"]
            if kind in ("run.completed", "run.crashed", "run.killed"):
                return session_id, int(event["seq"])
            if kind == "approval.requested":
                client.call(
                    "respond",
                    session_id=session_id,
                    request_id=event["request_id"],
                    decision="allow",
                )
            elif kind == "input.requested":
                client.call(
                    "respond",
                    session_id=session_id,
                    request_id=event["request_id"],
                    decision="main",
                )
            elif kind == "run.started" and provider == "stuck":
                client.call("interrupt", session_id=session_id, reason="the test stopped it")
