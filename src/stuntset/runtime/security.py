"""The daemon's guard: who may talk to it (see ``reliability.md`` §4.5).

Binding to 127.0.0.1 does not stop a browser: a DNS-rebound page talks to it as
``Host: evil.example:PORT``, and any page may open a WebSocket to it (CORS does not apply
to WebSockets). So every request passes three checks, *before* a WebSocket is accepted:

1. **Host** is one of ``127.0.0.1:PORT``, ``localhost:PORT``, ``[::1]:PORT`` (400 otherwise).
2. **Origin**, when present (browsers), is the daemon's own origin or one of the
   ``allowed_origins`` it was started with (a dev UI on ``http://127.0.0.1:5173``; 403
   otherwise) — on WebSockets and on state-changing HTTP requests. The Host check stays: an
   allowed origin does not let a DNS-rebound name in.
3. **Token**: ``Authorization: Bearer <token>`` (or ``?token=`` for a browser WebSocket or
   a page the browser opens: the console carries it on in its links), compared in constant
   time (401 otherwise). Only ``GET /health`` is open without it. A cookie never holds
   it: browsers send the cookies of 127.0.0.1 to every port of it, so to every other local
   server (``SameSite`` does not tell ports apart either).

No CORS headers are ever sent.

The token file (also the discovery file: url, port, pid, token) lives in a private runtime
directory (``private_dir``: 0700, ours, no symlink) and is written with ``O_EXCL|O_NOFOLLOW``
under a fresh name, then renamed into place (``write_private_file``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import msgspec
from starlette.types import ASGIApp, Receive, Scope, Send

from stuntset.errors import UsageError

__all__ = [
    "Guard",
    "new_token",
    "normalize_origins",
    "private_dir",
    "remove_private_file",
    "write_private_file",
]


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


class Guard:
    """ASGI middleware enforcing the Host, Origin and token checks above."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        port: int,
        token: str,
        open_paths: frozenset[str],
        allowed_origins: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.token = token
        self.open_paths = open_paths
        self.hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"})
        own = frozenset(f"http://{host}" for host in self.hosts)
        self.origins = own | frozenset(normalize_origins(allowed_origins))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        refusal = self.check(scope, headers)
        if refusal is None:
            await self.app(scope, receive, send)
        else:
            await _refuse(scope, receive, send, *refusal)

    def check(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """``(status, reason)`` when the request must be refused, else ``None``."""
        host = headers.get("host")
        if host not in self.hosts:
            return 400, f"host {host!r} is not allowed (use 127.0.0.1 or localhost)"
        websocket = scope["type"] == "websocket"
        if (
            not websocket
            and scope["method"] in ("GET", "HEAD")
            and scope["path"] in self.open_paths
        ):
            return None
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins:
            return 403, f"origin {origin!r} is not allowed"
        if not self._token_ok(scope, headers):
            return 401, "a valid token is required (Authorization: Bearer <token>)"
        return None

    def _token_ok(self, scope: Scope, headers: dict[str, str]) -> bool:
        given = ""
        authorization = headers.get("authorization", "")
        if authorization.lower().startswith("bearer "):
            given = authorization[7:].strip()
        elif scope["type"] == "websocket" or scope["method"] in ("GET", "HEAD"):
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            given = (query.get("token") or [""])[0]
        return bool(given) and secrets.compare_digest(given.encode(), self.token.encode())


_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_origins(values: Iterable[str], *, option: str = "allowed_origins") -> tuple[str, ...]:
    """Each origin as a browser sends it in ``Origin`` (``scheme://host[:port]``, lower case,
    no default port); a ``UsageError`` naming ``option`` for anything that is not one."""
    if isinstance(values, str):
        raise UsageError(f"{option}: give a list of origins, not one string ({values!r})")
    found: list[str] = []
    for value in values:
        found.append(_origin(value, option))
    return tuple(found)


def _origin(value: object, option: str) -> str:
    if not isinstance(value, str):
        raise UsageError(
            f"{option}: an origin is a string like http://127.0.0.1:5173, got {value!r}"
        )
    if value.strip() in ("*", "null"):
        raise UsageError(
            f"{option} {value!r}: name each origin (scheme://host:port); a wildcard or the "
            "opaque 'null' origin would let any page or sandboxed frame drive the daemon"
        )
    if value != value.strip() or any(ord(c) < 33 or ord(c) == 127 for c in value):
        raise UsageError(f"{option} {value!r}: an origin has no spaces or control characters")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as error:
        raise UsageError(f"{option} {value!r}: not an origin ({error})") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise UsageError(
            f"{option} {value!r}: an origin is http:// or https:// and a host, like "
            "http://127.0.0.1:5173"
        )
    if parts.username is not None or parts.password is not None:
        raise UsageError(f"{option} {value!r}: an origin has no user or password")
    if parts.path not in ("", "/") or parts.query or parts.fragment or value.endswith("#"):
        raise UsageError(
            f"{option} {value!r}: an origin is scheme://host[:port] only, without a path, "
            "query or fragment"
        )
    host = parts.hostname.lower()
    shown = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        shown = f"{shown}:{port}"
    return f"{scheme}://{shown}"


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, reason: str) -> None:
    if scope["type"] == "websocket":
        message: Any = await receive()  # websocket.connect
        if message["type"] == "websocket.connect":
            # Closing before accepting makes the server answer the handshake with 403.
            await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
        return
    body = msgspec.json.encode({"error": reason})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


