"""The wheel smoke (``make wheel-smoke``, part of ``make test``): stuntset as a user gets it.

Builds the sdist and the wheel (``uv build``: the wheel is built from the sdist), installs
them into fresh virtual environments with only their declared dependencies (no dev group;
pytest, which the user brings), and runs, from a temporary directory outside the repository
(so nothing is imported from the source tree):

- ``wheel``, the bare install: ``stuntset --version``, ``stuntset demo``, ``stuntset matrix``
  (the SDK columns show "not installed"), ``stuntset script check`` on the README's script
  file, and the user project (``user_project/``: every public fixture, plus the README's test
  examples written into it as test modules) under pytest;
- ``sdist``, the bare install from the source distribution: the console script and the plugin
  come from it (``uv build`` built the wheel above from this sdist already);
- one environment per adapter extra: the adapter imports, its matrix column plays the
  catalog, and the fixtures run there too (the plugin with the SDK installed);
- ``mcp``: the official MCP client calls a tool of the installed MCP double over stdio
  (``probes/mcp_stdio.py``), and the fixtures run there; ``browser``: the user project's page
  snapshot test in a real Chromium (where one is found).

Environments are set up and run two at a time (``--jobs``).

Versions are pinned to ``uv.lock`` as constraints (what is installed is still only what the
METADATA asks for), so everything comes from uv's cache after ``make sync``. Prints the wall
time of each step. Usage: ``python tests/wheel/smoke.py --uv UV [--python PYTHON]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "examples"))

from readme import first_example, script_file_example, session_log_example  # noqa: E402

#: extra → (the adapter module it enables, the matrix adapter it fills in)
EXTRAS = {
    "claude": ("stuntset.providers.claude_code", "claude-code"),
    "codex": ("stuntset.providers.codex", "codex"),
    "pydantic-ai": ("stuntset.providers.pydantic_ai", "pydantic-ai"),
}
#: extra → what it enables, run in its environment as a user would (beside the fixtures)
FEATURE_EXTRAS = ("mcp", "browser", "hypothesis")
PROBES = Path(__file__).parent / "probes"
USER_PROJECT = Path(__file__).parent / "user_project"
#: the user project's browser test runs only in the `browser` environment (elsewhere the
#: fixture would skip it: no Playwright)
BROWSER_TESTS = "test_browser.py"
#: the README's session log example calls check_event_log, whose state machine is the
#: `hypothesis` extra: it runs in that environment; the bare one shows the extra is named
SESSION_LOG_TESTS = "test_readme_session_log.py"
NAMES_THE_EXTRA = (
    "from stuntset.checks import check_event_log\n"
    "from stuntset.errors import MissingExtra\n"
    "from stuntset.log import MemoryEventLog\n"
    "try:\n"
    "    check_event_log(MemoryEventLog, scenario=False, host=False)\n"
    "except MissingExtra as missing:\n"
    "    print(missing)\n"
)
TWO_SCENARIOS = ["--scenario", "happy_path", "--scenario", "tool_use"]
#: what the user brings besides stuntset
USER_BRINGS = ["pytest"]


class Smoke:
    def __init__(self, uv: str, python: str, work: Path) -> None:
        self.uv, self.python, self.work = uv, python, work
        self.timings: list[tuple[str, float]] = []

    def run(
        self,
        label: str,
        argv: list[str],
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> str:
        started = time.perf_counter()
        done = subprocess.run(
            argv, cwd=cwd or self.work, env=env, capture_output=True, text=True, check=False
        )
        elapsed = time.perf_counter() - started
        self.timings.append((label, elapsed))
        print(f"  {elapsed:6.2f} s  {label}", flush=True)
        if done.returncode != 0:
            raise SystemExit(
                f"wheel smoke: {label} failed (exit {done.returncode}): {' '.join(argv)}\n"
                f"--- stdout ---\n{done.stdout[-6000:]}\n--- stderr ---\n{done.stderr[-6000:]}"
            )
        return done.stdout

    def build(self) -> tuple[Path, Path]:
        dist = self.work / "dist"
        self.run(
            "uv build (sdist, then the wheel from it)",
            [self.uv, "build", "-q", "-o", str(dist), str(ROOT)],
        )
        [sdist] = dist.glob("*.tar.gz")
        [wheel] = dist.glob("*.whl")
        constraints = self.work / "constraints.txt"
        locked = self.run(
            "uv export (uv.lock as constraints)",
            [
                self.uv,
                "export",
                "--frozen",
                "--all-extras",
                "--no-emit-project",
                "--no-hashes",
                "--project",
                str(ROOT),
            ],
        )
        constraints.write_text(locked)
        return sdist, wheel

    def venv(self, name: str, requirement: str) -> Path:
        venv = self.work / f"venv-{name}"
        self.run(f"[{name}] uv venv", [self.uv, "venv", "-q", "--python", self.python, str(venv)])
        self.run(
            f"[{name}] uv pip install {Path(requirement).name} + {' '.join(USER_BRINGS)}",
            [
                self.uv,
                "pip",
                "install",
                "-q",
                "--python",
                str(venv / "bin" / "python"),
                "-c",
                str(self.work / "constraints.txt"),
                requirement,
                *USER_BRINGS,
            ],
        )
        return venv

    def env(self, venv: Path) -> dict[str, str]:
        # PYTHONDONTWRITEBYTECODE out too: the first run in a venv compiles what it imports
        # and later ones reuse it
        dropped = {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE"}
        env = {k: v for k, v in os.environ.items() if k not in dropped}
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["CI"] = "true"  # cassettes and snapshots replay only, as in CI
        env["STUNTSET_UV"] = self.uv  # the installed_package fixture builds with it
        return env

    def project(self, name: str) -> Path:
        """A fresh copy of the user project, with the README's examples written into it."""
        project = self.work / f"project-{name}"
        shutil.copytree(USER_PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
        (project / "test_readme_first.py").write_text(first_example())
        (project / "test_readme_session_log.py").write_text(session_log_example())
        (project / "weather.toml").write_text(script_file_example())
        return project

    def installed(self, name: str, venv: Path, project: Path) -> None:
        """stuntset, its console script and its pytest plugin come from the venv."""
        env = self.env(venv)
        probe = (
            "import importlib.metadata as m, shutil, stuntset\n"
            "[plugin] = [e for e in m.entry_points(group='pytest11') if e.name == 'stuntset']\n"
            "print(stuntset.__file__, plugin.load().__file__, shutil.which('stuntset'), sep='\\n')"
        )
        out = self.run(
            f"[{name}] where stuntset comes from", ["python", "-c", probe], cwd=project, env=env
        )
        for path in out.split():
            if not Path(path).resolve().is_relative_to(venv.resolve()):
                raise SystemExit(f"wheel smoke: [{name}] {path} is not inside {venv}")
        version = self.run(
            f"[{name}] stuntset --version", ["stuntset", "--version"], cwd=project, env=env
        )
        if not version.startswith("stuntset, version "):
            raise SystemExit(f"wheel smoke: [{name}] stuntset --version said {version!r}")

    def user_project(self, name: str, venv: Path, project: Path, *only: str) -> None:
        what = "every fixture" if only else "every fixture, README examples"
        out = self.run(
            f"[{name}] pytest user project ({what})",
            ["pytest", "-q", "-p", "no:cacheprovider", "-W", "error", *only]
            + ([] if only else [f"--ignore={BROWSER_TESTS}", f"--ignore={SESSION_LOG_TESTS}"]),
            cwd=project,
            env=self.env(venv),
        )
        summary = out.strip().splitlines()[-1]
        if any(word in summary for word in ("skipped", "deselected", "xfail", "warning")):
            raise SystemExit(
                f"wheel smoke: [{name}] the user project did not simply pass: {summary}"
            )


def bare_wheel(smoke: Smoke, wheel: Path) -> None:
    venv, project = smoke.venv("wheel", str(wheel)), smoke.project("wheel")
    env = smoke.env(venv)
    smoke.installed("wheel", venv, project)
    smoke.run("[wheel] stuntset demo", ["stuntset", "demo"], cwd=project, env=env)
    smoke.run("[wheel] stuntset matrix", ["stuntset", "matrix"], cwd=project, env=env)
    smoke.run(
        "[wheel] stuntset script check weather.toml (README)",
        ["stuntset", "script", "check", "weather.toml"],
        cwd=project,
        env=env,
    )
    smoke.user_project("wheel", venv, project)
    said = smoke.run(
        "[wheel] check_event_log's state machine without hypothesis names the extra",
        ["python", "-c", NAMES_THE_EXTRA],
        cwd=project,
        env=env,
    )
    if "pip install 'stuntset[hypothesis]'" not in said:
        raise SystemExit(f"wheel smoke: [wheel] without hypothesis check_event_log said {said!r}")


def bare_sdist(smoke: Smoke, sdist: Path) -> None:
    # the wheel above was built from this sdist (uv build); here it installs by itself
    venv, project = smoke.venv("sdist", str(sdist)), smoke.project("sdist")
    smoke.installed("sdist", venv, project)


def with_extra(smoke: Smoke, wheel: Path, extra: str) -> None:
    module, adapter = EXTRAS[extra]
    venv, project = smoke.venv(extra, f"{wheel}[{extra}]"), smoke.project(extra)
    env = smoke.env(venv)
    smoke.installed(extra, venv, project)
    smoke.run(
        f"[{extra}] import {module}", ["python", "-c", f"import {module}"], cwd=project, env=env
    )
    # two scenarios prove the adapter runs on the installed SDK; the whole catalog on every
    # adapter is the dev suite's job (tests/unit/checks/test_matrix.py)
    out = smoke.run(
        f"[{extra}] stuntset matrix --adapter {adapter} (happy_path, tool_use)",
        ["stuntset", "matrix", "--adapter", adapter, "--markdown", *TWO_SCENARIOS],
        cwd=project,
        env=env,
    )
    if "not installed" in out:
        raise SystemExit(f"wheel smoke: [{extra}] the matrix says {adapter} is not installed")
    # the fixtures with the SDK installed beside them (the README's examples ran bare)
    smoke.user_project(extra, venv, project, "test_fixtures.py")


def with_feature(smoke: Smoke, wheel: Path, extra: str) -> None:
    venv, project = smoke.venv(extra, f"{wheel}[{extra}]"), smoke.project(extra)
    env = smoke.env(venv)
    smoke.installed(extra, venv, project)
    if extra == "mcp":
        said = smoke.run(
            "[mcp] the mcp client calls a tool of the MCP double over stdio",
            ["python", str(PROBES / "mcp_stdio.py")],
            cwd=project,
            env=env,
        )
        if said.strip() != "hello from the installed MCP double":
            raise SystemExit(f"wheel smoke: [mcp] the probe said {said!r}")
        smoke.user_project(extra, venv, project, "test_fixtures.py")
        return
    if extra == "hypothesis":
        smoke.user_project(extra, venv, project, SESSION_LOG_TESTS)
        return
    from stuntset.browser import find_chromium

    if find_chromium() is None:  # `make test` still runs; .ci/run installs one
        print("  [browser] no Chromium on this machine: the page snapshot test is not run")
        return
    smoke.user_project(extra, venv, project, BROWSER_TESTS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uv", default="uv")
    parser.add_argument("--python", default="python3")
    parser.add_argument("--jobs", type=int, default=2, help="environments set up at once")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="stuntset-wheel-smoke-"))
    print(f"wheel smoke in {work}", flush=True)
    smoke = Smoke(args.uv, args.python, work)
    try:
        sdist, wheel = smoke.build()
        jobs: list[Callable[[], None]] = [
            lambda: bare_wheel(smoke, wheel),
            *(lambda extra=extra: with_extra(smoke, wheel, extra) for extra in EXTRAS),
            *(lambda extra=extra: with_feature(smoke, wheel, extra) for extra in FEATURE_EXTRAS),
            lambda: bare_sdist(smoke, sdist),
        ]
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for future in [pool.submit(job) for job in jobs]:
                future.result()
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"wheel smoke passed in {time.perf_counter() - started:.1f} s wall, "
        f"{children.ru_utime + children.ru_stime:.1f} s CPU in its processes",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
