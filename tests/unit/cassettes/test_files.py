"""Reading and writing a cassette folder's files: every kind of path that is not a regular
file is an error naming it (a FIFO would block a read forever), a read that fails says why,
and a replace is all or nothing."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from stuntset.cassettes._files import numbered_lines, read_regular, write_atomic
from stuntset.errors import CassetteError


def test_the_numbers_are_the_lines_of_the_file_and_blank_lines_are_skipped() -> None:
    data = b'{"a":1}\n\n   \n{"b":2}\n'
    assert list(numbered_lines(data)) == [(1, b'{"a":1}'), (4, b'{"b":2}')]
    assert list(numbered_lines(b"")) == []


def test_a_regular_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(b"held")
    assert read_regular(tmp_path / "a.jsonl") == b"held"


def test_a_missing_file_and_a_dangling_link_are_named_as_such(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match=r"missing\.jsonl: no such block store$"):
        read_regular(tmp_path / "missing.jsonl", what="block store")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "gone.jsonl")
    with pytest.raises(CassetteError, match=r"link\.jsonl: a dangling symbolic link$"):
        read_regular(tmp_path / "link.jsonl")


def test_a_path_through_a_file_says_why_it_cannot_be_read(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    with pytest.raises(CassetteError, match=r"plain/a\.jsonl: cannot read it: Not a directory"):
        read_regular(tmp_path / "plain" / "a.jsonl")


def _fifo(folder: Path) -> Path:
    os.mkfifo(folder / "fifo")
    return folder / "fifo"


def _socket(folder: Path) -> Path:
    # a short folder of our own: a socket path is limited to about 100 bytes
    path = folder / "s"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
    finally:
        server.close()
    return path


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda folder: folder, "a folder"),
        (_fifo, "a FIFO"),
        (_socket, "a socket"),
        (lambda folder: Path("/dev/null"), "a character device"),
    ],
    ids=["folder", "fifo", "socket", "character-device"],
)
def test_anything_but_a_regular_file_is_refused_before_it_is_read(
    tmp_path: Path, make: object, kind: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(CassetteError, match=rf"not a regular file \({kind}\), not a cassette$"):
        read_regular(path)


def test_a_regular_file_whose_read_fails_says_why() -> None:
    # /proc/self/mem is a regular file whose first page is not mapped: the read fails (EIO)
    mem = Path("/proc/self/mem")
    if not mem.exists():
        pytest.skip("no /proc/self/mem on this system")
    with pytest.raises(CassetteError, match=r"/proc/self/mem: cannot read it: "):
        read_regular(mem)


def test_a_replace_writes_the_new_bytes_with_the_umask_mode(tmp_path: Path) -> None:
    target = tmp_path / "a.jsonl"
    target.write_bytes(b"old")
    previous = os.umask(0o022)
    try:
        write_atomic(target, b"new")
        write_atomic(tmp_path / "b.jsonl", b"fresh")
    finally:
        os.umask(previous)
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE((tmp_path / "b.jsonl").stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl"]


def test_a_failed_replace_leaves_the_target_and_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "held"
    target.mkdir()
    (target / "inside").write_text("kept")
    with pytest.raises(IsADirectoryError):
        write_atomic(target, b"new")  # a folder cannot be replaced by a file
    assert (target / "inside").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["held"]
