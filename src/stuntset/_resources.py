"""What this process holds, read from the operating system, and two ledgers the doubles keep
for the leak check (``stuntset.checks.leaks``). Standard library only, no psutil.

- ``open_fds()``: the process's socket and pipe file descriptors (``/proc/self/fd`` on
  Linux, ``/dev/fd`` elsewhere; ``os.fstat`` tells the kind).
- ``child_processes()``: the live descendants of this process, from ``/proc`` (each thread's
  ``children`` file, else a scan of every ``/proc/<pid>/stat``); ``None`` where there is no
  ``/proc`` (the process check is then skipped, not guessed). ``started_since()``: which of
  them were started since an earlier look, not counting the children of processes that were
  already there (a browser's new renderer belongs to the browser).
- ``STREAMS``: streaming responses the model doubles handed out and their clients have not
  read to the end or closed yet (recorded only while a leak check watches).
- ``LONG_LIVED``: resources that belong to something wider than a test (the session's
  loopback server), which a leak check must not count, and servers whose client connections
  are judged by their own check (``stand_in``'s unclosed-client check).

This sits below the doubles and the checks (both import it; it imports neither).
"""

from __future__ import annotations

import gc
import itertools
import os
import socket
import stat
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LONG_LIVED",
    "STREAMS",
    "FdInfo",
    "Finalised",
    "LongLived",
    "OpenStreams",
    "ProcessInfo",
    "child_processes",
    "describe_fd",
    "open_fds",
]


@dataclass(frozen=True)
class FdInfo:
    """A socket or pipe descriptor: ``kind`` (``"socket"``/``"pipe"``) and its inode, which
    tells a new object from an old one that had the same number."""

    fd: int
    kind: str
    dev: int
    ino: int


def _fd_dir() -> str | None:
    for candidate in ("/proc/self/fd", "/dev/fd"):
        if os.path.isdir(candidate):
            return candidate
    return None  # pragma: no cover - every POSIX system has one of them


def open_fds() -> dict[int, FdInfo]:
    """The socket and pipe descriptors open now, by number (empty where none can be listed)."""
    where = _fd_dir()
    if where is None:  # pragma: no cover
        return {}
    found: dict[int, FdInfo] = {}
    for name in os.listdir(where):
        fd = int(name)
        try:
            info = os.fstat(fd)
        except OSError:  # the listing's own descriptor, closed by now
            continue
        if stat.S_ISSOCK(info.st_mode):
            found[fd] = FdInfo(fd, "socket", info.st_dev, info.st_ino)
        elif stat.S_ISFIFO(info.st_mode):
            found[fd] = FdInfo(fd, "pipe", info.st_dev, info.st_ino)
    return found


def _address(value: object) -> str:
    if isinstance(value, tuple) and len(value) >= 2:
        host = str(value[0])
        return f"[{host}]:{value[1]}" if ":" in host else f"{host}:{value[1]}"
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value) or "unnamed"


def socket_addresses(fd: int) -> tuple[object, object] | None:
    """(local, peer) addresses of socket ``fd`` (the peer ``None`` when unconnected)."""
    try:
        sock = socket.socket(fileno=os.dup(fd))
    except OSError:
        return None
    try:
        local = sock.getsockname()
        try:
            peer: object = sock.getpeername()
        except OSError:
            peer = None
        return local, peer
    finally:
        sock.close()


def describe_fd(info: FdInfo) -> str:
    """One line: a socket's family, type and both ends; a pipe's end and inode."""
    if info.kind == "pipe":
        try:
            import fcntl

            mode = fcntl.fcntl(info.fd, fcntl.F_GETFL) & os.O_ACCMODE
            end = "write end" if mode == os.O_WRONLY else "read end"
        except (ImportError, OSError):  # pragma: no cover - not POSIX, or closed meanwhile
            end = "end"
        return f"pipe {end} (fd {info.fd}, inode {info.ino})"
    try:
        sock = socket.socket(fileno=os.dup(info.fd))
    except OSError:  # pragma: no cover - closed meanwhile
        return f"socket (fd {info.fd})"
    try:
        family = {socket.AF_INET: "tcp", socket.AF_INET6: "tcp6"}.get(sock.family, "")
        if getattr(socket, "AF_UNIX", None) == sock.family:
            family = "unix"
        if sock.type == socket.SOCK_DGRAM:
            family = {"tcp": "udp", "tcp6": "udp6"}.get(family, family + " datagram")
        local = _address(sock.getsockname())
        try:
            peer = _address(sock.getpeername())
        except OSError:
            peer = "listening" if _listening(sock) else "not connected"
        return f"{family or sock.family.name} socket {local} -> {peer} (fd {info.fd})"
    finally:
        sock.close()


