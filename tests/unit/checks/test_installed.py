"""install_package and the installed_package fixture: a user's plugin package built into a
wheel, installed into a fresh venv, and exercised through its entry points from outside the
source tree (tests/unit/checks/sample_plugin/, built once per session, per xdist worker).

uv comes from ``$STUNTSET_UV`` (``make test`` sets it), ``PATH`` or the Makefile's
``.tools/bin/uv``; the build backend and pytest come from its cache."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import shutil
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from stuntset.checks import InstalledPackage, InstalledPackageError, install_package
from stuntset.checks.installed import find_uv
from stuntset.errors import UsageError

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = Path(__file__).parent / "sample_plugin"
#: pytest for the in-venv run, pinned to this environment's versions (uv's cache has them)
PYTEST = [
    f"{name}=={importlib.metadata.version(name)}"
    for name in ("pytest", "pluggy", "iniconfig", "packaging", "pygments")
]


def _uv() -> str:
    uv = find_uv() or next((str(p) for p in [ROOT / ".tools" / "bin" / "uv"] if p.exists()), None)
    if uv is None:
        pytest.skip("no uv: set STUNTSET_UV, put uv on PATH, or run `make sync` for .tools/bin/uv")
    return uv


@pytest.fixture(scope="module")
def sample(installed_package: Callable[..., InstalledPackage]) -> InstalledPackage:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STUNTSET_UV", _uv())
        built = installed_package(SAMPLE, extras=["loud"], requirements=PYTEST)
    print(
        f"sample plugin: build {built.timings['build']:.2f} s, "
        f"venv + install {built.timings['install']:.2f} s"
    )
    return built


@pytest.mark.wheel
def test_the_console_script_runs_from_the_venv(sample: InstalledPackage) -> None:
    script = sample.bin("sample-hello")
    assert script.parent == sample.venv / "bin"
    done = sample.run("sample-hello", "a", "b")
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert Path(first.removeprefix("hello from ")).is_relative_to(sample.venv)
    assert second == "args: a b"


def test_the_entry_points_are_read_from_the_installed_metadata(sample: InstalledPackage) -> None:
    assert sample.entry_points("pytest11") == {"sample": "sample_plugin.pytest_plugin"}
    assert sample.entry_points("console_scripts") == {
        "sample-hello": "sample_plugin.cli:main",
        "sample-broken": "sample_plugin.cli:missing",
    }
    assert sample.entry_points("stuntset_sample.providers") == {
        "echo": "sample_plugin.cli:EchoProvider"
    }
    assert sample.entry_points("no.such.group") == {}


def test_import_check_proves_the_module_came_from_the_venv(sample: InstalledPackage) -> None:
    path = sample.import_check("sample_plugin.cli")
    assert path.is_relative_to(sample.venv)
    assert path.name == "cli.py"


def test_the_pytest11_plugin_loads_in_a_pytest_run_inside_the_venv(
    sample: InstalledPackage,
) -> None:
    (sample.workdir / "test_uses_plugin.py").write_text(
        textwrap.dedent(
            """
            def test_greeting(sample_greeting):
                assert sample_greeting.startswith("greetings from ")
                assert "/venv/" in sample_greeting
            """
        )
    )
    done = sample.run("pytest", "-q", "-p", "no:cacheprovider", "test_uses_plugin.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


# --- failing usefully ---


def test_a_console_script_naming_a_missing_function_reports_it(sample: InstalledPackage) -> None:
    done = sample.run("sample-broken")
    assert done.returncode != 0
    assert "cannot import name 'missing' from 'sample_plugin.cli'" in done.stderr


def test_import_check_fails_when_the_source_tree_shadows_the_install(
    sample: InstalledPackage,
) -> None:
    # run from the project folder itself (flat layout): the source wins, which is the bug
    shadowed = dataclasses.replace(sample, workdir=SAMPLE)
    with pytest.raises(InstalledPackageError, match="not from the venv") as caught:
        shadowed.import_check("sample_plugin.cli")
    assert str(SAMPLE / "sample_plugin" / "cli.py") in str(caught.value)


def test_import_check_reports_a_module_that_is_not_installed(sample: InstalledPackage) -> None:
    with pytest.raises(InstalledPackageError, match=r"import sample_plugin\.nope failed") as caught:
        sample.import_check("sample_plugin.nope")
    assert "ModuleNotFoundError" in str(caught.value)


def test_bin_names_what_the_venv_has_instead(sample: InstalledPackage) -> None:
    with pytest.raises(UsageError, match=r"no executable 'sample-hi'.*'sample-hello'"):
        sample.bin("sample-hi")


def test_a_project_without_pyproject_is_refused_with_the_place(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no pyproject\.toml") as caught:
        install_package(tmp_path, dest=tmp_path / "out")
    assert str(tmp_path) in str(caught.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.wheel
def test_a_failed_build_shows_the_tail_of_the_build_output(tmp_path: Path) -> None:
    project = tmp_path / "broken"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling>=1.25"]\nbuild-backend = "hatchling.nope"\n'
        '[project]\nname = "broken-plugin"\nversion = "0.1.0"\n'
    )
    with pytest.raises(InstalledPackageError) as caught:
        install_package(project, uv=_uv(), dest=tmp_path / "out")
    message = str(caught.value)
    assert message.startswith("broken-plugin: building the wheel failed (exit ")
    assert "--- last lines of its output ---" in message
    assert "hatchling.nope" in message


def test_the_fixture_hands_out_one_build_per_project_and_extras(
    installed_package: Callable[..., InstalledPackage], sample: InstalledPackage
) -> None:
    again = installed_package(SAMPLE, extras=["loud"], requirements=list(reversed(PYTEST)))
    assert again is sample


def test_a_pyproject_without_a_project_name_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.something]\nx = 1\n")
    with pytest.raises(UsageError, match=r"pyproject.toml: cannot read \[project\] name"):
        install_package(tmp_path, dest=tmp_path / "out")


def test_run_needs_a_command_and_python_is_the_venvs(sample: InstalledPackage) -> None:
    assert sample.python == sample.venv / "bin" / "python"
    with pytest.raises(UsageError, match="run\\(\\) needs a command"):
        sample.run()


@pytest.fixture
def no_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No uv anywhere: install_package falls back to pip and the stdlib venv."""
    monkeypatch.delenv("STUNTSET_UV", raising=False)
    monkeypatch.delenv("UV", raising=False)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("HOME", str(empty))
    assert find_uv() is None