# --- files on disk: the runtime directory and the token (discovery) file ---------------------


def private_dir(path: Path) -> Path:
    """Create ``path`` with mode 0700 if missing; refuse one that is a symlink, is not owned
    by this user, or is open to others (mode wider than 0700) — as ssh-agent and tmux do.

    Whoever controls the directory controls the token file in it: another local user who
    made ``/tmp/stuntset-<uid>`` first could read the token, plant a symlink, or a discovery
    file pointing clients at their own server.
    """
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        os.makedirs(path.parent, exist_ok=True)
        os.mkdir(path, 0o700)
    status = os.lstat(path)
    if stat.S_ISLNK(status.st_mode):
        raise UsageError(
            f"runtime directory {path} is a symlink; refusing it (remove it, or set "
            "STUNTSET_RUNTIME_DIR to a directory of your own)"
        )
    if not stat.S_ISDIR(status.st_mode):
        raise UsageError(f"runtime directory {path} is not a directory; remove it")
    if status.st_uid != os.geteuid():
        raise UsageError(
            f"runtime directory {path} belongs to uid {status.st_uid}, not to you (uid "
            f"{os.geteuid()}); refusing it: another user may have made it to read your token "
            "(remove it, or set STUNTSET_RUNTIME_DIR)"
        )
    if stat.S_IMODE(status.st_mode) & 0o077:
        raise UsageError(
            f"runtime directory {path} has mode {stat.S_IMODE(status.st_mode):04o}, wider than "
            f"0700; refusing it (chmod 700 {path})"
        )
    return path


def _check_parent(path: Path) -> None:
    """An explicit token file's folder: ours, and not writable by group or others."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    status = os.stat(folder)
    if status.st_uid != os.geteuid() or stat.S_IMODE(status.st_mode) & 0o022:
        raise UsageError(
            f"token file {path}: its folder {folder} is writable by others or not yours "
            f"(uid {status.st_uid}, mode {stat.S_IMODE(status.st_mode):04o}); pick a folder "
            "of your own"
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_info(path: Path) -> dict[str, Any] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        try:
            data = msgspec.json.decode(file.read(65536))
        except msgspec.DecodeError:
            return None
    return data if isinstance(data, dict) else None


def write_private_file(path: Path, data: bytes, *, private_parent: bool) -> None:
    """Write ``data`` to ``path`` (mode 0600) without following a symlink or trusting
    anything already there: a fresh temporary name opened ``O_EXCL|O_NOFOLLOW``, then a
    rename over ``path``. Refuses a ``path`` that is a symlink or names a live daemon; a
    path that cannot be written (under a file, no permission) is a ``UsageError`` naming it."""
    try:
        _write_private_file(path, data, private_parent=private_parent)
    except OSError as error:
        reason = error.strerror or str(error)
        where = (
            f" ({error.filename})" if error.filename and str(error.filename) != str(path) else ""
        )
        raise UsageError(f"token file {path}: cannot write it: {reason}{where}") from None


def _write_private_file(path: Path, data: bytes, *, private_parent: bool) -> None:
    if private_parent:
        private_dir(path.parent)
    else:
        _check_parent(path)
    if path.is_symlink():
        raise UsageError(f"token file {path} is a symlink; refusing to write through it")
    found = _read_info(path)
    pid = found.get("pid") if found is not None else None
    if isinstance(pid, int) and pid != os.getpid() and _alive(pid):
        raise UsageError(
            f"token file {path} belongs to a running daemon (pid {pid}); stop it, or pass "
            "another --token-file"
        )
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)  # ours from an earlier attempt: the folder is private
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o600)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.rename(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def remove_private_file(path: Path, *, token: str) -> None:
    """Remove the token file at ``path`` if it is still the one holding ``token``."""
    found = _read_info(path)
    if found is not None and found.get("token") == token:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
