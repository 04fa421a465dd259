"""A user's package tested as installed: built into a wheel, installed into a fresh venv.

Plugins (a pytest plugin, a console script, an entry-point-registered provider) often break
only once installed: a missing file in the wheel, an entry point naming a function that moved,
an import that worked only because the source tree was on ``sys.path``.
``install_package(project_dir)`` builds the project's wheel, installs it with its declared
dependencies only into a new virtual environment, and returns an ``InstalledPackage`` whose
``run`` starts commands from a directory outside the source tree, so nothing is imported from
there.

uv is used when given or found (``find_uv``: ``uv=``, ``$STUNTSET_UV``, ``$UV`` (which ``uv
run`` sets), ``uv`` on ``PATH``, beside the interpreter, the ``uv`` Python package, then the
installer's places ``~/.local/bin`` and ``~/.cargo/bin``): ``uv build --wheel``, ``uv venv``,
``uv pip install``. Without it: ``python -m pip wheel --no-deps``, ``python -m venv`` and pip
inside the venv; an interpreter without pip (every venv uv makes) is then named as the cause. Either way the caller's package cache
is reused (``cache_dir=`` passes one explicitly) and ``find_links=`` / ``index_url=`` point the
install somewhere else (offline: a wheel folder). Failures raise ``InstalledPackageError``
with the tail of the tool's output.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from stuntset.errors import InstalledPackageError, UsageError

__all__ = ["InstalledPackage", "InstalledPackages", "find_uv", "install_package"]

#: how much of a failed tool's output an error shows
_TAIL_LINES = 30
#: variables that would make the venv's Python see something other than the venv
_DROPPED_ENV = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "CONDA_PREFIX")

_ENTRY_POINTS_PROBE = (
    "import importlib.metadata as m, json, sys\n"
    "dist = m.distribution(sys.argv[1])\n"
    "print(json.dumps({e.name: e.value for e in dist.entry_points if e.group == sys.argv[2]}))"
)
_IMPORT_PROBE = "import importlib, sys\nprint(importlib.import_module(sys.argv[1]).__file__)"


def find_uv(
    uv: str | os.PathLike[str] | None = None, *, python: str | os.PathLike[str] | None = None
) -> str | None:
    """The uv to use: ``uv`` if given; else ``$STUNTSET_UV``; ``$UV`` (``uv run`` sets it
    for what it starts); ``uv`` on ``PATH``; beside ``python`` and beside this interpreter
    (a venv with uv installed); the ``uv`` Python package's binary; ``~/.local/bin/uv`` and
    ``~/.cargo/bin/uv`` (where uv's installer puts it). A venv made by uv has no pip, so
    without this search ``installed_package`` failed there whenever uv was not on ``PATH``."""
    if uv is not None:
        return os.fspath(uv)
    for variable in ("STUNTSET_UV", "UV"):
        named = os.environ.get(variable)
        if named and os.access(named, os.X_OK):
            return named
    on_path = shutil.which("uv")
    if on_path is not None:
        return on_path
    places = [Path(p).parent / "uv" for p in (python, sys.executable) if p is not None]
    packaged = _uv_package_binary()
    if packaged is not None:
        places.append(packaged)
    home = Path(os.environ.get("HOME") or "~").expanduser()
    places += [home / ".local" / "bin" / "uv", home / ".cargo" / "bin" / "uv"]
    return next((str(p) for p in places if p.is_file() and os.access(p, os.X_OK)), None)


def _uv_package_binary() -> Path | None:
    """The binary of the ``uv`` Python package (``pip install uv``), if it is importable."""
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    try:
        return Path(find_uv_bin())
    except (OSError, FileNotFoundError):
        return None


def _tail(text: str) -> str:
    lines = text.strip().splitlines()
    return "\n".join(lines[-_TAIL_LINES:]) or "(no output)"


def _clean_env(venv: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _step(what: str, argv: Sequence[str], *, cwd: Path, env: dict[str, str]) -> None:
    try:
        done = subprocess.run(
            list(argv), cwd=cwd, env=env, capture_output=True, text=True, check=False
        )
    except OSError as exc:
        raise InstalledPackageError(f"{what}: cannot run {argv[0]!r}: {exc}") from exc
    if done.returncode != 0:
        output = done.stdout + done.stderr
        hint = ""
        if argv[1:3] == ["-m", "pip"] and "No module named pip" in output:
            hint = (
                f"\n{argv[0]} has no pip (a venv made by uv has none) and no uv was found: "
                f"install uv, or name it with uv= or $STUNTSET_UV"
            )
        raise InstalledPackageError(
            f"{what} failed (exit {done.returncode}): {' '.join(argv)}{hint}\n"
            f"--- last lines of its output ---\n{_tail(output)}"
        )


@dataclass(frozen=True)
class InstalledPackage:
    """A project's wheel installed into its own venv (see ``install_package``)."""

    project: Path
    name: str
    wheel: Path
    venv: Path
    #: where commands run: outside the source tree, so the source cannot shadow the install
    workdir: Path
    #: wall time of the wheel build and of the venv + install, in seconds
    timings: dict[str, float] = field(default_factory=dict, compare=False)

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def bin(self, name: str) -> Path:
        """The venv's executable ``name`` (a console script the package installed)."""
        path = self.venv / "bin" / name
        if not path.exists():
            present = sorted(p.name for p in (self.venv / "bin").iterdir())
            raise UsageError(
                f"{self.name}: no executable {name!r} in {self.venv / 'bin'} "
                f"(is it declared under [project.scripts]?); present: {present}"
            )
        return path

    def env(self) -> dict[str, str]:
        """The environment ``run`` uses: this venv first on ``PATH``, no ``PYTHONPATH``."""
        return _clean_env(self.venv)

    def run(
        self,
        *args: str | os.PathLike[str],
        cwd: Path | None = None,
        input: str | None = None,
        timeout: float | None = 120.0,
    ) -> subprocess.CompletedProcess[str]:
        """Run a command in the venv (``args[0]`` found on its ``PATH`` first, e.g. a console
        script or ``python``), from ``workdir`` unless ``cwd`` is given, stdin ``input`` (or
        empty); never raises on a
        non-zero exit (read ``returncode`` and ``stderr``); ``InstalledPackageError`` if it
        outlives ``timeout``."""
        if not args:
            raise UsageError(f"{self.name}: run() needs a command")
        argv = [os.fspath(a) for a in args]
        found = shutil.which(argv[0], path=str(self.venv / "bin"))
        if found is not None:
            argv[0] = found
        try:
            return subprocess.run(
                argv,
                cwd=cwd or self.workdir,
                env=self.env(),
                input=input,
                stdin=subprocess.DEVNULL if input is None else None,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise InstalledPackageError(
                f"{self.name}: {' '.join(argv)} still ran after {timeout} s (killed); "
                f"pass run(..., timeout=) for a slower command"
            ) from exc

    def _probe(self, what: str, *argv: str) -> str:
        done = self.run("python", "-c", *argv)
        if done.returncode != 0:
            raise InstalledPackageError(
                f"{self.name}: {what} failed in {self.venv} (exit {done.returncode}):\n"
                f"{_tail(done.stderr + done.stdout)}"
            )
        return done.stdout.strip()

    def entry_points(self, group: str) -> dict[str, str]:
        """The installed distribution's entry points in ``group`` (name → ``module:attr``),
        read from its metadata inside the venv."""
        what = f"reading entry points of group {group!r}"
        out = self._probe(what, _ENTRY_POINTS_PROBE, self.name, group)
        return dict(json.loads(out))

    def import_check(self, module: str) -> Path:
        """Import ``module`` in the venv (from ``workdir``) and return its ``__file__``;
        ``InstalledPackageError`` if the import fails or the file is not inside the venv."""
        out = self._probe(f"import {module}", _IMPORT_PROBE, module)
        path = Path(out)
        if not path.resolve().is_relative_to(self.venv.resolve()):
            raise InstalledPackageError(
                f"{self.name}: {module} was imported from {path}, not from the venv "
                f"{self.venv} (the source tree or PYTHONPATH shadows the install)"
            )
        return path


def _project_name(project: Path) -> str:
    pyproject = project / "pyproject.toml"
    if not pyproject.is_file():
        raise UsageError(
            f"{project}: no pyproject.toml; install_package needs the root of a Python "
            f"project (the folder holding pyproject.toml with a [project] table)"
        )
    try:
        name = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"]
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise UsageError(f"{pyproject}: cannot read [project] name: {exc!r}") from exc
    return str(name)


def install_package(
    project_dir: str | os.PathLike[str],
    *,
    extras: Sequence[str] = (),
    requirements: Sequence[str] = (),
    python: str | os.PathLike[str] = sys.executable,
    uv: str | os.PathLike[str] | None = None,
    find_links: Sequence[str | os.PathLike[str]] = (),
    index_url: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    dest: str | os.PathLike[str] | None = None,
) -> InstalledPackage:
    """Build ``project_dir`` into a wheel and install it, with its ``extras`` and declared
    dependencies only (plus ``requirements``: what the user brings, e.g. ``"pytest"``), into
    a new venv for ``python`` under ``dest`` (a new temporary directory if not given; the
    caller removes it)."""
    project = Path(project_dir).resolve()
    name = _project_name(project)
    base = Path(dest) if dest is not None else Path(tempfile.mkdtemp(prefix="stuntset-pkg-"))
    base.mkdir(parents=True, exist_ok=True)
    dist, venv, workdir = base / "dist", base / "venv", base / "run"
    workdir.mkdir(exist_ok=True)
    uv_bin = find_uv(uv, python=python)
    env = _clean_env()
    cache = [] if cache_dir is None else ["--cache-dir", os.fspath(cache_dir)]
    links = [arg for link in find_links for arg in ("--find-links", os.fspath(link))]
    index = [] if index_url is None else ["--index-url", index_url]
    timings: dict[str, float] = {}

    started = time.perf_counter()
    if uv_bin is not None:
        build = [uv_bin, "build", "-q", "--wheel", "--python", os.fspath(python), "-o", str(dist)]
        _step(
            f"{name}: building the wheel",
            [*build, *cache, *links, *index, str(project)],
            cwd=workdir,
            env=env,
        )
    else:
        pip_wheel = [os.fspath(python), "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist)]
        _step(
            f"{name}: building the wheel (no uv found: pip wheel)",
            [*pip_wheel, *cache, *links, *index, str(project)],
            cwd=workdir,
            env=env,
        )
    wheels = sorted(dist.glob("*.whl"))
    if len(wheels) != 1:
        raise InstalledPackageError(f"{name}: expected one wheel in {dist}, found {wheels}")
    [wheel] = wheels
    timings["build"] = time.perf_counter() - started

    started = time.perf_counter()
    extra = f"[{','.join(extras)}]" if extras else ""
    wanted = [f"{name}{extra} @ {wheel.as_uri()}", *requirements]
    if uv_bin is not None:
        _step(
            f"{name}: creating the venv",
            [uv_bin, "venv", "-q", "--python", os.fspath(python), str(venv)],
            cwd=workdir,
            env=env,
        )
        install = [uv_bin, "pip", "install", "-q", "--python", str(venv / "bin" / "python")]
    else:
        _step(
            f"{name}: creating the venv",
            [os.fspath(python), "-m", "venv", str(venv)],
            cwd=workdir,
            env=env,
        )
        install = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    _step(
        f"{name}: installing {wheel.name} into {venv}",
        [*install, *cache, *links, *index, *wanted],
        cwd=workdir,
        env=env,
    )
    timings["install"] = time.perf_counter() - started
    return InstalledPackage(project, name, wheel, venv, workdir, timings)


class InstalledPackages:
    """Builds each (project, extras, requirements) once under ``base`` and hands the same
    ``InstalledPackage`` to every later caller (the ``installed_package`` fixture, per
    session; under pytest-xdist, per worker)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self._built: dict[tuple[Path, tuple[str, ...], tuple[str, ...]], InstalledPackage] = {}

    def __call__(
        self,
        project_dir: str | os.PathLike[str],
        *,
        extras: Sequence[str] = (),
        requirements: Sequence[str] = (),
    ) -> InstalledPackage:
        key = (Path(project_dir).resolve(), tuple(sorted(extras)), tuple(sorted(requirements)))
        if key not in self._built:
            dest = self.base / f"{len(self._built)}-{key[0].name}"
            self._built[key] = install_package(
                key[0], extras=key[1], requirements=key[2], dest=dest
            )
        return self._built[key]