@pytest.mark.wheel
@pytest.mark.usefixtures("no_uv")
def test_without_uv_a_python_that_cannot_start_is_named(tmp_path: Path) -> None:
    with pytest.raises(
        InstalledPackageError, match=r"building the wheel \(no uv found: pip wheel\): cannot run"
    ) as caught:
        install_package(SAMPLE, python=tmp_path / "no-python", dest=tmp_path / "out")
    assert str(tmp_path / "no-python") in str(caught.value)


@pytest.mark.wheel
@pytest.mark.usefixtures("no_uv")
def test_without_uv_pip_wheel_gets_the_index_options_and_its_failure_is_shown(
    tmp_path: Path,
) -> None:
    # a fake interpreter without pip: says so, with the arguments it was given
    fake = tmp_path / "python-without-pip"
    fake.write_text('#!/bin/sh\necho "$@" >&2\necho "No module named pip" >&2\nexit 1\n')
    fake.chmod(0o755)
    with pytest.raises(InstalledPackageError) as caught:
        install_package(
            SAMPLE,
            python=fake,
            find_links=[tmp_path / "wheels"],
            index_url="https://example.invalid/simple",
            cache_dir=tmp_path / "cache",
            dest=tmp_path / "out",
        )
    message = str(caught.value)
    assert message.startswith(
        "stuntset-sample-plugin: building the wheel (no uv found: pip wheel) failed (exit 1)"
    )
    assert message.endswith("No module named pip")
    assert f"--find-links {tmp_path / 'wheels'}" in message
    assert "--index-url https://example.invalid/simple" in message
    assert f"--cache-dir {tmp_path / 'cache'}" in message


