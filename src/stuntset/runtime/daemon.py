"""The local daemon: a ``SessionService`` behind a WebSocket API, on 127.0.0.1.

``GET /health`` (open), ``POST /shutdown`` (token) and ``/ws`` (token; the JSON messages of
``stuntset.runtime.protocol``). Every request passes ``security.Guard`` first. A malformed
message gets an error reply naming the field; the connection and the daemon live on.

``run_daemon(...)`` serves until shut down (the ``stuntset daemon`` command's body): it holds
the database's exclusive lock for its whole life (one daemon per database), writes the token
file safely into a private runtime directory and removes it however it stops, and on
SIGINT/SIGTERM (``handle_signals``) ends every running run as ``run.killed`` before exiting;
``start_daemon(...)`` runs one on a thread of the current process and returns a handle
(for tests and the demo). The listening socket is bound by us (port 0 = a free port, no
find-then-bind race) and has ``TCP_NODELAY`` set.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import errno
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route, WebSocketRoute
from starlette.types import ASGIApp
from starlette.websockets import WebSocket, WebSocketDisconnect

from stuntset._uvicorn_server import PromptServer
from stuntset.errors import StaleCursor, StuntsetError, UsageError
from stuntset.events import to_builtins
from stuntset.log.base import Subscription
from stuntset.log.lock import DatabaseLock
from stuntset.log.sqlite import SqliteEventLog
from stuntset.runtime import protocol as p
from stuntset.runtime.protocol import DaemonInfo
from stuntset.runtime.security import (
    Guard,
    new_token,
    normalize_origins,
    remove_private_file,
    write_private_file,
)
from stuntset.runtime.service import ProviderFactory, SessionService
from stuntset.runtime.store import SessionStore

if TYPE_CHECKING:
    from stuntset.runtime.client import DaemonClient, InProcess, Transport

#: Called with the app and the loop it serves on, once the daemon listens (in-memory clients).
AppReady = Callable[[ASGIApp, asyncio.AbstractEventLoop], None]

__all__ = [
    "ConsoleFactory",
    "DaemonHandle",
    "DaemonInfo",
    "build_app",
    "run_daemon",
    "start_daemon",
]


_encoder = msgspec.json.Encoder()


class _Gone(Exception):
    """The WebSocket client has disconnected."""


class _Connection:
    """One WebSocket client: its requests and its subscriptions."""

    def __init__(self, websocket: WebSocket, service: SessionService) -> None:
        self.websocket = websocket
        self.service = service
        self.send_lock = anyio.Lock()
        self.subscriptions: dict[str, anyio.CancelScope] = {}

    async def send(self, message: dict[str, Any]) -> None:
        """Send one message; ``_Gone`` if the client has disconnected."""
        async with self.send_lock:
            try:
                await self.websocket.send_text(_encoder.encode(message).decode())
            except (WebSocketDisconnect, OSError, RuntimeError) as error:
                raise _Gone from error

    async def serve(self) -> None:
        async with anyio.create_task_group() as tg:
            try:
                while True:
                    message = await self.websocket.receive()
                    if message["type"] == "websocket.disconnect":
                        break
                    data = message.get("text")
                    if data is None:
                        await self.send(p.error_reply("send JSON text frames", field=None))
                        continue
                    await self.handle(data, tg)
            except _Gone:
                pass  # the client left mid-reply: its subscriptions end with it
            finally:
                tg.cancel_scope.cancel()

    async def handle(self, data: str, tg: anyio.abc.TaskGroup) -> None:
        try:
            request = p.parse_request(data)
        except p.BadMessage as bad:
            await self.send(p.error_reply(str(bad), field=bad.field, request_id=bad.request_id))
            return
        try:
            result = await self.dispatch(request, tg)
        except StaleCursor as stale:
            await self.send(
                p.error_reply(
                    str(stale), field="after", request_id=request.id, resume_at=stale.resume_at
                )
            )
        except UsageError as error:
            await self.send(p.error_reply(str(error), field=None, request_id=request.id))
        except Exception as error:  # a provider or the host broke: say so, serve on
            message = f"{request.__struct_config__.tag} failed: {type(error).__name__}: {error}"
            await self.send(p.error_reply(message, field=None, request_id=request.id))
        else:
            await self.send({"type": "ok", "id": request.id, "result": result})

    async def dispatch(self, request: p.Request, tg: anyio.abc.TaskGroup) -> Any:
        service = self.service
        match request:
            case p.CreateTask():
                return msgspec.to_builtins(service.create_task(request.workdir))
            case p.CreateSession():
                return msgspec.to_builtins(
                    service.create_session(request.task_id, request.provider)
                )
            case p.StartTurn():
                return msgspec.to_builtins(
                    await service.start_turn(request.session_id, request.prompt)
                )
            case p.Interrupt():
                await service.interrupt(request.session_id, request.reason)
            case p.Respond():
                await service.respond(request.session_id, request.request_id, request.decision)
            case p.Close():
                await service.close_session(request.session_id)
            case p.Subscribe():
                if request.session_id in self.subscriptions:
                    raise UsageError(
                        f"already subscribed to {request.session_id!r} on this connection; "
                        "unsubscribe first"
                    )
                subscription = service.subscribe(
                    request.session_id, after=request.after, epoch=request.epoch
                )
                scope = anyio.CancelScope()
                self.subscriptions[request.session_id] = scope
                tg.start_soon(self.forward, request.session_id, subscription, scope)
            case p.Unsubscribe():
                found = self.subscriptions.pop(request.session_id, None)
                if found is None:
                    raise UsageError(f"not subscribed to {request.session_id!r}")
                found.cancel()
        return {}

    async def forward(
        self, session_id: str, subscription: Subscription, scope: anyio.CancelScope
    ) -> None:
        with scope:
            try:
                async for event in subscription:
                    await self.send(
                        {
                            "type": "event",
                            "session_id": session_id,
                            "epoch": subscription.epoch,  # with the event's seq: a resume point
                            "event": to_builtins(event),
                        }
                    )
            except StaleCursor as stale:
                with contextlib.suppress(_Gone):
                    await self.send(
                        {
                            "type": "stale",
                            "session_id": session_id,
                            "cursor": stale.cursor,
                            "resume_at": stale.resume_at,
                            "message": str(stale),
                        }
                    )
            except _Gone:
                pass  # the client disconnected mid-stream; it resumes from its cursor
            except StuntsetError as error:  # the log cannot go on (a row that does not decode)
                with contextlib.suppress(_Gone):
                    await self.send(
                        {
                            "type": "error",
                            "id": None,
                            "session_id": session_id,
                            "field": None,
                            "message": f"subscription to {session_id!r} ended: {error}",
                        }
                    )
            finally:
                with anyio.CancelScope(shield=True):
                    await subscription.aclose()
                if self.subscriptions.get(session_id) is scope:
                    del self.subscriptions[session_id]


#: Makes an app to mount at ``/console`` from the daemon's service (``stuntset.console``).
ConsoleFactory = Callable[[SessionService], ASGIApp]


def build_app(
    service: SessionService,
    *,
    port: int,
    token: str,
    on_shutdown: Callable[[], None],
    console: ConsoleFactory | None = None,
    allowed_origins: Iterable[str] = (),
) -> Guard:
    """The daemon's ASGI app (routes behind the guard; ``console`` mounted at ``/console``;
    ``allowed_origins`` besides the daemon's own, see ``security.Guard``)."""

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True})

    async def shutdown(request: Request) -> JSONResponse:
        on_shutdown()
        return JSONResponse({"ok": True, "shutting_down": True})

    async def ws(websocket: WebSocket) -> None:
        await websocket.accept()
        await _Connection(websocket, service).serve()

    routes: list[BaseRoute] = [
        Route("/health", health, methods=["GET"]),
        Route("/shutdown", shutdown, methods=["POST"]),
        WebSocketRoute("/ws", ws),
    ]
    if console is not None:
        routes.append(Mount("/console", console(service)))
    app = Starlette(routes=routes)
    return Guard(
        app,
        port=port,
        token=token,
        open_paths=frozenset({"/health"}),
        allowed_origins=allowed_origins,
    )