def _listening(sock: socket.socket) -> bool:
    try:
        return bool(sock.getsockopt(socket.SOL_SOCKET, getattr(socket, "SO_ACCEPTCONN", 30)))
    except OSError:  # pragma: no cover - platforms without the option
        return False


# --- processes -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcessInfo:
    """A process: its id, its parent, its start time in clock ticks since boot (which tells
    it from a later process given the same id), its command line, its name (``comm``) and
    whether it has ended without being reaped (a zombie)."""

    pid: int
    ppid: int
    start: int
    cmdline: tuple[str, ...]
    name: str = ""
    zombie: bool = False

    def describe(self) -> str:
        """ "process PID (name)", with ", not reaped" for a zombie."""
        return f"process {self.pid} ({self.name}{', not reaped' if self.zombie else ''})"


def _stat(pid: int) -> tuple[str, int, int, str] | None:
    """(state, ppid, start time, name) of ``pid`` from ``/proc/<pid>/stat``; None if it is
    gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            raw = file.read()
    except OSError:
        return None
    close = raw.rfind(b")")
    fields = raw[close + 2 :].split()
    name = raw[raw.find(b"(") + 1 : close].decode("utf-8", "replace")
    return fields[0].decode(), int(fields[1]), int(fields[19]), name


def _cmdline(pid: int) -> tuple[str, ...]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            raw = file.read()
    except OSError:
        return ()
    return tuple(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)


def _children_files(pid: int) -> list[int] | None:
    """Children of ``pid`` from its threads' ``children`` files; None where the kernel has
    none (``CONFIG_PROC_CHILDREN`` off)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    children: list[int] = []
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as file:
                children.extend(int(c) for c in file.read().split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended meanwhile
            return None
        except OSError:
            continue
    return children


def _children_by_scan() -> dict[int, list[int]]:
    by_parent: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            found = _stat(int(name))
            if found is not None:
                by_parent.setdefault(found[1], []).append(int(name))
    return by_parent


def child_processes(
    root: int | None = None, *, zombies: bool = False
) -> dict[int, ProcessInfo] | None:
    """The live descendants of ``root`` (this process), by pid — with the ended, unreaped
    ones too if ``zombies`` —; ``None`` where processes cannot be listed without a dependency
    (no ``/proc``)."""
    if not os.path.isdir("/proc/self/task"):
        return None
    root = os.getpid() if root is None else root
    scanned: dict[int, list[int]] | None = None
    found: dict[int, ProcessInfo] = {}
    todo = [root]
    while todo:
        parent = todo.pop()
        children = _children_files(parent) if scanned is None else None
        if children is None:
            if scanned is None:
                scanned = _children_by_scan()
            children = scanned.get(parent, [])
        for pid in children:
            state = _stat(pid)
            if state is None or pid in found:
                continue
            todo.append(pid)
            ended = state[0] in ("Z", "X")
            if zombies or not ended:
                found[pid] = ProcessInfo(pid, state[1], state[2], _cmdline(pid), state[3], ended)
    return found


def started_since(
    before: Mapping[int, ProcessInfo], now: Mapping[int, ProcessInfo]
) -> list[ProcessInfo]:
    """The processes of ``now`` that ``before`` did not have, leaving out those below a
    process ``before`` had: a process that was already running (a browser a session fixture
    started, a daemon) starts children of its own at any moment, and they are its doing,
    not the doing of whatever ran in between."""
    old = {(p.pid, p.start) for p in before.values()}

    def inherited(process: ProcessInfo) -> bool:
        seen = {process.pid}
        while (parent := now.get(process.ppid)) is not None and parent.pid not in seen:
            if (parent.pid, parent.start) in old:
                return True
            seen.add(parent.pid)
            process = parent
        return False

    return [p for p in now.values() if (p.pid, p.start) not in old and not inherited(p)]


class Finalised:
    """What finalisers warned or raised during one ``gc.collect()``, held back so it does not
    escape into a later test; ``replay()`` lets it through when it is not reported here."""

    def __init__(self) -> None:
        self.warnings: list[warnings.WarningMessage] = []
        self.unraisable: list[Any] = []

    def collect(self) -> None:
        previous = sys.unraisablehook
        sys.unraisablehook = self.unraisable.append
        try:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                gc.collect()
        finally:
            sys.unraisablehook = previous
        self.warnings = seen

    def messages(self) -> list[str]:
        said = [f"{w.category.__name__}: {w.message}" for w in self.warnings]
        said += [f"{type(u.exc_value).__name__}: {u.exc_value}" for u in self.unraisable]
        return list(dict.fromkeys(said))

    def unclosed(self) -> bool:
        return any("unclosed" in m or "Event loop is closed" in m for m in self.messages())

    def replay(
        self,
        warn: Callable[[Warning | str, type[Warning], str, int], object] = warnings.warn_explicit,
        raised: Callable[[Any], object] | None = None,
    ) -> None:
        """Say again what ``collect`` held back: each warning through ``warn`` (the process's
        warning machinery by default, so pytest's capture of the test records it) with its
        original place, each unraisable exception through ``raised`` (``sys.unraisablehook``
        as it is now by default)."""
        hook = sys.unraisablehook if raised is None else raised
        for w in self.warnings:
            warn(w.message, w.category, w.filename, w.lineno)
        for u in self.unraisable:
            hook(u)


# --- the ledgers -----------------------------------------------------------------------------


class OpenStreams:
    """Streaming responses handed out and not yet released by their client. A double calls
    ``opened(what)`` when a response starts and ``ended(token)`` when its client read it to
    the end, closed it or hung up; ``ended(token, released=False)`` when the double itself had
    to end it (closed at teardown with the client still holding it). Nothing is recorded
    unless a leak check ``watch()``-es: ``opened`` returns ``None`` then."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._open: dict[int, str] = {}
        self._abandoned: dict[int, str] = {}
        self._watchers = 0

    def watch(self) -> int:
        """Start recording (nestable); returns the mark ``since`` compares with."""
        with self._lock:
            self._watchers += 1
            return next(self._ids)

    def unwatch(self, mark: int) -> None:
        with self._lock:
            self._watchers -= 1
            if not self._watchers:  # nobody will ask about them any more
                self._open.clear()
                self._abandoned.clear()

    def opened(self, what: str) -> int | None:
        if not self._watchers:
            return None
        with self._lock:
            token = next(self._ids)
            self._open[token] = what
            return token

    def ended(self, token: int | None, *, released: bool = True) -> None:
        if token is None:
            return
        with self._lock:
            what = self._open.pop(token, None)
            if what is not None and not released:
                self._abandoned[token] = what

    def since(self, mark: int) -> list[str]:
        """Streams opened after ``mark`` that are still open, or that the double had to end."""
        with self._lock:
            still = [(t, f"{w} (still open)") for t, w in self._open.items() if t >= mark]
            dropped = [
                (t, f"{w} (never closed by its client: ended when the double closed)")
                for t, w in self._abandoned.items()
                if t >= mark
            ]
        return [what for _, what in sorted(still + dropped)]


class LongLived:
    """Resources owned by something wider than a test, which leak checks leave alone: socket
    and pipe descriptors (by inode), processes, paths, and servers (host, port) whose client
    connections another check judges."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.inodes: set[tuple[int, int]] = set()
        self.processes: set[tuple[int, int]] = set()
        self.paths: set[str] = set()
        self.servers: set[tuple[str, int]] = set()

    @contextmanager
    def opened_here(self) -> Iterator[None]:
        """Everything (sockets, pipes) opened in this process during the block is long-lived:
        for an object that opens its descriptors on several threads while it starts."""
        before = {(i.dev, i.ino) for i in open_fds().values()}
        try:
            yield
        finally:
            after = {(i.dev, i.ino) for i in open_fds().values()}
            with self._lock:
                self.inodes |= after - before

    def add_fd(self, fd: int) -> None:
        info = os.fstat(fd)
        with self._lock:
            self.inodes.add((info.st_dev, info.st_ino))

    def add_server(self, host: str, port: int) -> None:
        with self._lock:
            self.servers.add((host, port))

    def remove_server(self, host: str, port: int) -> None:
        with self._lock:
            self.servers.discard((host, port))

    def owns_fd(self, info: FdInfo) -> bool:
        with self._lock:
            if (info.dev, info.ino) in self.inodes:
                return True
            servers = set(self.servers)
        if info.kind != "socket" or not servers:
            return False
        ends = socket_addresses(info.fd)
        if ends is None:
            return False
        return any(isinstance(end, tuple) and (str(end[0]), int(end[1])) in servers for end in ends)


#: The process-wide ledgers (a double and a check meet here without importing each other).
STREAMS = OpenStreams()
LONG_LIVED = LongLived()
