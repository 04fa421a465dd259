"""WorkspaceSnapshot and verify_command: exactly the expected files changed, every other one
byte-identical, and a result re-checked by running the command again."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from stuntset.checks import (
    ToolStep,
    WorkspaceMismatch,
    WorkspaceSnapshot,
    verify_command,
)
from stuntset.errors import UsageError


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def answer():\n    return 41\n")
    (tmp_path / "README.md").write_text("# app\n")
    (tmp_path / "data.bin").write_bytes(bytes(range(256)))
    (tmp_path / "empty").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: main\n")
    return tmp_path


def failure(snapshot: WorkspaceSnapshot, **expected: list[str]) -> str:
    with pytest.raises(WorkspaceMismatch) as caught:
        snapshot.assert_changes(**expected)
    return str(caught.value)


def test_the_expected_changes_pass_and_are_returned(project: Path) -> None:
    snapshot = WorkspaceSnapshot.take(project)
    (project / "src" / "app.py").write_text("def answer():\n    return 42\n")
    (project / "tests").mkdir()
    (project / "tests" / "test_app.py").write_text("assert True\n")
    (project / "README.md").unlink()
    (project / ".git" / "HEAD").write_text("ref: other\n")  # ignored by default
    (project / "empty" / "now.txt").write_text("x")  # the empty dir is not "deleted"
    changes = snapshot.assert_changes(
        added=["tests/test_app.py", "empty/now.txt"],
        modified=["src/app.py"],
        deleted=["README.md"],
    )
    assert changes.modified == ["src/app.py"]
    assert bool(changes)


def test_an_unexpected_edit_is_named_with_its_first_changed_line(project: Path) -> None:
    snapshot = WorkspaceSnapshot.take(project)
    (project / "src" / "app.py").write_text("def answer():\n    return 42\n")
    (project / "README.md").write_text("# app\n\nrewritten by the agent\n")
    message = failure(snapshot, modified=["src/app.py"])
    assert message == (
        f"the workspace {project} changed other than expected:\n"
        "  unexpected: modified README.md (1 -> 3 lines)\n"
        "Every path not listed in added=, modified= or deleted= must be byte-identical to the "
        "snapshot (ignore= patterns excepted)."
    )


def test_every_kind_of_unexpected_change_is_caught(project: Path) -> None:
    snapshot = WorkspaceSnapshot.take(project)
    (project / "src" / "app.py").write_text("def answer():\n    return 42\n")
    (project / "data.bin").write_bytes(bytes(range(255, -1, -1)))
    (project / "notes.txt").write_text("12 bytes..\n!")
    (project / "empty").rmdir()
    os.chmod(project / "README.md", 0o600)
    message = failure(snapshot, deleted=["src/app.py"])
    assert "  unexpected: added notes.txt (a file of 12 bytes)\n" in message
    assert "  unexpected: modified README.md (mode 6" in message
    assert "  unexpected: modified data.bin (binary content differs)\n" in message
    assert (
        "  unexpected: modified src/app.py (line 2: '    return 41' -> '    return 42')\n"
        in message
    )
    assert "  unexpected: deleted empty (was a dir of 0 bytes)\n" in message
    assert "  missing: expected src/app.py to be deleted, but it was modified\n" in message


def test_an_expected_change_that_did_not_happen_is_caught(project: Path) -> None:
    snapshot = WorkspaceSnapshot.take(project)
    message = failure(snapshot, modified=["src/app.py"])
    assert "  missing: expected src/app.py to be modified, but it is unchanged\n" in message


def test_large_files_links_and_ignore_patterns(project: Path) -> None:
    big = project / "big.log"
    big.write_bytes(b"a" * (300 * 1024))
    (project / "link").symlink_to("README.md")
    (project / "build").mkdir()
    snapshot = WorkspaceSnapshot.take(project, ignore=["build", "*.log"])
    assert "big.log" not in snapshot.states
    big.write_bytes(b"b")
    (project / "build" / "out.o").write_bytes(b"\0")
    (project / "link").unlink()
    (project / "link").symlink_to("data.bin")
    message = failure(snapshot)
    assert message.splitlines()[1] == "  unexpected: modified link (content differs (9 -> 8 bytes))"
    unignored = WorkspaceSnapshot.take(project, ignore=())
    assert ".git/HEAD" in unignored.states
    (project / "big.log").write_bytes(b"c" * (300 * 1024))
    assert "modified big.log (content differs (1 -> 307200 bytes))" in failure(unignored)


def test_misuse_is_a_usage_error(project: Path) -> None:
    with pytest.raises(UsageError, match="not a directory"):
        WorkspaceSnapshot.take(project / "README.md")
    with pytest.raises(UsageError, match=r"not the string '\.git'"):
        WorkspaceSnapshot.take(project, ignore=".git")
    with pytest.raises(UsageError, match="modified= takes a collection of paths"):
        WorkspaceSnapshot.take(project).assert_changes(modified="src/app.py")


PY = sys.executable


def test_verify_command_passes_and_returns_the_output(project: Path) -> None:
    result = verify_command([PY, "-c", "print('3 passed')"], cwd=project, stdout_contains="passed")
    assert (result.returncode, result.stdout) == (0, "3 passed\n")
    step = ToolStep("command_execution", {"command": f"{PY} -c 'print(1)'"})
    assert verify_command(step).stdout == "1\n"


@pytest.mark.slow
def test_verify_command_fails_when_the_agents_claim_does_not_hold(project: Path) -> None:
    code = "import sys; print('1 failed'); print('boom', file=sys.stderr); sys.exit(1)"
    with pytest.raises(WorkspaceMismatch) as caught:
        verify_command([PY, "-c", code], cwd=project)
    message = str(caught.value)
    assert "exited with 1, expected 0 (the agent's own report is not evidence):" in message
    assert "  stdout:\n    | 1 failed\n  stderr:\n    | boom" in message
    with pytest.raises(WorkspaceMismatch, match="did not print 'passed'"):
        verify_command([PY, "-c", "print('ok')"], stdout_contains="passed")
    with pytest.raises(WorkspaceMismatch, match="'no-such-binary-here' was not found"):
        verify_command("no-such-binary-here --flag")
    with pytest.raises(WorkspaceMismatch, match=r"did not finish within 0\.5 s"):
        verify_command(
            [PY, "-c", "import time; print('started', flush=True); time.sleep(30)"], timeout=0.5
        )
    with pytest.raises(UsageError, match="command=42"):
        verify_command(42)
