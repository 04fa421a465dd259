"""The daemon's runtime directory and token file: a directory another user made first (or
opened to others, or a symlink) is refused, as ssh-agent and tmux do; the token file is never
written through a symlink nor over a live daemon's."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from stuntset.cli import main
from stuntset.errors import UsageError
from stuntset.runtime.security import private_dir, remove_private_file, write_private_file

NOBODY = 65534


def refused(tmp_path: Path, env: dict[str, str], *extra: str) -> str:
    """Run `stuntset daemon` expecting a refusal: exit 2, one line; return it."""
    argv = ["daemon", "--db", str(tmp_path / "host.db"), *extra]
    result = CliRunner().invoke(main, argv, env=env)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    assert "Traceback" not in result.output
    return lines[0]


def test_a_missing_runtime_dir_is_created_0700(tmp_path: Path) -> None:
    old = os.umask(0o022)  # the usual umask: it alone would give 0755
    try:
        made = private_dir(tmp_path / "a" / "rt")
    finally:
        os.umask(old)
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    assert private_dir(made) == made  # ours and private: accepted as it is


def test_a_runtime_dir_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    hostile = tmp_path / "stuntset-rt"
    hostile.mkdir(mode=0o700)
    if os.geteuid() != 0:
        pytest.skip("needs root to make a directory owned by another user (chown)")
    os.chown(hostile, NOBODY, NOBODY)
    line = refused(tmp_path, {"STUNTSET_RUNTIME_DIR": str(hostile)})
    assert f"runtime directory {hostile} belongs to uid {NOBODY}, not to you" in line
    assert list(hostile.iterdir()) == []  # nothing written into it


def test_a_runtime_dir_open_to_others_is_refused(tmp_path: Path) -> None:
    wide = tmp_path / "rt"
    wide.mkdir()
    wide.chmod(0o755)
    line = refused(tmp_path, {"STUNTSET_RUNTIME_DIR": str(wide)})
    assert "has mode 0755, wider than 0700" in line
    assert list(wide.iterdir()) == []


def test_a_symlinked_runtime_dir_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    link = tmp_path / "rt"
    link.symlink_to(real)
    line = refused(tmp_path, {"STUNTSET_RUNTIME_DIR": str(link)})
    assert f"runtime directory {link} is a symlink" in line
    assert list(real.iterdir()) == []


def test_a_symlinked_token_path_is_never_written_through(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    rt = private_dir(tmp_path / "rt")
    (rt / "daemon.json").symlink_to(victim)
    line = refused(tmp_path, {"STUNTSET_RUNTIME_DIR": str(rt)})
    assert f"token file {rt / 'daemon.json'} is a symlink" in line
    assert victim.read_text() == "precious"
    token_link = tmp_path / "mine" / "daemon.json"
    token_link.parent.mkdir(mode=0o700)
    token_link.symlink_to(victim)
    line = refused(tmp_path, {}, "--token-file", str(token_link))
    assert "is a symlink" in line
    assert victim.read_text() == "precious"


def test_a_live_daemons_token_file_is_not_overwritten(tmp_path: Path) -> None:
    rt = private_dir(tmp_path / "rt")
    token_file = rt / "daemon.json"
    token_file.write_text(json.dumps({"pid": os.getppid(), "token": "theirs"}))  # alive
    with pytest.raises(UsageError, match=rf"belongs to a running daemon \(pid {os.getppid()}\)"):
        write_private_file(token_file, b"{}", private_parent=True)
    assert json.loads(token_file.read_text())["token"] == "theirs"


def test_the_token_file_is_0600_and_removed_only_while_it_is_ours(tmp_path: Path) -> None:
    rt = private_dir(tmp_path / "rt")
    token_file = rt / "daemon.json"
    token_file.write_text(json.dumps({"pid": 2**22 + 12345, "token": "stale"}))  # a dead pid
    write_private_file(token_file, json.dumps({"token": "mine"}).encode(), private_parent=True)
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert sorted(p.name for p in rt.iterdir()) == ["daemon.json"]
    remove_private_file(token_file, token="someone else's")
    assert token_file.exists()
    remove_private_file(token_file, token="mine")
    assert not token_file.exists()


def test_an_explicit_token_file_in_a_folder_open_to_others_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    line = refused(tmp_path, {}, "--token-file", str(shared / "daemon.json"))
    assert f"its folder {shared} is writable by others" in line