#: Where the daemon may listen: loopback only.
LOOPBACK = {"127.0.0.1": "127.0.0.1", "localhost": "127.0.0.1", "::1": "::1"}


def _listen(host: str, port: object) -> socket.socket:
    """A listening socket on loopback ``host``:``port``; ``UsageError`` naming the option."""
    if host not in LOOPBACK:
        raise UsageError(
            f"--host {host!r}: the daemon listens on loopback only (127.0.0.1, localhost or ::1)"
        )
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise UsageError(f"--port {port!r}: a port is 0 (any free one) to 65535")
    address = LOOPBACK[host]
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((address, port))
        sock.listen(128)
    except OSError as error:
        sock.close()
        why = "is in use (another daemon? pick another --port, or 0)"
        if error.errno != errno.EADDRINUSE:
            why = f"cannot be bound: {error.strerror}"
        raise UsageError(f"--port {port}: {address} port {port} {why}") from None
    sock.setblocking(False)
    return sock


def write_token_file(path: Path, info: DaemonInfo, *, private_parent: bool = False) -> None:
    """Write ``info`` to ``path``, readable by the user only (0600), safely (see security)."""
    write_private_file(path, msgspec.json.encode(info), private_parent=private_parent)


class _Server(PromptServer):
    """uvicorn's server, minus its signal handling: uvicorn re-raises a SIGTERM once it has
    stopped serving, which kills the process before the host ends its runs; the daemon
    handles SIGINT and SIGTERM itself (``run_daemon(handle_signals=True)``)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _open_stores(db: str) -> tuple[SqliteEventLog, SessionStore]:
    log = SqliteEventLog(db)
    try:
        return log, SessionStore(db)
    except BaseException:
        log.close()
        raise


async def run_daemon(
    *,
    db: str | os.PathLike[str],
    providers: Mapping[str, ProviderFactory],
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    token_file: Path | None = None,
    private_runtime_dir: bool = False,
    handle_signals: bool = False,
    ready: Callable[[DaemonInfo, Callable[[], None]], None] | None = None,
    console: ConsoleFactory | None = None,
    allowed_origins: Iterable[str] = (),
    app_ready: AppReady | None = None,
) -> None:
    """Serve the daemon on loopback until ``POST /shutdown``, the stop callback, or (with
    ``handle_signals``, in the main thread) SIGINT or SIGTERM.

    It first takes the database's exclusive lock (``LogInUse`` naming the holder's pid if
    another daemon has it). ``ready(info, stop)`` is called once it listens. ``token``
    defaults to a fresh random one; ``token_file`` receives ``DaemonInfo`` as JSON with mode
    0600 (its folder checked as a private runtime directory if ``private_runtime_dir``), and
    is removed when the daemon stops or fails to start. However it stops, every running run
    ends with ``run.killed`` giving the reason. ``allowed_origins`` are browser origins let
    in besides the daemon's own (``http://127.0.0.1:5173`` for a dev UI; the token is still
    required and the Host check stays); a malformed one is a ``UsageError``.
    ``app_ready(app, loop)`` gets the guarded ASGI app and its loop (in-memory clients).
    """
    origins = normalize_origins(allowed_origins)
    path = os.fspath(db)
    lock = None if path == ":memory:" else DatabaseLock(path, owner="stuntset daemon")
    if lock is not None:
        lock.acquire()
    try:
        log, store = _open_stores(path)
        try:
            await _serve(
                log,
                store,
                providers,
                host=host,
                port=port,
                token=token,
                token_file=token_file,
                private_runtime_dir=private_runtime_dir,
                handle_signals=handle_signals,
                ready=ready,
                console=console,
                allowed_origins=origins,
                app_ready=app_ready,
            )
        finally:
            store.close()
            log.close()
    finally:
        if lock is not None:
            lock.release()


async def _serve(
    log: SqliteEventLog,
    store: SessionStore,
    providers: Mapping[str, ProviderFactory],
    *,
    host: str,
    port: int,
    token: str | None,
    token_file: Path | None,
    private_runtime_dir: bool,
    handle_signals: bool,
    ready: Callable[[DaemonInfo, Callable[[], None]], None] | None,
    console: ConsoleFactory | None = None,
    allowed_origins: tuple[str, ...] = (),
    app_ready: AppReady | None = None,
) -> None:
    sock = _listen(host, port)
    address, bound = sock.getsockname()[:2]
    shown = f"[{address}]" if ":" in address else address
    info = DaemonInfo(
        url=f"http://{shown}:{bound}", port=bound, token=token or new_token(), pid=os.getpid()
    )
    loop = asyncio.get_running_loop()
    server: uvicorn.Server | None = None
    service: SessionService | None = None
    signals: list[signal.Signals] = []

    def stop(reason: str = "shutdown: the daemon was stopped") -> None:
        def set_exit() -> None:
            if service is not None:
                service.stop_reason = reason
            if server is not None:
                if server.should_exit:
                    server.force_exit = True  # a second signal: stop waiting for clients
                server.should_exit = True

        with contextlib.suppress(RuntimeError):  # the loop is closed: already stopped
            loop.call_soon_threadsafe(set_exit)

    written = False
    try:
        if token_file is not None:
            write_token_file(token_file, info, private_parent=private_runtime_dir)
            written = True
        if handle_signals and threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                name = signal.Signals(signum).name
                loop.add_signal_handler(signum, stop, f"shutdown: the daemon got {name}")
                signals.append(signum)
        async with SessionService(log=log, store=store, providers=providers) as service:
            app = build_app(
                service,
                port=bound,
                token=info.token,
                on_shutdown=lambda: stop("shutdown: POST /shutdown"),
                console=console,
                allowed_origins=allowed_origins,
            )
            config = uvicorn.Config(
                app,
                lifespan="off",
                log_level="warning",
                log_config=None,  # leave the embedding program's logging alone
                access_log=False,
                ws="websockets-sansio",
                ws_max_size=p.MAX_MESSAGE,
            )
            server = _Server(config)
            if app_ready is not None:
                app_ready(app, loop)
            if ready is not None:
                loop.call_soon(ready, info, stop)
            await server.serve(sockets=[sock])
    finally:
        for signum in signals:
            loop.remove_signal_handler(signum)
        sock.close()
        if written and token_file is not None:
            remove_private_file(token_file, token=info.token)


class DaemonHandle:
    """A daemon running on a thread of this process: ``info``, then ``stop()``;
    ``in_process`` is its app and loop, for in-memory clients."""

    def __init__(
        self,
        info: DaemonInfo,
        stop: Callable[[], None],
        thread: threading.Thread,
        in_process: InProcess | None = None,
    ):
        self.info = info
        self._stop = stop
        self._thread = thread
        self.in_process = in_process

    def client(self, transport: Transport = "websocket", **options: Any) -> DaemonClient:
        """A ``DaemonClient`` connected to this daemon (close it, or use ``with``):
        ``transport="websocket"`` over its port, ``"memory"`` in process (no socket)."""
        from stuntset.runtime.client import DaemonClient

        if transport == "memory":
            if self.in_process is None:
                raise UsageError("this daemon handle has no in-process app")
            return DaemonClient(self.info, in_process=self.in_process, **options)
        if transport != "websocket":
            raise UsageError(f"transport {transport!r}: 'websocket' or 'memory'")
        return DaemonClient(self.info, **options)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop it and wait until it has (harmless if it already stopped)."""
        self._stop()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"the daemon on port {self.info.port} did not stop in {timeout} s")


