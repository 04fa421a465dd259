"""lint-mocks finds mock.patch of a project's own code in every spelling, keeps a baseline
that may only shrink, and passes stuntset's own tests with an empty baseline."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from stuntset.checks.lint_mocks import (
    check_against_baseline,
    find_mock_patches,
    own_packages,
    read_baseline,
    run_lint,
    shrink_baseline,
)
from stuntset.cli import main
from stuntset.errors import UsageError

REPO = Path(__file__).parents[3]

PATCHING = """
import os
import unittest.mock
from unittest import mock
from unittest.mock import patch
from myapp import service
import myapp.service as svc


@patch("myapp.service.Client")
def test_decorated(client):
    pass


def test_context_managers():
    with mock.patch.object(service, "send"):
        pass
    with unittest.mock.patch("os.getcwd"):  # not the project's own: fine
        pass
    with patch.dict("myapp.settings.CONFIG", {"debug": True}):
        pass


def test_pytest_mock(mocker):
    mocker.patch("myapp.service.now")
    mocker.patch.object(svc.Client, "get")
    mocker.spy(service, "send")  # a spy is not a patch
    mocker.patch(target="myapp.service.today")
    os.getcwd()
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    package = tmp_path / "src" / "myapp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "service.py").write_text("def send(): ...\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_service.py").write_text(PATCHING)
    (tmp_path / "tests" / "test_clean.py").write_text("def test_x():\n    assert True\n")
    return tmp_path


def test_every_spelling_of_a_patch_of_own_code_is_found(project: Path) -> None:
    assert own_packages(project) == ["myapp"]
    found = find_mock_patches([project / "tests"], root=project)
    assert [(p.line, p.target, p.call) for p in found] == [
        (10, "myapp.service.Client", "patch()"),
        (16, "myapp.service.send", "mock.patch.object()"),
        (20, "myapp.settings.CONFIG", "patch.dict()"),
        (25, "myapp.service.now", "mocker.patch()"),
        (26, "myapp.service.Client.get", "mocker.patch.object()"),
        (28, "myapp.service.today", "mocker.patch()"),
    ]
    assert found[0].describe() == (
        "tests/test_service.py:10: patch() patches 'myapp.service.Client', the project's own "
        "code: test it through a fake at the boundary instead (a stuntset double, or a small "
        "working in-memory implementation passed in)"
    )
    assert find_mock_patches([project / "tests"], packages=["other"], root=project) == []


def test_the_baseline_tolerates_listed_patches_and_may_only_shrink(project: Path) -> None:
    found = find_mock_patches([project / "tests"], root=project)
    baseline = Counter(p.key for p in found)
    assert check_against_baseline(found, baseline).ok
    fewer = found[1:]
    stale = check_against_baseline(fewer, baseline)
    assert not stale.ok
    assert stale.fixed == ["tests/test_service.py::myapp.service.Client"]
    file = project / "lint-mocks-baseline.txt"
    file.write_text("".join(f"{p.key}\n" for p in found[:2]))
    assert shrink_baseline(file, found[1:]) == ["tests/test_service.py::myapp.service.Client"]
    assert read_baseline(file) == Counter({"tests/test_service.py::myapp.service.send": 1})
    assert shrink_baseline(file, found) == []  # never adds what is new
    assert sum(read_baseline(file).values()) == 1


def test_the_command_fails_on_new_patches_and_stale_entries(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    runner = CliRunner()
    result = runner.invoke(main, ["lint-mocks"])
    assert result.exit_code == 1
    assert result.stdout.count("patches 'myapp.") == 6
    assert result.stderr == (
        "6 new patch(es) of the project's own code, 0 tolerated by the baseline, "
        "0 stale baseline entr(y/ies)\n"
    )
    found = find_mock_patches(["tests"])
    Path("lint-mocks-baseline.txt").write_text(
        "# tolerated\n" + "".join(f"{p.key}\n" for p in found)
    )
    assert runner.invoke(main, ["lint-mocks"]).exit_code == 0
    (project / "tests" / "test_service.py").write_text("")  # all fixed
    stale = runner.invoke(main, ["lint-mocks"])
    assert stale.exit_code == 1
    assert (
        "no longer occurs: the baseline may only shrink, run `stuntset lint-mocks " in stale.stdout
    )
    shrunk = runner.invoke(main, ["lint-mocks", "--shrink-baseline"])
    assert shrunk.exit_code == 0
    assert "lint-mocks-baseline.txt: removed tests/test_service.py::myapp.service.Client" in (
        shrunk.stdout
    )


def test_misuse_is_a_usage_error(project: Path) -> None:
    with pytest.raises(UsageError, match="found no package of the project's own"):
        find_mock_patches([project / "tests"], root=project / "tests")
    with pytest.raises(UsageError, match="no such baseline to shrink"):
        run_lint([str(project / "tests")], baseline=str(project / "nope.txt"), shrink=True)


@pytest.mark.slow
def test_stuntsets_own_tests_pass_with_an_empty_baseline() -> None:
    assert own_packages(REPO) == ["bench", "stuntset"]
    assert find_mock_patches([REPO / "tests", REPO / "bench"], root=REPO) == []
    assert not (REPO / "lint-mocks-baseline.txt").exists()
