"""One owner per database: an exclusive ``flock`` on ``<db>.lock``, held for the owner's life.

The lock is a file of its own beside the database, never the database itself: SQLite takes
POSIX (``fcntl``) locks on the database and its ``-wal``/``-shm`` files, and mixing another
lock into those is a trap (on some systems both kinds are one). The lock file holds the
owner's pid, so a refused second owner can name it; it is never deleted (deleting a lock
file that another process may have just opened lets two owners in), only truncated when
released. The kernel drops the lock when the owner dies, whatever killed it.

The lock belongs to the file, not to the name it was given: it sits beside the database's
resolved path (a symlink to the database, or a path through a symlinked folder, takes the
same lock), and a database file with more than one hard link is refused (each name would
get its own lock, and SQLite its own ``-wal`` beside each name: two owners of one file).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from stuntset.errors import LogFileError, LogInUse

__all__ = ["DatabaseLock"]


class DatabaseLock:
    """``acquire()`` the exclusive lock of database ``path`` (``LogInUse`` naming the holder's
    pid if another process has it), ``release()`` it; also a context manager."""

    def __init__(self, path: str | os.PathLike[str], *, owner: str = "stuntset") -> None:
        self.database = os.fspath(path)
        #: The database's resolved path; the lock file is beside it.
        self.resolved = os.path.realpath(self.database)
        self.path = Path(self.resolved + ".lock")
        self.owner = owner
        self._fd: int | None = None

    def acquire(self) -> None:
        if os.path.exists(self.database) and not os.path.isfile(self.database):
            raise LogFileError(
                f"{self.database}: it is a folder or a special file, not a database file",
                path=self.database,
            )
        links = _links(self.resolved)
        if links > 1:
            raise LogFileError(
                f"{self.database}: the database file has {links} hard links; one owner per "
                "database cannot be enforced across names (give a file with a single name)",
                path=self.database,
            )
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as error:
            raise LogFileError(
                f"{self.database}: cannot take its lock {self.path}: {error.strerror}",
                path=self.database,
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _pid(fd)
            os.close(fd)
            holder = f"pid {pid}" if pid is not None else "another process"
            raise LogInUse(
                f"{self.database} is in use by {holder} (lock {self.path}); stop it first, "
                "or give another database",
                path=self.database,
                pid=pid,
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {self.owner}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing drops the flock

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> DatabaseLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def _links(path: str) -> int:
    try:
        return os.stat(path).st_nlink
    except OSError:  # missing: created with one name
        return 1


def _pid(fd: int) -> int | None:
    try:
        first = os.pread(fd, 64, 0).split()[:1]
        return int(first[0]) if first else None
    except (OSError, ValueError):
        return None
