"""Leak checks: what a test (or any block of code) started and left behind. Public as
``stuntset.checks.leaks`` (and ``stuntset.checks``); kept outside the ``checks`` package so
the pytest plugin loads it without importing every other check (≈0.7 s).

``LeakSnapshot.take()`` notes what the process holds; ``snapshot.check()`` fails with one
``ResourceLeak`` listing everything opened since and still there, each with what it is and
where it came from:

- **processes**: live descendants of this process started since (command line; the Python
  line that started it, when it was started through ``subprocess``/``asyncio``);
- **sockets** and **pipes**: descriptors opened since and still open (both ends of a socket;
  the line that created it; the child process at the other end of a pipe);
- **tasks**: asyncio tasks created in the block and still pending when it ended (coroutine,
  where it is suspended, where it was created when the loop runs in debug mode);
- **temp_dirs**: directories created directly in the temporary directory and still there
  (the line that created them); one that was already there (a ``mkdir(exist_ok=True)``, a
  project checked out in the temporary directory) is never blamed;
- **streams**: streaming responses of the model doubles that their client neither read to the
  end nor closed (``stuntset._resources.STREAMS``).

``with check_no_leaks():`` / ``async with check_no_leaks():`` wrap a block (the async form
also checks tasks). Under pytest the ``stuntset_leaks`` fixture and marker do it at teardown
(see the plugin). Processes are read from ``/proc`` (Linux); where there is none that kind is
skipped and named in ``snapshot.unsupported``. Resources meant to outlive the block are
excluded with ``snapshot.keep(obj)``; the session's loopback server registers its own
(``LONG_LIVED``), and connections to it are judged by ``stand_in``'s unclosed-client check.

A library's own threads live for the process: a socket made on a thread (not the main
one) whose work entered third-party code first (an installed package's, not stuntset's,
not the test's: litellm's logging pool running its callback) and that is still running is
the library's, which an app cannot close, and is not reported (``libraries``: the folders
of such code, by default the installed packages'). A thread whose target is the test's or
the app's own function is theirs, whatever it calls; so is a thread that has ended. (A
test that starts a thread straight on a library's function, ``Thread(target=server.run)``,
hands that thread to the library: its clients' sockets are still the test's.) Likewise the
self-pipe of the event loop a library made a thread's default (``asyncio.get_event_loop()``
outside a running loop: litellm's service logger) is the thread's, not the block's.

What is still open is given ``settle`` seconds to close (a closed client's server side, a
terminated child's exit), then a garbage collection: what it closes was dropped without being
closed, and the report quotes what its finalisers said.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sys
import sysconfig
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import FrameType, TracebackType
from typing import Any, Literal

from stuntset._resources import (
    LONG_LIVED,
    STREAMS,
    FdInfo,
    Finalised,
    ProcessInfo,
    child_processes,
    describe_fd,
    open_fds,
    started_since,
)
from stuntset.errors import ResourceLeak, UsageError, WaitTimeout
from stuntset.waiting import wait_for, wait_for_async

__all__ = ["KINDS", "Leak", "LeakSnapshot", "check_no_leaks"]

#: Every kind of leak the check knows, in report order.
KINDS = ("processes", "sockets", "pipes", "tasks", "temp_dirs", "streams")

#: Real seconds what is still open gets to close before it counts (a closed client's server
#: side, a terminated process's exit): spent only when something is still open.
SETTLE_SECONDS = 1.0


@dataclass(frozen=True)
class Leak:
    """One resource that outlived its block: ``kind`` (one of ``KINDS``), what it is, and
    where it came from (empty when unknown)."""

    kind: str
    what: str
    origin: str = ""

    def __str__(self) -> str:
        return f"{self.what}\n      {self.origin}" if self.origin else self.what


# --- where things come from: an audit hook, installed once, inert unless a snapshot watches ---

_WATCHING: list[LeakSnapshot] = []
_HOOKED = False
_HOOK_LOCK = threading.Lock()
_EVENTS = frozenset({"os.mkdir", "subprocess.Popen", "os.posix_spawn", "socket.__new__"})


def _prefixes(*keys: str) -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(sorted({os.path.join(paths[k], "") for k in keys if k in paths}))


#: Installed packages and stuntset itself: a line there says which library opened a thing.
_PACKAGES = (
    *_prefixes("purelib", "platlib"),
    os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ""),
)
#: ... and the standard library: the origin is the first line outside all of them.
_LIBRARY = (*_prefixes("stdlib", "platstdlib"), *_PACKAGES)
#: The standard library alone, and stuntset alone.
_STDLIB = _prefixes("stdlib", "platstdlib")
_OWN = _PACKAGES[-1]
#: Installed packages: third-party code, whose own threads live for the process.
_THIRD_PARTY = _prefixes("purelib", "platlib")


def _entry(frame: FrameType | None) -> str:
    """The file of the outermost line outside the standard library: where a thread's work
    entered code of its own (a ``Thread``'s target, a pool's work item), or ``""``."""
    found = ""
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<") and (
            name.startswith((_OWN, *_THIRD_PARTY)) or not name.startswith(_STDLIB)
        ):
            found = name
        frame = frame.f_back
    return found


def _maker(frame: FrameType | None) -> str:
    """The file of the innermost line outside the standard library: the code that made a
    thing (the library that called ``asyncio.new_event_loop``), or ``""``."""
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<") and (
            name.startswith((_OWN, *_THIRD_PARTY)) or not name.startswith(_STDLIB)
        ):
            return name
        frame = frame.f_back
    return ""


def _default_loop_pipes() -> set[int]:
    """The descriptors of the self-pipe of the event loop asyncio's policy keeps as this
    thread's default (``asyncio.get_event_loop()`` made it, or ``set_event_loop``), while it
    is neither running nor closed: the thread's for its life, not a block's."""
    local = getattr(asyncio.get_event_loop_policy(), "_local", None)
    loop = getattr(local, "_loop", None)
    if not isinstance(loop, asyncio.AbstractEventLoop) or loop.is_closed() or loop.is_running():
        return set()
    pipes = (getattr(loop, "_ssock", None), getattr(loop, "_csock", None))
    return {sock.fileno() for sock in pipes if sock is not None and hasattr(sock, "fileno")}


def _third_party(name: str, libraries: tuple[str, ...]) -> bool:
    """``name`` (a code file) is a library's: under ``libraries``, and not stuntset's."""
    return bool(name) and name.startswith(libraries) and not name.startswith(_OWN)


def _origin(frame: FrameType | None) -> str:
    """The innermost caller outside the standard library, installed packages and stuntset
    (the test's or the app's own line), and the innermost package line it went through."""
    through = ""
    while frame is not None:
        name = frame.f_code.co_filename
        if not name.startswith("<"):
            here = f"{name}:{frame.f_lineno} in {frame.f_code.co_name}"
            if not name.startswith(_LIBRARY):
                return f"{here} (via {through})" if through else here
            if not through and name.startswith(_PACKAGES):
                through = here
        frame = frame.f_back
    return through


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if not _WATCHING or event not in _EVENTS:
        return
    frame = sys._getframe(1)
    where = _origin(frame)
    made = ("", "")
    if event == "socket.__new__":
        main = threading.current_thread() is threading.main_thread()
        made = ("" if main else _entry(frame), _maker(frame))
    for snapshot in list(_WATCHING):
        snapshot._saw(event, args, where, made)


def _install_hook() -> None:
    global _HOOKED
    with _HOOK_LOCK:
        if not _HOOKED:
            sys.addaudithook(_hook)  # cannot be removed: it does nothing unless watched
            _HOOKED = True


# --- the snapshot -----------------------------------------------------------------------------


def _describe_task(task: asyncio.Task[Any]) -> tuple[str, str]:
    coro = task.get_coro()
    name = getattr(coro, "__qualname__", None) or type(coro).__name__
    what = f"asyncio task {task.get_name()!r} running {name}()"
    stack = task.get_stack(limit=1)
    if stack:
        frame = stack[-1]
        what += f", suspended at {frame.f_code.co_filename}:{frame.f_lineno}"
    created = getattr(task, "_source_traceback", None)
    origin = ""
    if created:
        origin = "created at " + "; ".join(f"{f.filename}:{f.lineno}" for f in created[-2:])
    return what, origin


#: What asyncio tells its loop's exception handler when a pending task is garbage collected.
_DESTROYED_PENDING = "Task was destroyed but it is pending!"


def _dead() -> None:
    """The ``weakref.ref`` of a task already destroyed: always ``None``."""
    return


class _DestroyedTasks:
    """The tasks the garbage collector destroyed while still pending, on one loop, while it
    watches. asyncio keeps only weak references to tasks: a task nothing refers to (created
    and forgotten, waiting on an event only it references) is a reference cycle, and a
    collection at any moment removes it from ``asyncio.all_tasks()`` before the check at the
    block's end can see it. asyncio then tells the loop's exception handler; this handler is
    put in front of the loop's own (which still logs it) for the block."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.previous = loop.get_exception_handler()
        self.seen: list[tuple[str, str]] = []
        loop.set_exception_handler(self._handle)

    def _handle(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        task = context.get("task")
        if context.get("message") == _DESTROYED_PENDING and isinstance(task, asyncio.Task):
            with contextlib.suppress(Exception):  # a half-destroyed task may not describe
                what, origin = _describe_task(task)
                self.seen.append(
                    (f"{what}, destroyed by the garbage collector while pending", origin)
                )
        if self.previous is not None:
            self.previous(loop, context)
        else:
            loop.default_exception_handler(context)

    def stop(self) -> None:
        if self.loop.get_exception_handler() == self._handle:
            self.loop.set_exception_handler(self.previous)


def _finalising(task: asyncio.Task[Any]) -> bool:
    """The loop's own task closing an async generator that was dropped mid-iteration (a
    consumer broke out of an SDK's ``async for``): the loop's cleanup, not the test's leak.
    The async check (and the plugin's, on an async test's loop) waits for it: see ``settle``."""
    return type(task.get_coro()).__name__ == "async_generator_athrow"


def _pipe_peers(inode: int, processes: Iterable[ProcessInfo]) -> str:
    for process in processes:
        try:
            names = os.listdir(f"/proc/{process.pid}/fd")
        except OSError:
            continue
        for name in names:
            try:
                if os.readlink(f"/proc/{process.pid}/fd/{name}") == f"pipe:[{inode}]":
                    return f"other end in child process {process.pid}: {' '.join(process.cmdline)}"
            except OSError:
                continue
    return ""


@functools.lru_cache(maxsize=64)
def _real(path: str) -> str:
    """``os.path.realpath``, once per path (a snapshot per test resolved the temporary
    directory again: a third of the check's cost)."""
    return os.path.realpath(path)


@dataclass
class LeakSnapshot:
    """What the process held when it was taken; ``check()`` reports what was opened since and
    is still there. Use ``take()`` (or ``check_no_leaks``), not the constructor."""

    kinds: frozenset[str]
    temp_root: str
    ignore_paths: tuple[str, ...] = ()
    where: str = ""
    unsupported: tuple[str, ...] = ()
    _processes: dict[int, ProcessInfo] | None = None
    _fds: set[tuple[int, int]] = field(default_factory=set)
    _stream_mark: int = 0
    _temp_dirs: dict[str, str] = field(default_factory=dict)
    _spawned: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    #: Each socket made since: the socket, where, its thread, the file where that thread's
    #: work entered code outside the standard library, and the file of the code that made it.
    _sockets: list[tuple[weakref.ref[Any], str, weakref.ref[threading.Thread], str, str]] = field(
        default_factory=list
    )
    libraries: tuple[str, ...] = _THIRD_PARTY
    _tasks: list[tuple[Callable[[], asyncio.Task[Any] | None], str, str]] = field(
        default_factory=list
    )
    _tasks_before: set[asyncio.Task[Any]] | None = None
    _destroyed: _DestroyedTasks | None = None
    _kept_pids: set[tuple[int, int]] = field(default_factory=set)
    _kept_fds: set[tuple[int, int]] = field(default_factory=set)
    _kept_paths: set[str] = field(default_factory=set)
    _kept_tasks: weakref.WeakSet[Any] = field(default_factory=weakref.WeakSet)
    _watching: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def take(
        cls,
        *,
        kinds: Iterable[str] = KINDS,
        ignore: Iterable[str] = (),
        temp_root: str | os.PathLike[str] | None = None,
        ignore_paths: Iterable[str | os.PathLike[str]] = (),
        where: str = "",
        libraries: Iterable[str | os.PathLike[str]] | None = None,
    ) -> LeakSnapshot:
        """Note what the process holds now and start watching. ``kinds`` minus ``ignore``
        are checked; ``temp_root`` is the temporary directory (default: ``tempfile``'s);
        directories under ``ignore_paths`` are never leaks; ``where`` prefixes the report;
        ``libraries`` are the folders of third-party code whose running threads' sockets are
        theirs (default: the installed packages')."""
        chosen = frozenset(kinds) - frozenset(ignore)
        unknown = sorted((chosen | frozenset(ignore)) - frozenset(KINDS))
        if unknown:
            raise UsageError(f"unknown leak kind(s) {unknown}: the kinds are {list(KINDS)}")
        root = _real(os.fspath(temp_root) if temp_root is not None else tempfile.gettempdir())
        snapshot = cls(
            chosen,
            root,
            tuple(os.path.join(os.path.realpath(p), "") for p in ignore_paths),
            where,
        )
        if libraries is not None:
            snapshot.libraries = tuple(
                os.path.join(os.path.abspath(os.fspath(p)), "") for p in libraries
            )
        snapshot._start()
        return snapshot

    def _start(self) -> None:
        if "processes" in self.kinds:
            self._processes = child_processes()
            if self._processes is None:
                self.unsupported = ("processes",)
        if self.kinds & {"sockets", "pipes"}:
            self._fds = {(i.dev, i.ino) for i in open_fds().values()}
        if "streams" in self.kinds:
            self._stream_mark = STREAMS.watch()
        _install_hook()
        _WATCHING.append(self)
        self._watching = True

    def close(self) -> None:
        """Stop watching (``check`` calls it; idempotent)."""
        self._stop_destroyed()
        if not self._watching:
            return
        self._watching = False
        if self in _WATCHING:
            _WATCHING.remove(self)
        if "streams" in self.kinds:
            STREAMS.unwatch(self._stream_mark)

    def __eq__(self, other: object) -> bool:  # identity: snapshots are not values
        return self is other

    __hash__ = object.__hash__

    def _saw(
        self, event: str, args: tuple[Any, ...], where: str, made: tuple[str, str] = ("", "")
    ) -> None:
        with self._lock:
            if event == "os.mkdir":
                path, _mode, dir_fd = args
                if "temp_dirs" in self.kinds and dir_fd in (-1, None):
                    full = os.path.abspath(os.fsdecode(path))
                    if (
                        os.path.realpath(os.path.dirname(full)) == self.temp_root
                        and not os.path.lexists(full)  # already there: not this block's
                    ):
                        self._temp_dirs.setdefault(full, where)
            elif event == "socket.__new__":
                if "sockets" in self.kinds:
                    thread = weakref.ref(threading.current_thread())
                    self._sockets.append((weakref.ref(args[0]), where, thread, *made))
            elif "processes" in self.kinds:  # subprocess.Popen / os.posix_spawn
                argv = args[1]
                argv = [argv] if isinstance(argv, str | bytes | os.PathLike) else list(argv or ())
                self._spawned.append((tuple(os.fsdecode(a) for a in argv), where))

    # --- what the test marks as its own ---

    def keep(self, thing: Any) -> None:
        """Let ``thing`` outlive the block: a process (``Popen``, or a pid), a socket or pipe
        (an object with ``fileno()``, or a descriptor number: an int is a descriptor when one
        is open with that number, else a pid), a path, or an asyncio task."""
        if isinstance(thing, asyncio.Task):
            self._kept_tasks.add(thing)
        elif isinstance(thing, str | os.PathLike):
            self._kept_paths.add(os.path.abspath(os.fspath(thing)))
        elif hasattr(thing, "pid") or (isinstance(thing, int) and not hasattr(thing, "fileno")):
            pid = int(getattr(thing, "pid", thing))
            if hasattr(thing, "pid") or pid not in open_fds():
                found = (child_processes() or {}).get(pid)
                self._kept_pids.add((pid, found.start if found else -1))
                return
            info = os.fstat(pid)
            self._kept_fds.add((info.st_dev, info.st_ino))
        elif hasattr(thing, "fileno"):
            info = os.fstat(thing.fileno())
            self._kept_fds.add((info.st_dev, info.st_ino))
        else:
            raise UsageError(
                f"keep({thing!r}): expected a process, a socket or descriptor, a path or an "
                f"asyncio task"
            )

    # --- tasks (inside the loop, before it ends) ---

    def tasks_now(self) -> set[asyncio.Task[Any]]:
        """The running asyncio loop's tasks (empty outside asyncio): call at the block's
        start, pass to ``note_tasks`` at its end."""
        try:
            return set(asyncio.all_tasks())
        except RuntimeError:  # no running asyncio loop (trio, or none)
            return set()

    def start_tasks(self) -> set[asyncio.Task[Any]]:
        """At an async block's start, on its loop: ``tasks_now()``, and from now on the tasks
        the garbage collector destroys while pending are noted too (``_DestroyedTasks``)."""
        before = self.tasks_now()
        if "tasks" in self.kinds and self._destroyed is None:
            with contextlib.suppress(RuntimeError):  # trio, or no loop: no tasks to leak
                self._destroyed = _DestroyedTasks(asyncio.get_running_loop())
        return before

    def _stop_destroyed(self) -> list[tuple[str, str]]:
        destroyed, self._destroyed = self._destroyed, None
        if destroyed is None:
            return []
        destroyed.stop()
        return destroyed.seen

    async def note_tasks(self, before: set[asyncio.Task[Any]]) -> None:
        """At the end of an async block, on its loop: note the tasks created since ``before``
        that are still pending, after letting ready callbacks run (the loop cancels them when
        it closes, so they are described now)."""
        if "tasks" not in self.kinds:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # trio: no free-standing tasks to leak
        for _ in range(3):  # let work that is already due finish (no time passes)
            await asyncio.sleep(0)
        me = asyncio.current_task(loop)
        for task in asyncio.all_tasks(loop):
            if task is me or task in before or task.done() or _finalising(task):
                continue
            what, origin = _describe_task(task)
            self._tasks.append((weakref.ref(task), what, origin))
        for what, origin in self._stop_destroyed():
            self._tasks.append((_dead, what, origin))

    async def settle(self, before: set[asyncio.Task[Any]], *, until_closed: bool = False) -> None:
        """At the end of an async block, on its loop: wait (within ``SETTLE_SECONDS``) for
        the loop's tasks closing the async generators dropped since ``before`` (and, with
        ``until_closed``, for what the block opened to close): a loop that ends first cancels
        them mid-cleanup (claude-agent-sdk's ``query()`` then never closes its message stream)."""

        def settling() -> bool:  # cleanup may be the loop's tasks: judge once they are done
            return (until_closed and self._still_open()) or any(
                _finalising(t) for t in self.tasks_now() - before
            )

        if settling():
            with contextlib.suppress(WaitTimeout):
                await wait_for_async(lambda: not settling(), timeout=SETTLE_SECONDS)

    # --- the check ---

    def _new_processes(self) -> list[ProcessInfo]:
        if self._processes is None:
            return []
        now = child_processes() or {}
        return [
            p
            for p in started_since(self._processes, now)
            if (p.pid, p.start) not in self._kept_pids and (p.pid, -1) not in self._kept_pids
        ]

    def _new_fds(self) -> list[FdInfo]:
        wanted = {k for k in ("sockets", "pipes") if k in self.kinds}
        if not wanted:
            return []
        libraries = self._library_fds() if "sockets" in wanted else set()
        return [
            info
            for info in open_fds().values()
            if info.kind + "s" in wanted
            and (info.dev, info.ino) not in self._fds
            and (info.dev, info.ino) not in self._kept_fds
            and info.fd not in libraries
            and not LONG_LIVED.owns_fd(info)
        ]

    def _library_fds(self) -> set[int]:
        """The descriptors of the open sockets made on a library's own running threads."""
        found: set[int] = set()
        pipes = _default_loop_pipes()
        for ref, _where, thread, entry, maker in list(self._sockets):
            sock, running = ref(), thread()
            if sock is None or sock.fileno() == -1:
                continue
            own_thread = (
                running is not None and running.is_alive() and _third_party(entry, self.libraries)
            )
            own_loop = sock.fileno() in pipes and _third_party(maker, self.libraries)
            if own_thread or own_loop:
                found.add(sock.fileno())
        return found

    def _left_dirs(self) -> list[str]:
        with self._lock:
            made = list(self._temp_dirs)
        kept = self._kept_paths | LONG_LIVED.paths
        return [
            path
            for path in made
            if os.path.isdir(path)
            and path not in kept
            and not os.path.join(path, "").startswith(self.ignore_paths or ("\0",))
        ]

    def _pending(self) -> tuple[list[ProcessInfo], list[FdInfo], list[str]]:
        streams: list[str] = []
        if "streams" in self.kinds:
            streams = STREAMS.since(self._stream_mark)
        return self._new_processes(), self._new_fds(), streams

    def leaks(self, *, settle: float = SETTLE_SECONDS) -> list[Leak]:
        """Everything opened since the snapshot and still there (after ``settle`` seconds
        and a garbage collection), in ``KINDS`` order; stops watching."""
        try:
            return self._leaks(settle)
        finally:
            self.close()

    def _fd_leaks(
        self, fds: list[FdInfo], processes: list[ProcessInfo]
    ) -> list[tuple[tuple[int, int], Leak]]:
        sockets: dict[int, str] = {}
        for ref, where, *_made in list(self._sockets):
            sock = ref()
            if sock is not None and sock.fileno() != -1:
                sockets.setdefault(sock.fileno(), where)
        found = []
        for info in sorted(fds, key=lambda i: (i.kind != "socket", i.fd)):
            if info.kind == "socket":
                where = sockets.get(info.fd, "")
                origin = f"opened at {where}" if where else ""
            else:
                origin = _pipe_peers(info.ino, processes)
            found.append(((info.dev, info.ino), Leak(info.kind + "s", describe_fd(info), origin)))
        return found

    @staticmethod
    def _open_in(pending: tuple[list[ProcessInfo], list[FdInfo], list[str]]) -> bool:
        processes, fds, streams = pending
        return bool(processes or fds or any("still open" in s for s in streams))

    def _still_open(self) -> bool:
        return self._open_in(self._pending())

    def _leaks(self, settle: float) -> list[Leak]:
        still_open = self._still_open
        finalised: Finalised | None = None
        collected: list[Leak] = []
        # read once: when nothing is left open (the common case) it is also the answer
        pending = self._pending()
        if self._open_in(pending):
            try:
                wait_for(lambda: not still_open(), timeout=settle)
            except WaitTimeout:
                held = self._fd_leaks(self._new_fds(), [])  # described while they are open
                finalised = Finalised()
                finalised.collect()
                if finalised.unclosed():
                    now = {(i.dev, i.ino) for i in self._new_fds()}
                    collected = [
                        Leak(leak.kind, f"{leak.what}, dropped without being closed", leak.origin)
                        for key, leak in held
                        if key not in now
                    ]
            pending = self._pending()
        processes, fds, streams = pending
        found: list[Leak] = []
        spawned = list(self._spawned)
        for process in processes:
            origin = next((w for argv, w in spawned if argv == process.cmdline), "")
            if not origin and process.ppid != os.getpid():
                origin = f"a child of process {process.ppid}"
            command = " ".join(process.cmdline) or "(command line unreadable)"
            found.append(
                Leak("processes", f"child process {process.pid}: {command}", _started(origin))
            )
        found += [leak for _, leak in self._fd_leaks(fds, processes)] + collected
        for ref, what, origin in self._tasks:
            task = ref()
            if task is None or task not in self._kept_tasks:
                found.append(Leak("tasks", what, origin))
        for path in self._left_dirs():
            where = self._temp_dirs.get(path, "")
            found.append(
                Leak(
                    "temp_dirs", f"temporary directory {path}", f"created at {where}" * bool(where)
                )
            )
        for stream in streams:
            found.append(Leak("streams", f"model double stream: {stream}"))
        if finalised is not None:
            said = finalised.messages()
            if found and said:
                found.append(Leak("collector", "the garbage collector said: " + "; ".join(said)))
            elif not found:
                finalised.replay()
        order = {kind: i for i, kind in enumerate((*KINDS, "collector"))}
        return sorted(found, key=lambda leak: order[leak.kind])

    def check(self, *, settle: float = SETTLE_SECONDS, hint: str = "") -> None:
        """``ResourceLeak`` listing every leak (see ``leaks``); stops watching."""
        __tracebackhide__ = True
        found = self.leaks(settle=settle)
        if not found:
            return
        real = [leak for leak in found if leak.kind != "collector"]
        lines = "\n".join(f"  - [{leak.kind}] {leak}" for leak in found)
        place = f"{self.where}: " if self.where else ""
        raise ResourceLeak(
            f"{place}{len(real)} resource(s) opened here were still open at the end:\n{lines}\n"
            f"Close what the code under test opens (async with / with, await x.aclose(), "
            f"process.wait(), task cancel + await, TemporaryDirectory); "
            + (hint or "snapshot.keep(obj) lets one outlive the block on purpose.")
        )

    # --- as a context manager ---

    def __enter__(self) -> LeakSnapshot:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        __tracebackhide__ = True
        if kind is None:
            self.check()
        else:
            self.close()  # the block's own error is the one to read
        return False

    async def __aenter__(self) -> LeakSnapshot:
        self._tasks_before = self.start_tasks()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        __tracebackhide__ = True
        if kind is None:
            before = self._tasks_before or set()
            await self.note_tasks(before)
            await self.settle(before, until_closed=True)  # with the loop running
            self.check(settle=0)
        else:
            self.close()  # the block's own error is the one to read
        return False


def _started(origin: str) -> str:
    if not origin or origin.startswith("a child"):
        return origin
    return f"started at {origin.removeprefix('at ')}"


def check_no_leaks(
    *,
    kinds: Iterable[str] = KINDS,
    ignore: Iterable[str] = (),
    temp_root: str | os.PathLike[str] | None = None,
    where: str = "",
    libraries: Iterable[str | os.PathLike[str]] | None = None,
) -> LeakSnapshot:
    """``with check_no_leaks():`` (or ``async with``, which also checks asyncio tasks, and
    first lets the loop finish closing the async generators dropped in the block): at
    the end of the block, ``ResourceLeak`` lists the child processes, sockets, pipes, tasks,
    temporary directories and model-double streams it opened and left open. Not checked if
    the block raised (its own error is the one to read)."""
    return LeakSnapshot.take(
        kinds=kinds, ignore=ignore, temp_root=temp_root, where=where, libraries=libraries
    )


# --- what the pytest plugin wires (pytest-free) -------------------------------------------------

#: The end of a failure at a test's teardown: how to fix or switch off the check.
PYTEST_HINT = (
    "if one is meant to outlive the test, stuntset_leaks.keep(obj) (the fixture); to leave a "
    "kind out, @pytest.mark.stuntset_leaks(ignore=[...]) (kinds: "
    + ", ".join(KINDS)
    + "); to switch the check off, @pytest.mark.stuntset_leaks(False)."
)


def marker_options(
    args: tuple[Any, ...], kwargs: dict[str, Any], where: str
) -> tuple[bool, tuple[str, ...]]:
    """(on, kinds to ignore) from ``@pytest.mark.stuntset_leaks(on=True, *, ignore=())``."""
    options = dict(kwargs)
    on = options.pop("on", args[0] if args else True)
    ignore = options.pop("ignore", ())
    if isinstance(ignore, str):
        ignore = (ignore,)
    if len(args) > 1 or options or not isinstance(on, bool):
        raise UsageError(
            f"{where}: stuntset_leaks takes `True`/`False` and `ignore=[kinds]` (kinds: "
            f"{', '.join(KINDS)}); got args {list(args)} and options {sorted(kwargs)}"
        )
    unknown = sorted(set(ignore) - set(KINDS))
    if unknown:
        raise UsageError(
            f"{where}: stuntset_leaks(ignore=...): unknown kind(s) {unknown}; the kinds are {list(KINDS)}"
        )
    return on, tuple(ignore)


def pytest_temp_roots(basetemp: str | os.PathLike[str] | None) -> tuple[str, ...]:
    """Directories pytest itself makes in the temporary directory (``pytest-of-<user>``, or
    ``--basetemp``): ``tmp_path`` lives there and is pytest's to clean up."""
    import getpass

    try:
        user = getpass.getuser()
    except (ImportError, KeyError, OSError):  # pragma: no cover - as pytest does
        user = "unknown"
    root = os.environ.get("PYTEST_DEBUG_TEMPROOT") or tempfile.gettempdir()
    roots = [os.path.join(root, f"pytest-of-{user}")]
    if basetemp is not None:
        roots.append(os.fspath(basetemp))
    return tuple(roots)


def at_teardown(
    where: str, *, ignore: Iterable[str], ignore_paths: Iterable[str], failed: Callable[[], bool]
) -> Iterator[LeakSnapshot]:
    """The plugin's check, as a generator fixture body: snapshot now (after the wider-scoped
    fixtures and before the test's own), check when resumed (after the test's own fixtures
    were torn down), unless ``failed()`` (the test's own failure is the one to read)."""
    __tracebackhide__ = True
    snapshot = LeakSnapshot.take(ignore=ignore, ignore_paths=ignore_paths, where=where)
    try:
        yield snapshot
    finally:
        if failed():
            snapshot.close()
        else:
            snapshot.check(hint=PYTEST_HINT)


def noting_tasks(test: Callable[..., Any], snapshot: LeakSnapshot) -> Callable[..., Any]:
    """``test`` (a coroutine function) wrapped so that, on its loop and before the loop ends,
    the tasks it left pending are noted in ``snapshot`` and the loop finishes closing the
    async generators it dropped (the test's runner, pytest-asyncio's or anyio's, cancels
    every task when it closes the loop; ``loop.shutdown_asyncgens()`` then only closes the
    generators not yet dropped, not the cleanup tasks of those already dropped)."""

    @functools.wraps(test)
    async def run(**kwargs: Any) -> Any:
        before = snapshot.start_tasks()
        try:
            result = await test(**kwargs)
        except BaseException:
            snapshot._stop_destroyed()  # the test's own failure is the one to read
            raise
        await snapshot.note_tasks(before)
        await snapshot.settle(before)  # not until_closed: its fixtures may still hold things
        return result

    return run
