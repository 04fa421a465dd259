"""The outside world, verified: what an agent did to the files, checked on disk.

``WorkspaceSnapshot.take(root)`` records a directory tree (every file's bytes, or a digest
for large ones, its permission bits and symlink targets). After the run,
``snapshot.assert_changes(added=..., modified=..., deleted=...)`` fails unless exactly those
paths changed (each list defaults to none) and every other file is byte-identical; the
message names each unexpected change (with the first differing line of a text file).
``ignore`` takes glob patterns matched against relative POSIX paths and each path part
(``.git``, ``__pycache__`` and ``*.pyc`` by default).

``verify_command(command, cwd=...)`` re-runs a command (the tests, a build, ``git diff
--check``) instead of trusting the agent's report that it passed.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import shlex
import stat
import subprocess
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stuntset.errors import UsageError, WorkspaceMismatch

__all__ = [
    "DEFAULT_IGNORE",
    "CommandResult",
    "FileState",
    "WorkspaceChanges",
    "WorkspaceSnapshot",
    "verify_command",
]

DEFAULT_IGNORE = (".git", "__pycache__", "*.pyc")
#: Files up to this size keep their bytes (for the first differing line in a message).
KEEP_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class FileState:
    """One path as recorded: ``kind`` ``file``, ``link`` or ``dir``; ``digest`` of the bytes
    (or the link target); ``data`` the bytes of a small file."""

    kind: str
    mode: int
    digest: str
    size: int = 0
    data: bytes | None = None


@dataclass(frozen=True)
class WorkspaceChanges:
    """Paths (relative, POSIX) added, modified and deleted since the snapshot."""

    added: list[str]
    modified: list[str]
    deleted: list[str]

    def __bool__(self) -> bool:
        return bool(self.added or self.modified or self.deleted)


def _ignored(relative: str, patterns: Collection[str]) -> bool:
    parts = relative.split("/")
    return any(
        fnmatch.fnmatchcase(relative, p) or any(fnmatch.fnmatchcase(part, p) for part in parts)
        for p in patterns
    )


def _state(path: Path) -> FileState:
    info = path.lstat()
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(path)
        return FileState("link", mode, hashlib.sha256(target.encode()).hexdigest(), len(target))
    if stat.S_ISDIR(info.st_mode):
        return FileState("dir", mode, "")
    digest = hashlib.sha256()
    kept = bytearray() if info.st_size <= KEEP_BYTES else None
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 16), b""):
            digest.update(chunk)
            if kept is not None:
                kept += chunk
    data = bytes(kept) if kept is not None else None
    return FileState("file", mode, digest.hexdigest(), info.st_size, data)


def _scan(root: Path, ignore: Collection[str]) -> dict[str, FileState]:
    states: dict[str, FileState] = {}
    for directory, dirs, files in os.walk(root):
        base = Path(directory)
        kept = []
        for name in sorted(dirs):
            relative = (base / name).relative_to(root).as_posix()
            if _ignored(relative, ignore):
                continue
            if (base / name).is_symlink():
                states[relative] = _state(base / name)  # a link to a directory: not followed
            else:
                kept.append(name)
                if not any((base / name).iterdir()):
                    states[relative] = _state(base / name)  # an empty directory counts too
        dirs[:] = kept
        for name in sorted(files):
            relative = (base / name).relative_to(root).as_posix()
            if not _ignored(relative, ignore):
                states[relative] = _state(base / name)
    return states


def _first_line_change(before: bytes, after: bytes) -> str:
    try:
        old, new = before.decode().splitlines(), after.decode().splitlines()
    except UnicodeDecodeError:
        return "binary content differs"
    for number, (x, y) in enumerate(zip(old, new, strict=False), start=1):
        if x != y:
            return f"line {number}: {x[:60]!r} -> {y[:60]!r}"
    if len(old) != len(new):
        return f"{len(old)} -> {len(new)} lines"
    return "line endings or trailing newline differ"


class WorkspaceSnapshot:
    """A directory tree as it was when ``take`` ran."""

    def __init__(self, root: Path, states: dict[str, FileState], ignore: tuple[str, ...]) -> None:
        self.root = root
        self.states = states
        self.ignore = ignore

    @classmethod
    def take(
        cls, root: str | os.PathLike[str], *, ignore: Collection[str] = DEFAULT_IGNORE
    ) -> WorkspaceSnapshot:
        """Record the tree under ``root`` now."""
        if isinstance(ignore, str):
            raise UsageError(f"ignore= takes a collection of patterns, not the string {ignore!r}")
        path = Path(root)
        if not path.is_dir():
            raise UsageError(f"{path}: not a directory, nothing to snapshot")
        return cls(path, _scan(path, tuple(ignore)), tuple(ignore))

    def changes(self) -> WorkspaceChanges:
        """What differs between the snapshot and the tree now."""
        now = _scan(self.root, self.ignore)
        return WorkspaceChanges(
            added=sorted(set(now) - set(self.states)),
            modified=sorted(
                p for p in set(now) & set(self.states) if _differs(self.states[p], now[p])
            ),
            deleted=sorted(
                p
                for p in set(self.states) - set(now)
                # an empty directory that got files is still there (only empty ones are listed)
                if not (self.states[p].kind == "dir" and _is_real_dir(self.root / p))
            ),
        )

    def _why(self, path: str) -> str:
        before = self.states[path]
        now = _state(self.root / path)
        if before.kind != now.kind:
            return f"was a {before.kind}, now a {now.kind}"
        if before.digest != now.digest:
            if before.data is not None and now.data is not None:
                return _first_line_change(before.data, now.data)
            return f"content differs ({before.size} -> {now.size} bytes)"
        return f"mode {before.mode:o} -> {now.mode:o}"

    def assert_changes(
        self,
        *,
        added: Collection[str] = (),
        modified: Collection[str] = (),
        deleted: Collection[str] = (),
    ) -> WorkspaceChanges:
        """Fail with ``WorkspaceMismatch`` unless exactly these paths (relative to the root,
        POSIX separators) were added, modified and deleted, everything else byte-identical."""
        __tracebackhide__ = True
        for name, given in (("added", added), ("modified", modified), ("deleted", deleted)):
            if isinstance(given, str):
                raise UsageError(f"{name}= takes a collection of paths, not the string {given!r}")
        got = self.changes()
        lines: list[str] = []
        expected = {"added": set(added), "modified": set(modified), "deleted": set(deleted)}
        actual = {"added": got.added, "modified": got.modified, "deleted": got.deleted}
        for kind in ("added", "modified", "deleted"):
            for path in actual[kind]:
                if path not in expected[kind]:
                    lines.append(f"unexpected: {kind} {path} ({self._detail(kind, path)})")
            for path in sorted(expected[kind] - set(actual[kind])):
                other = next((k for k, paths in actual.items() if path in paths), None)
                state = f"it was {other}" if other else "it is unchanged"
                lines.append(f"missing: expected {path} to be {kind}, but {state}")
        if lines:
            raise WorkspaceMismatch(
                f"the workspace {self.root} changed other than expected:\n"
                + "\n".join(f"  {line}" for line in lines)
                + "\nEvery path not listed in added=, modified= or deleted= must be "
                "byte-identical to the snapshot (ignore= patterns excepted)."
            )
        return got

    def _detail(self, kind: str, path: str) -> str:
        if kind == "modified":
            return self._why(path)
        if kind == "deleted":
            return f"was a {self.states[path].kind} of {self.states[path].size} bytes"
        now = _state(self.root / path)
        return f"a {now.kind} of {now.size} bytes" if now.kind != "dir" else "a directory"


def _is_real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _differs(before: FileState, after: FileState) -> bool:
    return (before.kind, before.digest, before.mode) != (after.kind, after.digest, after.mode)


# --- re-running a command -------------------------------------------------------------------


@dataclass(frozen=True)
class CommandResult:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


def _argv(command: Any) -> list[str]:
    if isinstance(command, str):
        return shlex.split(command)
    args = getattr(command, "args", None)  # a ToolStep from a trajectory, e.g. a codex command
    if isinstance(args, Mapping) and isinstance(args.get("command"), str | list):
        return _argv(args["command"])
    if isinstance(command, Sequence) and all(isinstance(part, str) for part in command):
        return list(command)
    raise UsageError(
        f"command={command!r}: expected a string, a list of arguments, or a ToolStep with a "
        f"'command' argument"
    )


def _tail(text: str, lines: int = 15) -> str:
    kept = text.rstrip().splitlines()[-lines:]
    return "\n".join(f"    | {line}" for line in kept) or "    | (nothing)"


def verify_command(
    command: Any,
    *,
    cwd: str | os.PathLike[str] | None = None,
    expect_exit: int = 0,
    stdout_contains: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120.0,
) -> CommandResult:
    """Run ``command`` (a string split like a shell would, a list, or a trajectory step with
    a ``command``) in ``cwd``; fail with ``WorkspaceMismatch`` showing the output's tail unless
    it exits with ``expect_exit`` (and prints ``stdout_contains``) within ``timeout`` seconds.
    """
    __tracebackhide__ = True
    argv = _argv(command)
    where = f" in {cwd}" if cwd is not None else ""
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise WorkspaceMismatch(f"verify_command: {argv[0]!r} was not found{where}") from None
    except subprocess.TimeoutExpired as error:
        out = error.stdout if isinstance(error.stdout, str) else ""
        raise WorkspaceMismatch(
            f"verify_command: {shlex.join(argv)}{where} did not finish within {timeout} s; "
            f"its output so far:\n{_tail(out)}"
        ) from None
    result = CommandResult(argv, done.returncode, done.stdout, done.stderr)
    problem = None
    if done.returncode != expect_exit:
        problem = f"exited with {done.returncode}, expected {expect_exit}"
    elif stdout_contains is not None and stdout_contains not in done.stdout:
        problem = f"did not print {stdout_contains!r}"
    if problem:
        raise WorkspaceMismatch(
            f"verify_command: {shlex.join(argv)}{where} {problem} (the agent's own report "
            f"is not evidence):\n  stdout:\n{_tail(done.stdout)}\n  stderr:\n{_tail(done.stderr)}"
        )
    return result
