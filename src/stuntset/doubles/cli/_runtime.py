"""The start-up-lean runtime shared by the fake CLI executables (``claude``, ``codex``).

This module runs inside the fake process, which the installed launcher starts as
``<absolute python> -IS``: no ``site``, no environment, nothing but the standard library's
path. Start-up time is a budget (DESIGN.md), so this module and the program modules it
loads import only interpreter built-ins that cost (next to) nothing: ``posix`` (not
``os``), ``_json`` (not ``json``, which pulls in ``re`` and costs ~8 ms), ``_signal``
(not ``signal``, which pulls in ``enum``), ``marshal``, ``select`` and ``time``. No
``typing`` either: annotations are never evaluated here, and types for the checker come in
under a module-level ``TYPE_CHECKING = False``.

What it provides to a program module (``_process.run``…): JSON in and out, a stdin line
reader that can wait with a deadline, the per-invocation journal the installing test reads
back, the double's shared state file (turn use counts, sessions; locked, so concurrent
invocations of one double stay consistent), seeded ids, and the process knobs (slow start,
ignoring SIGTERM for a while).
"""

from __future__ import annotations

import _json
import _signal  # type: ignore[import-not-found]
import marshal
import posix
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = [
    "EOF",
    "Journal",
    "Lines",
    "Runtime",
    "SharedState",
    "dumps",
    "loads",
    "main",
    "no_turn_message",
]

# --- JSON without the json package ---------------------------------------------------------


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _number(digits: str) -> int | float:
    return int(digits) if len(digits) <= 4300 else float(digits)


class _DecodeContext:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    #: a number with more digits than Python's int() takes (4,300) reads as a float, as in
    #: JSON.parse: the line is not a parse error
    parse_int = staticmethod(_number)
    parse_constant = staticmethod(_no_constant)


_scan = _json.make_scanner(_DecodeContext())  # type: ignore[arg-type]
_WHITESPACE = " \t\n\r"


def loads(text: str) -> Any:
    """Parse one JSON document (``ValueError`` naming the column if it does not parse)."""
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as stop:
        raise ValueError(f"Expecting value: column {stop.value + 1}") from None
    except RecursionError:  # arrays or objects nested thousands deep
        raise ValueError("nested too deep") from None
    except SystemError:
        # The C scanner reports errors inside strings with json.decoder.JSONDecodeError, but
        # only finds it already imported (3.11): import it (only bad input pays) and retry.
        if "json.decoder" in sys.modules:
            raise
        import json.decoder  # noqa: F401

        return loads(text)
    if text[end:].strip(_WHITESPACE):
        raise ValueError(f"Extra data: column {end + 1}")
    return value