def test_a_command_that_outlives_its_timeout_is_killed_and_named(
    sample: InstalledPackage,
) -> None:
    hang = "import threading; threading.Event().wait()"  # waits for what never comes
    with pytest.raises(InstalledPackageError, match=r"still ran after 0\.5 s \(killed\)"):
        sample.run("python", "-c", hang, timeout=0.5)


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.mark.usefixtures("no_uv")
def test_find_uv_looks_where_uv_is_put_when_it_is_not_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(os.environ["HOME"])
    cargo = _executable(home / ".cargo" / "bin" / "uv")
    assert find_uv() == str(cargo)
    local = _executable(home / ".local" / "bin" / "uv")
    assert find_uv() == str(local)  # the installer's default comes first
    venv_python = _executable(tmp_path / "venv" / "bin" / "python")
    beside = _executable(tmp_path / "venv" / "bin" / "uv")
    assert find_uv(python=venv_python) == str(beside)
    ran_by_uv = _executable(tmp_path / "uv-run" / "uv")
    monkeypatch.setenv("UV", str(ran_by_uv))  # `uv run` tells what it starts where it is
    assert find_uv(python=venv_python) == str(ran_by_uv)
    monkeypatch.setenv("UV", str(tmp_path / "gone"))  # a stale variable is passed over
    assert find_uv(python=venv_python) == str(beside)
    local.chmod(0o644)
    beside.unlink()
    assert find_uv(python=venv_python) == str(cargo)  # not executable: not uv


@pytest.mark.wheel
@pytest.mark.usefixtures("no_uv")
def test_without_uv_an_interpreter_without_pip_is_named_as_the_cause(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "python"  # as in a venv uv made: no pip, and no uv beside it
    _executable(fake).write_text('#!/bin/sh\necho "No module named pip" >&2\nexit 1\n')
    with pytest.raises(InstalledPackageError) as caught:
        install_package(SAMPLE, python=fake, dest=tmp_path / "out")
    assert f"{fake} has no pip (a venv made by uv has none) and no uv was found" in str(
        caught.value
    )


MKDIR, CP = shutil.which("mkdir"), shutil.which("cp")  # PATH is empty under no_uv


# a real venv with pip (ensurepip) and a real pip install: ~10 s alone, and it passed 60 s
# once on a machine loaded ten times over; the bound is for a hang, not for a slow machine
@pytest.mark.wheel
@pytest.mark.timeout(240)
@pytest.mark.usefixtures("no_uv")
def test_without_uv_the_stdlib_venv_and_pip_install_the_wheel(
    sample: InstalledPackage, tmp_path: Path
) -> None:
    # pip's wheel build would fetch hatchling from the index: this interpreter hands over the
    # wheel uv built instead; the venv (stdlib, with pip) and pip's install are real
    python = tmp_path / "python-pip-wheel-from-cache"
    python.write_text(
        "#!/bin/sh\n"
        f'if [ "$2" = pip ]; then {MKDIR} -p "$7" && exec {CP} {sample.wheel} "$7"; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    installed = install_package(SAMPLE, python=python, dest=tmp_path / "out")
    assert installed.entry_points("pytest11") == {"sample": "sample_plugin.pytest_plugin"}
    assert installed.import_check("sample_plugin").is_relative_to(installed.venv)
    assert (installed.venv / "bin" / "pip").exists()  # made by venv, not by uv
    print(f"pip fallback: venv + install {installed.timings['install']:.2f} s")
