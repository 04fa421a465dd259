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
    assert stale.fixed == [found[0].key]
    assert found[0].key.startswith("tests/test_service.py::myapp.service.Client::")
    file = project / "lint-mocks-baseline.txt"
    file.write_text("".join(f"{p.key}\n" for p in found[:2]))
    assert shrink_baseline(file, found[1:]) == [found[0].key]
    assert read_baseline(file) == Counter({found[1].key: 1})
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
    assert "lint-mocks-baseline.txt: removed tests/test_service.py::myapp.service.Client::" in (
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


# --- monkeypatch, allow comments, fingerprints, the first baseline ---------------------------

#: Ways to reach an own object (the import line, the expression) and the target they name.
OWNERS = [
    ("from myapp import service", "service", "myapp.service"),
    ("import myapp.service as svc", "svc", "myapp.service"),
    ("import myapp.service", "myapp.service", "myapp.service"),
    ("from myapp.service import Client", "Client", "myapp.service.Client"),
]
#: Ways to hold a MonkeyPatch: (set-up lines, the name it goes by).
RECEIVERS = [
    ("", "monkeypatch"),
    ("import pytest\nmp = pytest.MonkeyPatch()\n", "mp"),
    ("from _pytest.monkeypatch import MonkeyPatch\npatcher = MonkeyPatch()\n", "patcher"),
]


def monkeypatching(owner_import: str, owner: str, receiver_setup: str, receiver: str) -> str:
    """A test file with each monkeypatch spelling on its own line, numbered from line 10."""
    head = f"import os\n{owner_import}\n{receiver_setup}"
    head += "\n" * (8 - head.count("\n"))
    return head + (
        f"def test_it(monkeypatch):\n"
        f"    {receiver}.setattr({owner}, 'send', lambda: None)\n"
        f"    {receiver}.delattr({owner}, 'send')\n"
        f"    {receiver}.setitem({owner}.TABLE, 'key', 1)\n"
        f"    {receiver}.delitem({owner}.TABLE, 'key')\n"
        f"    {receiver}.setattr('myapp.settings.DEBUG', True)\n"
        f"    {receiver}.setattr(os, 'getcwd', lambda: '/')\n"  # not own: fine
        f"    {receiver}.setattr('os.getcwd', lambda: '/')\n"
        f"    {receiver}.setenv('HOME', '/tmp')\n"
        f"    {receiver}.setitem(os.environ, 'X', '1')\n"
    )


@pytest.mark.parametrize(("owner_import", "owner", "resolved"), OWNERS)
@pytest.mark.parametrize(("receiver_setup", "receiver"), RECEIVERS)
def test_every_monkeypatch_spelling_of_own_code_is_found(
    tmp_path: Path, owner_import: str, owner: str, resolved: str, receiver_setup: str, receiver: str
) -> None:
    test = tmp_path / "test_it.py"
    test.write_text(monkeypatching(owner_import, owner, receiver_setup, receiver))
    found = find_mock_patches([test], packages=["myapp"], root=tmp_path)
    assert [(p.line, p.target, p.call) for p in found] == [
        (10, f"{resolved}.send", f"{receiver}.setattr()"),
        (11, f"{resolved}.send", f"{receiver}.delattr()"),
        (12, f"{resolved}.TABLE['key']", f"{receiver}.setitem()"),
        (13, f"{resolved}.TABLE['key']", f"{receiver}.delitem()"),
        (14, "myapp.settings.DEBUG", f"{receiver}.setattr()"),
    ]


def test_a_monkeypatch_context_is_a_receiver_and_other_setattrs_are_not(tmp_path: Path) -> None:
    test = tmp_path / "test_it.py"
    test.write_text(
        "import pytest\nfrom myapp import service\n\n"
        "def test_it(monkeypatch, thing):\n"
        "    with monkeypatch.context() as m:\n"
        "        m.setattr(service, 'send', None)\n"
        "    with pytest.MonkeyPatch.context() as n:\n"
        "        n.setattr(service, 'send', None)\n"
        "    thing.setattr(service, 'send', None)\n"  # not a MonkeyPatch
        "    setattr(service, 'send', None)\n"  # the builtin: not a test double
    )
    found = find_mock_patches([test], packages=["myapp"], root=tmp_path)
    assert [(p.line, p.call) for p in found] == [(6, "m.setattr()"), (8, "n.setattr()")]


ALLOWED = """from unittest.mock import patch
from myapp import service


def test_it(monkeypatch):
    monkeypatch.setattr(service, "a", 1)  # lint-mocks: allow the clock has no seam yet
    # lint-mocks: allow — a third-party callback reaches in here
    monkeypatch.setattr(service, "b", 1)
    with patch(
        "myapp.service.c",
    ):  # lint-mocks: allow: measured, a fake costs 2 s here
        pass
    monkeypatch.setattr(service, "d", 1)  # lint-mocks: allow
    monkeypatch.setattr(service, "e", 1)  # lint-mocks: alloweth nothing
"""


def test_an_allow_comment_with_a_reason_excuses_its_patch_and_one_without_does_not(
    tmp_path: Path,
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_it.py").write_text(ALLOWED)
    found = find_mock_patches([tmp_path / "tests"], packages=["myapp"], root=tmp_path)
    assert [(p.line, p.target, p.unreasoned_allow) for p in found] == [
        (13, "myapp.service.d", 13),
        (14, "myapp.service.e", 0),
    ]
    assert (
        found[0]
        .describe()
        .endswith(
            "; the allow comment on line 13 gives no reason, so it is not honoured: write "
            "`# lint-mocks: allow <why this patch stays>`"
        )
    )
    lines, status = run_lint(
        [str(tmp_path / "tests")], packages=["myapp"], root=str(tmp_path),
        baseline=str(tmp_path / "none.txt"),
    )  # fmt: skip
    assert status == 1
    assert lines[-1] == (
        "2 new patch(es) of the project's own code, 0 tolerated by the baseline, "
        "0 stale baseline entr(y/ies), 3 allowed by a comment"
    )


def _fingerprints(tmp_path: Path, source: str) -> list[str]:
    test = tmp_path / "test_fp.py"
    test.write_text(source)
    return [p.key for p in find_mock_patches([test], packages=["myapp"], root=tmp_path)]


def test_a_changed_or_moved_patch_cannot_borrow_an_old_entry(tmp_path: Path) -> None:
    base = "from myapp import s\n\ndef test_a(monkeypatch):\n    monkeypatch.setattr(s, 'x', 1)\n"
    [entry] = _fingerprints(tmp_path, base)
    # unrelated edits (lines above, other tests, comments) keep the entry
    assert _fingerprints(tmp_path, "# a comment\n\n" + base + "\ndef test_b():\n    pass\n") == [
        entry
    ]
    changed = base.replace("'x', 1)", "'x', 2)")
    moved = base.replace("def test_a", "def test_c")
    for other in (changed, moved):
        [new] = _fingerprints(tmp_path, other)
        assert new != entry
        assert new.rsplit("::", 1)[0] == entry.rsplit("::", 1)[0]  # same path::target
        found = find_mock_patches([tmp_path / "test_fp.py"], packages=["myapp"], root=tmp_path)
        check = check_against_baseline(found, Counter([entry]))
        assert [p.key for p in check.new] == [new]
        assert check.fixed == [entry]


def test_entries_written_before_fingerprints_still_match_and_shrink_fingerprints_them(
    project: Path,
) -> None:
    found = find_mock_patches([project / "tests"], root=project)
    file = project / "lint-mocks-baseline.txt"
    file.write_text("".join(f"{p.legacy_key}\n" for p in found))
    assert check_against_baseline(found, read_baseline(file)).ok
    assert shrink_baseline(file, found) == []
    assert read_baseline(file) == Counter(p.key for p in found)


def test_write_baseline_writes_the_first_one_and_refuses_to_replace_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    runner = CliRunner()
    wrote = runner.invoke(main, ["lint-mocks", "--write-baseline"])
    assert (wrote.exit_code, wrote.stderr) == (
        0, "lint-mocks-baseline.txt: wrote 6 entr(y/ies); from now on it may only shrink\n",
    )  # fmt: skip
    assert sum(read_baseline("lint-mocks-baseline.txt").values()) == 6
    assert runner.invoke(main, ["lint-mocks"]).exit_code == 0
    again = runner.invoke(main, ["lint-mocks", "--write-baseline"])
    assert again.exit_code == 2
    assert "a baseline is already there and may only shrink" in again.stderr
    both = runner.invoke(main, ["lint-mocks", "--write-baseline", "--shrink-baseline"])
    assert both.exit_code == 2
    assert "choose one" in both.stderr


def test_a_baseline_entry_with_a_malformed_fingerprint_names_its_line(tmp_path: Path) -> None:
    file = tmp_path / "b.txt"
    file.write_text("# header\ntests/x.py::myapp.a::NOTHEX\n")
    with pytest.raises(UsageError, match=r"b\.txt:2: 'NOTHEX' is not a fingerprint"):
        read_baseline(file)