def start_daemon(
    *,
    db: str | os.PathLike[str],
    providers: Mapping[str, ProviderFactory],
    token: str | None = None,
    token_file: Path | None = None,
    timeout: float = 10.0,
    console: ConsoleFactory | None = None,
    allowed_origins: Iterable[str] = (),
) -> DaemonHandle:
    """Start a daemon on a free port, on a thread; return once it listens.

    ``allowed_origins``: browser origins let in besides its own (see ``run_daemon``). It uses the clock and id seams in force in the caller (deterministic under the plugin).
    """
    origins = normalize_origins(allowed_origins)  # refused here, in the caller
    started = threading.Event()
    found: list[tuple[DaemonInfo, Callable[[], None]]] = []
    failure: list[BaseException] = []
    served: list[tuple[ASGIApp, asyncio.AbstractEventLoop]] = []

    def ready(info: DaemonInfo, stop: Callable[[], None]) -> None:
        found.append((info, stop))
        started.set()

    def main() -> None:
        try:
            asyncio.run(
                run_daemon(
                    db=db,
                    providers=providers,
                    token=token,
                    token_file=token_file,
                    ready=ready,
                    console=console,
                    allowed_origins=origins,
                    app_ready=lambda app, loop: served.append((app, loop)),
                )
            )
        except BaseException as error:  # reported to the caller if it never started
            failure.append(error)
            started.set()

    context = contextvars.copy_context()  # the caller's clock and id seams
    thread = threading.Thread(target=context.run, args=(main,), name="stuntset-daemon", daemon=True)
    thread.start()
    if not started.wait(timeout) or not found:
        raise RuntimeError(f"the daemon did not start: {failure[0] if failure else 'timeout'}")
    from stuntset.runtime.client import InProcess

    info, stop = found[0]
    [(app, loop)] = served
    return DaemonHandle(info, stop, thread, InProcess(app, loop, info.port))
