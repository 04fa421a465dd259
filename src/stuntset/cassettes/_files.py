"""Reading and writing a cassette folder's files: a regular file's bytes (an error naming it
for anything else), the non-blank lines of a file's bytes, and an atomic replace. Shared by
the cassette format and the folder's block store (which the format imports)."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from stuntset.errors import CassetteError

__all__ = ["numbered_lines", "read_regular", "write_atomic"]


def numbered_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of ``data`` with their 1-based numbers."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            yield number, line


def read_regular(path: str | os.PathLike[str], what: str = "cassette") -> bytes:
    """The bytes of a regular file; ``CassetteError`` naming it for anything else (missing, a
    dangling link, a folder, a FIFO — which would block a read forever —, unreadable)."""
    file = Path(path)
    try:
        mode = file.stat().st_mode
    except FileNotFoundError:
        kind = "a dangling symbolic link" if file.is_symlink() else f"no such {what}"
        raise CassetteError(f"{file}: {kind}") from None
    except OSError as error:
        raise CassetteError(f"{file}: cannot read it: {error.strerror or error}") from None
    if not stat.S_ISREG(mode):
        raise CassetteError(f"{file}: not a regular file ({_file_kind(mode)}), not a {what}")
    try:
        return file.read_bytes()
    except OSError as error:
        raise CassetteError(f"{file}: cannot read it: {error.strerror or error}") from None


def _file_kind(mode: int) -> str:
    kinds = [
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ]
    return next((name for test, name in kinds if test(mode)), "not a plain file")


def write_atomic(target: Path, data: bytes) -> None:
    """Replace ``target`` with ``data`` at once: a reader sees the old bytes or the new ones,
    never a half; a failed write leaves ``target`` as it was and no temporary file behind."""
    # not mkstemp (always 0600): a new file whose mode the umask decides, like any other
    temp = str(target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp"))
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
