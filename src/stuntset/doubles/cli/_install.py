"""Installing a fake CLI: an executable file, its plan, and what it journals — for any program.

Shared by every CLI double (``claude`` now, ``codex`` next). A ``CliProgram`` says how to
compile a script into its plan and which runtime module plays it; ``install`` does the rest:

* checks the script against the program's wire (``ScriptError`` now, not at random later);
* writes the plan (``marshal``: built-in, the fastest thing to load) beside the double;
* writes the launcher, a few lines of Python whose shebang is the absolute path of this
  interpreter with ``-IS`` (no ``site``, no environment: a version-manager shim or
  ``env`` lookup costs ~90 ms a spawn). It maps the ``stuntset`` package path in without
  running ``stuntset/__init__`` (so the process imports only the runtime), then plays;
* writes to a temporary file in ``bin_dir``, closes it, makes it executable and renames it
  into place: no file is ever open for writing while another thread may fork and exec it
  (ETXTBSY), and parallel installs under pytest-xdist never see a half-written file.

Each invocation appends to its own journal file (``<state>/invocations/*.jsonl``) as it
runs; ``InstalledCli.invocations`` reads them back.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import marshal
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Self

from stuntset.errors import ScriptError, ScriptExhausted, UnusedTurns
from stuntset.script import Script, SpawnFailure, Turn, Wire

__all__ = [
    "CliProgram",
    "InstalledCli",
    "InstalledExecutable",
    "Invocation",
    "install",
    "prepare_state",
    "write_launcher",
]

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # …/stuntset
#: Longest shebang line Linux honours before 5.1 (and macOS keeps near): longer ones need the
#: ``/bin/sh`` fallback.
_MAX_SHEBANG = 127


class CliProgram(Protocol):
    """What ``install`` needs to know about one fake CLI."""

    #: The executable's name (``claude``).
    name: str
    #: The runtime module that plays the plan in the fake process (built-ins only).
    module: str
    #: Modules to import once here so their bytecode is cached before the first spawn.
    warm: tuple[str, ...]
    #: What the program can render; the script is checked against it at install time.
    wire: Wire
    #: Environment variables each invocation's journal records.
    journal_env: tuple[str, ...]

    def compile(self, script: Script) -> dict[str, Any]:
        """The program-specific part of the plan (marshal-able data only)."""
        ...


@dataclass(frozen=True)
class Invocation:
    """One run of the fake executable, as its journal recorded it."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    pid: int
    #: Every stdin message, parsed (a line that was not JSON is ``{"raw": text}``).
    stdin: list[dict[str, Any]]
    #: Every stream-json message written to stdout.
    stdout: list[dict[str, Any]]
    stderr: str
    #: ``None`` if the process was killed before it could record one.
    exit_code: int | None
    #: The whole journal, in order.
    events: list[dict[str, Any]] = field(repr=False)

    @property
    def control_requests(self) -> list[dict[str, Any]]:
        """Control requests the client sent (``initialize``, ``interrupt``…)."""
        return [m for m in self.stdin if m.get("type") == "control_request"]

    @property
    def control_responses(self) -> list[dict[str, Any]]:
        """Control responses the client sent (answers to ``can_use_tool``, hooks…)."""
        return [m for m in self.stdin if m.get("type") == "control_response"]

    @property
    def user_messages(self) -> list[dict[str, Any]]:
        return [m for m in self.stdin if m.get("type") == "user"]

    @classmethod
    def from_journal(cls, path: Path) -> Invocation:
        events = []
        for line in path.read_text("utf-8").splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:  # the last line of a process killed mid-write
                continue
        start: dict[str, Any] = next((e for e in events if e["event"] == "start"), {})
        exit_event = next((e for e in reversed(events) if e["event"] == "exit"), None)
        return cls(
            argv=list(start.get("argv", [])),
            env=dict(start.get("env", {})),
            cwd=str(start.get("cwd", "")),
            pid=int(start.get("pid", 0)),
            stdin=[
                e["message"] if "message" in e else {"raw": e.get("raw", "")}
                for e in events
                if e["event"] == "stdin"
            ],
            stdout=[e["message"] for e in events if e["event"] == "stdout"],
            stderr="".join(e["text"] for e in events if e["event"] == "stderr"),
            exit_code=None if exit_event is None else int(exit_event["code"]),
            events=events,
        )


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[-1].split()[0] not in (b"Z", b"X")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class InstalledExecutable:
    """A fake executable installed in ``bin_dir``: run ``path``, or put ``env()`` on a client."""

    def __init__(self, name: str, *, path: Path, state_dir: Path, owns: Path | None) -> None:
        self.name = name
        #: The executable (absent when the script's first turn is a spawn failure).
        self.path = path
        self.bin_dir = path.parent
        self.state_dir = state_dir
        self._owns = owns

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} at {str(self.path)!r}>"

    def __fspath__(self) -> str:
        return str(self.path)

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with ``bin_dir`` first on PATH."""
        env = dict(os.environ if base is None else base)
        rest = env.get("PATH", os.defpath)
        env["PATH"] = str(self.bin_dir) + (os.pathsep + rest if rest else "")
        return env

    @property
    def invocations(self) -> list[Invocation]:
        """Every invocation so far, in start order (one still running has no ``exit_code``
        yet: ``wait_ended`` waits for them)."""
        journals = sorted((self.state_dir / "invocations").glob("*.jsonl"))
        return [Invocation.from_journal(path) for path in journals]

    def wait_ended(self, timeout: float = 10.0) -> list[Invocation]:
        """``invocations`` once every one has ended: its exit recorded, or its process gone
        (killed before it could record one: ``exit_code`` stays ``None``). A client that stops
        reading at a bad line (the CLI itself broke) returns before the process has exited,
        so an exit code read straight after it may not be there yet. ``WaitTimeout`` naming
        the processes still running after ``timeout`` seconds."""
        from stuntset.waiting import wait_for

        def running() -> list[Invocation]:
            # a journal without its start event yet (pid 0) belongs to a process starting
            return [
                i for i in self.invocations if i.exit_code is None and (i.pid == 0 or _alive(i.pid))
            ]

        def still() -> str:
            return "; ".join(f"pid {i.pid}: {' '.join(i.argv)}" for i in running())

        wait_for(
            lambda: not running(),
            timeout=timeout,
            message=lambda: f"{self.name}: invocations still running: {still()}",
        )
        return self.invocations

    def _state(self) -> dict[str, Any]:
        try:
            data = json.loads((self.state_dir / "state.json").read_text("utf-8"))
        except FileNotFoundError:
            return {}
        return data if isinstance(data, dict) else {}

    def uninstall(self) -> None:
        """Remove the executable and its state (and ``bin_dir`` if install made it)."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        shutil.rmtree(self.state_dir, ignore_errors=True)
        if self._owns is not None:
            shutil.rmtree(self._owns, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.uninstall()


class InstalledCli(InstalledExecutable):
    """A fake CLI playing a script."""

    def __init__(
        self,
        program: CliProgram,
        script: Script,
        *,
        path: Path,
        state_dir: Path,
        owns: Path | None,
        spawnable: bool,
    ) -> None:
        super().__init__(program.name, path=path, state_dir=state_dir, owns=owns)
        self.program = program
        self.script = script
        self.spawnable = spawnable

    def unused_turns(self) -> list[tuple[int, Turn]]:
        """Scripted turns with uses left (a spawn failure counts as used once installed)."""
        # the fake's take_turn keeps the counts of the turns at or past its cursor ("first");
        # those before it are used up (see _runtime.turns_left)
        state = self._state()
        used, first = state.get("used") or {}, state.get("first", 0)
        left = [
            0 if index < first else turn.times - used.get(str(index), 0)
            for index, turn in enumerate(self.script.turns)
        ]
        return [
            (index, turn)
            for index, turn in enumerate(self.script.turns)
            if left[index] and not _is_spawn_failure(turn)
        ]

    def assert_not_exhausted(self) -> None:
        """``ScriptExhausted`` if an invocation asked for a turn the script did not have."""
        __tracebackhide__ = True
        exhausted = self._state().get("exhausted") or []
        if exhausted:
            raise ScriptExhausted(f"fake {self.name}: {exhausted[0]}")

    def assert_all_used(self) -> None:
        """``ScriptExhausted`` if an invocation asked for a turn the script did not have;
        ``UnusedTurns`` if scripted turns were never requested."""
        __tracebackhide__ = True
        self.assert_not_exhausted()
        unused = self.unused_turns()
        if unused:
            lines = "\n".join(f"  turn {i}: {t.describe()}" for i, t in unused)
            raise UnusedTurns(
                f"fake {self.name} (script {self.script.label()!r}): {len(unused)} scripted "
                f"turn(s) were never requested by the code under test:\n{lines}\n"
                f"If that is expected, pass allow_unused_turns=True (marker or fixture option)."
            )


def _is_spawn_failure(turn: Turn) -> bool:
    return bool(turn.steps) and isinstance(turn.steps[0], SpawnFailure)


def _check_shippable(program: CliProgram, script: Script) -> None:
    if script.function is not None or any(t.predicate is not None for t in script.turns):
        raise ScriptError(
            f"the fake {program.name} runs in its own process, so its script cannot hold "
            f"Python callables (a function or a predicate): use Match data "
            f"(contains=, model=, tool_result=) instead",
            source=script.source,
            wire=program.wire.name,
        )
    for index, turn in enumerate(script.turns):
        if index and _is_spawn_failure(turn):
            raise ScriptError(
                f"spawn_failure can only be the script's first turn on the fake "
                f"{program.name}: a missing binary is missing from the first spawn on",
                source=script.source,
                turn=index,
                step=0,
                wire=program.wire.name,
            )


def _write_atomically(target: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to a temporary file beside ``target``, close it, chmod, rename."""
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


#: The launcher's coverage hook, for stuntset's own test suite (tests/conftest.py sets the
#: variables when the run measures coverage). Without them it costs one lookup in the
#: environment of the already loaded ``posix`` module: a user's spawn imports nothing more.
#: ``-IS`` ignores ``site`` (and coverage's ``.pth`` hook), hence the explicit path; the fake
#: ends with ``posix._exit`` (no ``atexit``) or by signalling itself (a replayed run a signal
#: ended), hence the wrappers that save the data first. It lives in the state directory
#: (``MEASURE_FILE``), not in the launcher: a launcher is a script, compiled on every spawn, and
#: compiling the hook cost a user's spawn about 2M instructions (6% of one) for nothing.
MEASURE_FILE = "measure.py"
_MEASURE = """\
sys.path.append(posix.environ[b"STUNTSET_COVERAGE_PATH"].decode())
import coverage
_config = posix.environ[b"STUNTSET_COVERAGE_PROCESS_START"].decode()
_partial = posix.environ.get(b"STUNTSET_COVERAGE_PARTIAL")
if _partial is None:
    _measure = coverage.Coverage(config_file=_config, data_suffix=True)
else:
    # saved into a folder of its own, then renamed beside the run's data: a process killed
    # while saving leaves its half-written file there, never where combine reads
    _partial = _partial.decode() + "/" + str(posix.getpid())
    posix.mkdir(_partial)
    _measure = coverage.Coverage(
        config_file=_config, data_file=_partial + "/.coverage", data_suffix=True
    )
_measure.start()
def _save(_measure=_measure, _partial=_partial, _saved=[]):
    # once: a SIGTERM handled while saving at exit kills the process through the
    # wrapped posix.kill below, which would save a second time into a closed database
    if _saved:
        return
    _saved.append(True)
    _measure.stop()
    _measure.save()
    if _partial is not None:
        _final = posix.environ[b"STUNTSET_COVERAGE_DATA"].decode()
        for _name in posix.listdir(_partial):
            posix.rename(_partial + "/" + _name, _final + _name[len(".coverage"):])
        posix.rmdir(_partial)
def _save_then_exit(code, _exit=posix._exit, _save=_save):
    _save()
    _exit(code)
def _save_then_kill(pid, signal, _kill=posix.kill, _save=_save):
    if pid == posix.getpid():
        _save()
    _kill(pid, signal)
posix._exit = _save_then_exit
posix.kill = _save_then_kill
"""


def _packages(modules: tuple[str, ...]) -> list[tuple[str, str]]:
    """Every package above ``modules``, parents first, with its directory: the launcher maps
    them in as bare modules, so no package ``__init__`` (test-process code) runs in the fake
    process."""
    names: list[str] = []
    for module in modules:
        parts = module.split(".")
        for depth in range(1, len(parts)):
            package = ".".join(parts[:depth])
            if package not in names:
                names.append(package)
    return [(package, str(_PACKAGE_ROOT.joinpath(*package.split(".")[1:]))) for package in names]


def launcher(plan_path: Path, module: str, name: str) -> str:
    """The executable's text: absolute-interpreter shebang, package mapping, main."""
    interpreter = sys.executable
    measure = str(plan_path.with_name(MEASURE_FILE))
    packages = _packages(("stuntset.doubles.cli._runtime", module))
    shebang = f"#!{interpreter} -IS"
    if len(shebang) > _MAX_SHEBANG or any(c.isspace() for c in interpreter):
        # A shebang that long (or with spaces) does not work: start through sh instead.
        shebang = f'#!/bin/sh\n"exec" "{interpreter}" "-IS" "$0" "$@"'
    return (
        f"{shebang}\n"
        f"# stuntset fake {name!r}: written by stuntset.install_cli; do not edit.\n"
        f"import sys\n"
        f"for _name, _path in {packages!r}:\n"
        f"    _module = type(sys)(_name)\n"
        f"    _module.__path__ = [_path]\n"
        f"    sys.modules[_name] = _module\n"
        f"import posix\n"
        f'if b"STUNTSET_COVERAGE_PROCESS_START" in posix.environ:\n'
        f"    with open({measure!r}) as _file:\n"
        f"        exec(compile(_file.read(), {measure!r}, 'exec'))\n"
        f"from stuntset.doubles.cli._runtime import main\n"
        f"main({str(plan_path)!r}, {module!r})\n"
    )


def prepare_state(
    name: str, bin_dir: str | os.PathLike[str] | None
) -> tuple[Path, Path | None, Path]:
    """The directory to install ``name`` in (a temporary one, owned, without ``bin_dir``)
    and its fresh state directory: ``(directory, owned or None, state_dir)``."""
    owns = None
    if bin_dir is None:
        owns = Path(tempfile.mkdtemp(prefix=f"stuntset-{name}-"))
        directory = owns
    else:
        directory = Path(bin_dir).resolve()
        directory.mkdir(parents=True, exist_ok=True)
    state_dir = directory / f".{name}.stuntset"
    # An earlier install's process may still be writing its journal into the old state
    # directory, so removing it in place races (a file created mid-rmtree leaves it behind,
    # and the fresh one cannot be made): move it aside in one rename first. A process cannot
    # create a directory by writing a file, so nothing recreates ``state_dir`` meanwhile.
    aside = Path(tempfile.mkdtemp(prefix=f".{name}.stuntset-old-", dir=directory))
    with contextlib.suppress(FileNotFoundError):
        state_dir.replace(aside)  # onto the empty directory: atomic
    shutil.rmtree(aside, ignore_errors=True)
    (state_dir / "invocations").mkdir(parents=True)
    return directory, owns, state_dir


def write_launcher(path: Path, state_dir: Path, module: str, plan: dict[str, Any]) -> None:
    """Write ``plan`` (with its ``state_dir``) and the executable at ``path`` that plays it
    with the runtime module ``module``.

    A plan's ``turns`` are written apart, so that a spawn's time does not grow with the
    script: the plan keeps their number (``turn_count``), and ``turns.marshal`` holds every
    turn marshalled on its own, preceded by their offsets (8 bytes each, ``turn_count + 1``
    of them): a spawn reads the turns it looks at (``Runtime.turn``), from the first with
    uses left."""
    head = {**plan, "state_dir": str(state_dir)}
    turns = head.pop("turns", None)
    if turns is not None:
        blobs = [marshal.dumps(turn) for turn in turns]
        offsets = [8 * (len(blobs) + 1)]
        for blob in blobs:
            offsets.append(offsets[-1] + len(blob))
        index = b"".join(offset.to_bytes(8, "little") for offset in offsets)
        _write_atomically(state_dir / "turns.marshal", index + b"".join(blobs), 0o644)
        head["turn_count"] = len(turns)
    plan_path = state_dir / "plan.marshal"
    _write_atomically(plan_path, marshal.dumps(head), 0o644)
    _write_atomically(state_dir / MEASURE_FILE, _MEASURE.encode(), 0o644)
    _write_atomically(path, launcher(plan_path, module, path.name).encode(), 0o755)


def install(
    program: CliProgram,
    script: Script,
    *,
    bin_dir: str | os.PathLike[str] | None = None,
    time_scale: float = 1.0,
    startup_delay: float = 0.0,
    ignore_sigterm: float | None = None,
) -> InstalledCli:
    """Install ``program`` as an executable in ``bin_dir`` playing ``script``.

    ``bin_dir`` should be a directory the test owns (``tmp_path``); without one a temporary
    directory is made, removed by ``uninstall()`` / leaving the ``with`` block.
    ``time_scale`` multiplies every scripted delay (0 makes them free); ``startup_delay``
    (seconds) is a slow start before the process reads anything; ``ignore_sigterm`` (seconds)
    makes it survive SIGTERM that long before dying as SIGTERM would (exit 143).
    """
    program.wire.check(script)
    _check_shippable(program, script)
    if time_scale < 0 or startup_delay < 0 or (ignore_sigterm is not None and ignore_sigterm < 0):
        raise ScriptError(
            "time_scale, startup_delay and ignore_sigterm must not be negative", wire=program.name
        )
    directory, owns, state_dir = prepare_state(program.name, bin_dir)
    plan: dict[str, Any] = {
        "seed": script.seed,
        "script": script.label(),
        "time_scale": float(time_scale),
        "startup_delay": float(startup_delay),
        "ignore_sigterm": None if ignore_sigterm is None else float(ignore_sigterm),
        "journal_env": list(program.journal_env),
    }
    plan.update(program.compile(script))
    for module in program.warm:
        importlib.import_module(module)
    path = directory / program.name
    spawnable = not (script.turns and _is_spawn_failure(script.turns[0]))
    if spawnable:
        write_launcher(path, state_dir, program.module, plan)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return InstalledCli(
        program, script, path=path, state_dir=state_dir, owns=owns, spawnable=spawnable
    )


@contextlib.contextmanager
def installed(program: CliProgram, script: Script, **options: Any) -> Iterator[InstalledCli]:
    """``install`` for the length of a ``with`` block."""
    cli = install(program, script, **options)
    try:
        yield cli
    finally:
        cli.uninstall()