def _unserializable(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


_encode = _json.make_encoder(
    None, _unserializable, _json.encode_basestring, None, ":", ",", False, False, True
)


def dumps(value: Any) -> str:
    """Compact JSON, non-ASCII kept (as the real CLIs write it)."""
    return "".join(_encode(value, 0))


def utf8(text: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate (Python reads one from ``"\\ud800"`` in JSON, or
    from a file name that is not UTF-8) becomes its JSON escape ``\\ud800``, as the real CLIs'
    JSON.stringify writes it, instead of failing the write."""
    return text.encode("utf-8", "backslashreplace")


# --- stdin ----------------------------------------------------------------------------------


class _Eof:
    def __repr__(self) -> str:
        return "EOF"


#: Returned by ``Lines.next`` once stdin is closed and every complete line was read.
EOF = _Eof()


class Lines:
    """Complete lines from a file descriptor, waiting with a deadline (``select``)."""

    def __init__(self, fd: int = 0, wake_fd: int = -1) -> None:
        self.fd = fd
        #: A pipe a signal handler writes to (``set_wakeup_fd``): wakes a wait early.
        self.wake_fd = wake_fd
        self._buffer = b""
        self._ready: list[bytes] = []
        self.closed = False

    def next(self, timeout: float | None) -> bytes | _Eof | None:
        """The next line (without its newline); ``None`` if ``timeout`` seconds pass first
        (``None`` waits for ever); ``EOF`` at end of input. A last line without a newline is
        returned at EOF."""
        import select

        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._ready:
            if self.closed:
                return EOF
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            fds = [self.fd] if self.wake_fd < 0 else [self.fd, self.wake_fd]
            readable, _, _ = select.select(fds, [], [], wait)
            if self.wake_fd in readable:
                posix.read(self.wake_fd, 512)
                return None
            if not readable:
                return None
            chunk = posix.read(self.fd, 65536)
            if not chunk:
                self.closed = True
                if self._buffer:
                    self._ready.append(self._buffer)
                    self._buffer = b""
                continue
            *complete, self._buffer = (self._buffer + chunk).split(b"\n")
            self._ready.extend(complete)
        return self._ready.pop(0)


# --- the journal the installing test reads back -----------------------------------------------


class Journal:
    """One JSON line per thing that happened in this invocation, appended as it happens (so a
    killed process still leaves what it did)."""

    def __init__(self, path: str | None) -> None:
        self.fd = -1
        if path is not None:
            self.fd = posix.open(path, posix.O_WRONLY | posix.O_CREAT | posix.O_APPEND, 0o644)

    def write(self, event: str, **fields: Any) -> None:
        if self.fd < 0:
            return
        fields["event"] = event
        posix.write(self.fd, utf8(dumps(fields) + "\n"))

    def write_encoded(self, event: str, key: str, encoded: str) -> None:
        """``write(event, key=value)`` for a value already encoded as ``encoded`` (the same
        line, without encoding the value a second time)."""
        if self.fd < 0:
            return
        posix.write(self.fd, utf8(f'{{"{key}":{encoded},"event":{dumps(event)}}}\n'))


#: The characters of a record key that may name its file as it is.
_SAFE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"

# --- the double's shared state --------------------------------------------------------------


class SharedState:
    """A JSON file beside the double, read and written under an exclusive lock so that
    concurrent invocations of one double agree on turn use counts and sessions (``lockf``:
    a process holds it until it closes the file).

    Written in place with one ``pwrite`` from offset 0, padded with spaces so it never gets
    shorter (JSON ignores the trailing blanks): no truncation window, and no rename (which
    costs milliseconds on overlay file systems, twice per invocation).

    What grows with every session the double has seen (claude's sessions, codex's threads)
    is kept out of it, as *records*: one small JSON file each, in a folder per kind, read
    and written inside ``update``'s change (under its lock). A spawn reads the records it
    asks for, so its time does not grow with the sessions before it."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.path = directory + "/state.json"

    def _record_path(self, kind: str, key: str) -> str:
        # a key in a file-name-safe alphabet names its file (a uuid, as the CLIs make them);
        # any other is written in hex after "=", which no safe key has: never a path, never
        # two keys for one file
        if 0 < len(key) <= 100 and not key.strip(_SAFE):
            return f"{self.directory}/{kind}/{key}.json"
        return f"{self.directory}/{kind}/={key.encode('utf-8', 'surrogatepass').hex()}.json"

    def record(self, kind: str, key: str) -> Any:
        """Record ``key`` of ``kind``, or ``None`` if there is none."""
        try:
            fd = posix.open(self._record_path(kind, key), posix.O_RDONLY)
        except OSError:  # none: not written, or a key too long to name a file
            return None
        try:
            data = b""
            while chunk := posix.read(fd, 65536):
                data += chunk
        finally:
            posix.close(fd)
        text = data.decode("utf-8")
        return loads(text) if text.strip() else None

    def write_record(self, kind: str, key: str, value: Any) -> None:
        """Write record ``key`` of ``kind`` (replacing it), as the state is written: one
        ``pwrite`` from offset 0, padded to the old length, so that a process killed at any
        point leaves the old record or the new one, never a part (a file created but not yet
        written reads as no record)."""
        path = self._record_path(kind, key)
        data = utf8(dumps(value))
        try:
            fd = posix.open(path, posix.O_RDWR | posix.O_CREAT, 0o644)
        except FileNotFoundError:  # the kind's first record: its folder
            posix.mkdir(f"{self.directory}/{kind}", 0o755)
            fd = posix.open(path, posix.O_RDWR | posix.O_CREAT, 0o644)
        try:
            posix.pwrite(fd, data.ljust(posix.fstat(fd).st_size), 0)
        finally:
            posix.close(fd)

    def records(self, kind: str) -> list[Any]:
        """Every record of ``kind`` (in no particular order)."""
        try:
            names = posix.listdir(f"{self.directory}/{kind}")
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            with open(f"{self.directory}/{kind}/{name}", "rb") as file:
                text = file.read().decode("utf-8")
            if text.strip():
                found.append(loads(text))
        return found

    def update(self, change: Callable[[dict[str, Any]], Any]) -> Any:
        """Apply ``change`` to the state atomically; returns what ``change`` returned."""
        fd = posix.open(self.path, posix.O_RDWR | posix.O_CREAT, 0o644)
        try:
            posix.lockf(fd, posix.F_LOCK, 0)  # POSIX lock (built-in: no fcntl module to load)
            old = b""
            while chunk := posix.pread(fd, 65536, len(old)):
                old += chunk
            text = old.decode("utf-8")
            state = loads(text) if text.strip() else {}
            result = change(state)
            new = utf8(dumps(state))
            posix.pwrite(fd, new.ljust(len(old)), 0)
            return result
        finally:
            posix.close(fd)  # closing releases the lock


# --- seeded ids -----------------------------------------------------------------------------

_MASK = (1 << 64) - 1


def _mix(value: int) -> int:
    """splitmix64: a good 64-bit mix in a few integer operations."""
    value = (value + 0x9E3779B97F4A7C15) & _MASK
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK
    return value ^ (value >> 31)


class Ids:
    """Deterministic ids from the script's seed and a stream name (no clock, no urandom)."""

    def __init__(self, seed: int, stream: str) -> None:
        state = _mix(seed & _MASK)
        for char in stream:
            state = _mix(state ^ ord(char))
        self._state = state

    def _next(self) -> int:
        self._state = _mix(self._state)
        return self._state

    def hex(self, digits: int) -> str:
        out = ""
        while len(out) < digits:
            out += f"{self._next():016x}"
        return out[:digits]

    def uuid(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:]}"

    def token(self, prefix: str, length: int = 24) -> str:
        alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghijkmnopqrstuvwxyz"
        out = ""
        for _ in range(length):
            out += alphabet[self._next() % len(alphabet)]
        return prefix + out


# --- the process ----------------------------------------------------------------------------

#: The longest ``Runtime.settle`` waits for a client's first write: more than the real CLIs'
#: own start-up, so a client that has not written by then would not have with them either.
START_UP = 2.0


class Runtime:
    """What a program module gets: the plan, argv, env, I/O, journal, state and knobs."""

    EOF = EOF
    loads = staticmethod(loads)
    dumps = staticmethod(dumps)
    utf8 = staticmethod(utf8)

    def __init__(self, plan: dict[str, Any], argv: list[str]) -> None:
        self.plan = plan
        self.argv = argv
        self._turns: dict[int, dict[str, Any]] = {}
        self.env = {
            key.decode("utf-8", "replace"): value.decode("utf-8", "replace")
            for key, value in posix.environ.items()
        }
        self.time_scale = float(plan.get("time_scale", 1.0))
        #: The working directory the client started the process in (what the CLI reports).
        self.cwd = posix.getcwd()
        self.state = SharedState(plan["state_dir"])
        self.journal = Journal(None)
        self.exit_code = 0
        self._sigterm_deadline: float | None = None
        self._ignore_sigterm = plan.get("ignore_sigterm")
        wake = -1
        if self._ignore_sigterm is not None:
            wake, write_end = posix.pipe()
            posix.set_blocking(write_end, False)
            _signal.set_wakeup_fd(write_end)
            _signal.signal(_signal.SIGTERM, self._on_sigterm)
        else:  # journaled, then the default action (so a client's SIGTERM shows in the journal)
            _signal.signal(_signal.SIGTERM, self._on_default_sigterm)
        self.lines = Lines(0, wake)

    def turn(self, index: int) -> dict[str, Any]:
        """Scripted turn ``index``, read from the plan's turns file alone (see
        ``write_launcher``): a spawn reads the turn it plays, not the whole script."""
        cached = self._turns.get(index)
        if cached is not None:
            return cached
        fd = posix.open(self.plan["state_dir"] + "/turns.marshal", posix.O_RDONLY)
        try:
            bounds = posix.pread(fd, 16, 8 * index)
            start = int.from_bytes(bounds[:8], "little")
            end = int.from_bytes(bounds[8:], "little")
            turn: dict[str, Any] = marshal.loads(posix.pread(fd, end - start, start))
        finally:
            posix.close(fd)
        self._turns[index] = turn
        return turn

    def ids(self, stream: str) -> Ids:
        """Seeded ids for ``stream`` (a session id, say): the same on every run."""
        return Ids(int(self.plan.get("seed", 0)), stream)

    def open_journal(self) -> None:
        name = f"{time.time_ns():020d}-{posix.getpid()}.jsonl"
        self.journal = Journal(self.plan["state_dir"] + "/invocations/" + name)
        keys = self.plan.get("journal_env", ())
        env = {key: self.env[key] for key in keys if key in self.env}
        self.journal.write("start", argv=self.argv, env=env, cwd=self.cwd, pid=posix.getpid())

    # output

    def write_bytes(self, data: bytes, fd: int = 1) -> None:
        """Write everything (a reader that went away ends the process quietly)."""
        view = memoryview(data)
        try:
            while view:
                written = posix.write(fd, view)
                view = view[written:]
        except BrokenPipeError:
            self.exit(self.exit_code or 1)

    def send(self, message: dict[str, Any]) -> None:
        """One stream-json line on stdout, journaled."""
        line = dumps(message)
        self.journal.write_encoded("stdout", "message", line)
        self.write_bytes(utf8(line + "\n"))

    def stderr(self, text: str) -> None:
        self.journal.write("stderr", text=text)
        self.write_bytes(utf8(text), fd=2)

    # time and signals

    def sleep(self, seconds: float, *, scaled: bool = True) -> None:
        """Sleep ``seconds`` (times ``time_scale`` if ``scaled``) without reading stdin."""
        import select

        end = time.monotonic() + seconds * (self.time_scale if scaled else 1.0)
        while (left := end - time.monotonic()) > 0:
            left = self.wait_timeout(left) or 0.0
            if self.lines.wake_fd >= 0:
                readable, _, _ = select.select([self.lines.wake_fd], [], [], left)
                if readable:
                    posix.read(self.lines.wake_fd, 512)
            else:
                time.sleep(left)
            self.check_sigterm()

    def _on_sigterm(self, signum: int, frame: object) -> None:
        self.journal.write("signal", signal="SIGTERM")
        if self._sigterm_deadline is None:
            self._sigterm_deadline = time.monotonic() + float(self._ignore_sigterm or 0)

    def _on_default_sigterm(self, signum: int, frame: object) -> None:
        self.journal.write("signal", signal="SIGTERM")
        _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
        posix.kill(posix.getpid(), _signal.SIGTERM)

    def check_sigterm(self) -> None:
        """After an ignored SIGTERM's grace period, die as SIGTERM would have."""
        if self._sigterm_deadline is not None and time.monotonic() >= self._sigterm_deadline:
            self.exit(128 + 15)

    def wait_timeout(self, timeout: float | None) -> float | None:
        """``timeout`` shortened so a pending SIGTERM's grace period is honoured."""
        if self._sigterm_deadline is None:
            return timeout
        left = max(0.0, self._sigterm_deadline - time.monotonic())
        return left if timeout is None else min(timeout, left)

    def next_line(self, timeout: float | None) -> bytes | _Eof | None:
        """The next stdin line, honouring an ignored SIGTERM's grace period."""
        line = self.lines.next(self.wait_timeout(timeout))
        self.check_sigterm()
        return line

    def pump(self, handle: Callable[[bytes], None], timeout: float | None) -> bool:
        """Give ``handle`` each line stdin has (waiting up to ``timeout`` for the first one);
        False at EOF. The stdin pump of every program that reads while it plays."""
        line = self.next_line(timeout)
        while line is not None:
            if isinstance(line, _Eof):
                return False
            handle(line)
            line = self.next_line(0.0)
        return True

    def settle(self) -> None:
        """Before refusing at start-up, wait until stdin has input or is closed (at most
        ``START_UP`` seconds; not on a terminal).

        The real CLIs are programs that take a few hundred milliseconds to load before they
        can refuse anything; by then a client that writes at once (claude-agent-sdk's
        ``initialize``) has written, and what it sees is its write landing, then EOF and the
        exit status (``ProcessError``). This process starts in milliseconds: exiting before
        the client's first write would turn that write into a broken pipe
        (``CLIConnectionError``), depending on which of the two processes ran first."""
        if posix.isatty(0):
            return
        import select

        try:
            select.select([0], [], [], START_UP)
        except (OSError, ValueError):  # stdin closed: nothing to wait for
            return

    def exit(self, code: int) -> None:
        self.journal.write("exit", code=code)
        posix._exit(code)


def accepts(match: dict[str, Any] | None, prompt: str, model: str, has_results: bool) -> bool:
    """Whether a turn's ``match`` accepts the request, as ``script.Match`` does (a fake CLI makes
    no retries, so ``retry_count`` matches only 0)."""
    if not match:
        return True
    contains = match.get("contains")
    wanted_model = match.get("model")
    retry_count = match.get("retry_count")
    tool_result = match.get("tool_result")
    return (
        (contains is None or contains in prompt)
        and (wanted_model is None or wanted_model == model)
        and (retry_count is None or retry_count == 0)
        and (tool_result is None or tool_result == has_results)
    )


def take_turn(
    rt: Runtime,
    prompt: str,
    model: str,
    wire: str,
    *,
    has_results: bool = False,
    session_id: str | None = None,
) -> tuple[int, str | None]:
    """The index of the first scripted turn with uses left that accepts the request (as
    ``ScriptPlayer`` chooses), counted in the double's shared state (and per session, given
    ``session_id``); or ``-1`` and an error text naming the miss (``no_turn_message``)."""
    count: int = rt.plan["turn_count"]

    def take(state: dict[str, Any]) -> tuple[int, str | None]:
        played = state.get("played", 0) + 1
        state["played"] = played
        if session_id is not None:
            turns = rt.state.record("sessions", session_id) or 0
            rt.state.write_record("sessions", session_id, turns + 1)
        used: dict[str, int] = state.setdefault("used", {})
        for index in range(state.get("first", 0), count):
            key = str(index)
            uses = used.get(key, 0)
            turn = rt.turn(index)
            if uses < turn["times"] and accepts(turn["match"], prompt, model, has_results):
                used[key] = uses + 1
                _advance(state, rt)
                return index, None
        return -1, no_turn_message(state, rt, played, prompt, model, wire)

    result: tuple[int, str | None] = rt.state.update(take)
    return result


def _advance(state: dict[str, Any], rt: Runtime) -> None:
    """Move the cursor past the turns used up (their counts go: below the cursor, every turn
    is used up), so that a conversation played in order finds its turn at once and the
    state stays small, however long the script."""
    used: dict[str, int] = state["used"]
    first: int = state.get("first", 0)
    count: int = rt.plan["turn_count"]
    while first < count and used.get(str(first), 0) >= rt.turn(first)["times"]:
        used.pop(str(first), None)
        first += 1
    state["first"] = first


def turns_left(state: dict[str, Any], times: list[int]) -> list[int]:
    """The uses left of every scripted turn, from the shared state (``take_turn`` keeps the
    counts of the turns at or past its cursor, ``first``: those before it are used up)."""
    used: dict[str, int] = state.get("used") or {}
    first: int = state.get("first", 0)
    return [
        0 if index < first else times[index] - used.get(str(index), 0)
        for index in range(len(times))
    ]


def give_back(state: dict[str, Any], rt: Runtime, index: int) -> None:
    """Turn ``index`` was taken but not played: one use more."""
    used: dict[str, int] = state.setdefault("used", {})
    first: int = state.get("first", 0)
    for earlier in range(index, first):  # below the cursor: used up, written out again
        used[str(earlier)] = rt.turn(earlier)["times"]
    state["first"] = min(first, index)
    used[str(index)] = used.get(str(index), 0) - 1


def no_turn_message(
    state: dict[str, Any],
    rt: Runtime,
    played: int,
    prompt: str,
    model: str,
    wire: str,
) -> str:
    """Why request ``played`` got no scripted turn (every turn used, or none left matches),
    worded as ``ScriptPlayer`` words it; kept in ``state["exhausted"]`` for the test's side."""
    plan = rt.plan
    count: int = plan["turn_count"]
    left = turns_left(state, [rt.turn(index)["times"] for index in range(count)])
    remaining = [f"  turn {i}: {rt.turn(i)['describe']}" for i in range(count) if left[i]]
    shown = prompt if len(prompt) <= 80 else prompt[:77] + "..."
    head = (
        f"script {plan['script']!r} has no turn for request #{played} "
        f"(input {shown!r}, model {model!r}, wire {wire!r})"
    )
    if not remaining:
        message = (
            f"{head}: all {count} turns were used. The code under test made more "
            f"requests than scripted: add a turn, or use times=N for repeats."
        )
    else:
        message = head + ": no remaining turn matches it. Remaining:\n" + "\n".join(remaining)
    state.setdefault("exhausted", []).append(message)
    return message


def load_plan(plan_path: str) -> dict[str, Any]:
    """The plan the installer wrote; a missing or corrupt plan file (the double's state
    directory removed or edited while its executable lives on) is one line on stderr naming
    the file, and exit 2."""
    try:
        with open(plan_path, "rb") as file:
            plan = marshal.loads(file.read())  # marshal.load(file) reads object by object
        problem = None if isinstance(plan, dict) and "state_dir" in plan else "not a plan"
    except FileNotFoundError:
        problem = "no such file (was the double's directory removed? install it again)"
    except OSError as error:
        problem = error.strerror or type(error).__name__
    except (EOFError, ValueError, TypeError):
        problem = "corrupt (not a plan written by stuntset.install_cli)"
    if problem is not None:
        sys.stderr.write(f"stuntset fake CLI: plan file {plan_path}: {problem}\n")
        sys.stderr.flush()
        posix._exit(2)
    return plan  # type: ignore[no-any-return]


def main(plan_path: str, program: str) -> None:
    """Entry point of an installed launcher: load the plan and run ``program``'s ``run``."""
    plan = load_plan(plan_path)
    runtime = Runtime(plan, sys.argv[1:])
    try:
        __import__(program)
        sys.modules[program].run(runtime)
    except KeyboardInterrupt:
        runtime.journal.write("signal", signal="SIGINT")
        runtime.exit(130)
    except Exception as error:
        # A bug in the double, never the client's doing: one line on stderr naming it, the
        # traceback in the journal (InstalledCli.invocations[i].events), exit 70 (EX_SOFTWARE).
        import traceback

        runtime.journal.write("internal_error", traceback=traceback.format_exc())
        runtime.stderr(f"stuntset fake CLI internal error: {type(error).__name__}: {error}\n")
        runtime.exit(70)
    runtime.exit(runtime.exit_code)
