"""ARIA snapshots of a page compared with committed files.

``SnapshotFiles`` keeps the files of one test under ``snapshots/`` beside it
(``<test>.<name>.aria.yml``): a missing file is recorded (never in CI: it fails there),
``update`` (``STUNTSET_SNAPSHOT_UPDATE=1`` or ``--snapshot-update``) rewrites a differing
one locally, and in CI (``CI`` set) files are read-only. ``PageSnapshot`` is the
``page_snapshot`` fixture: a Playwright page, ``check(name)`` of its ARIA tree (Playwright's
``aria_snapshot()``) after the normalizations asked for, and a screenshot saved on failure.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stuntset.cassettes.snapshot import SnapshotMismatch
from stuntset.errors import UsageError

__all__ = ["PageSnapshot", "SnapshotFiles", "SnapshotMismatch", "update_requested"]


def update_requested(option: bool = False) -> bool:
    """Whether to rewrite differing snapshots: ``option`` or ``STUNTSET_SNAPSHOT_UPDATE``."""
    return option or os.environ.get("STUNTSET_SNAPSHOT_UPDATE", "") not in ("", "0")


class SnapshotFiles:
    """The snapshot files of one test: ``<folder>/<stem>.<name>.aria.yml``."""

    def __init__(self, folder: Path, stem: str, *, update: bool = False, ci: bool | None = None):
        self.folder = folder
        self.stem = stem
        self.update = update
        self.ci = bool(os.environ.get("CI")) if ci is None else ci

    def path(self, name: str) -> Path:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name) or name.startswith("."):
            raise UsageError(f"snapshot name {name!r}: use letters, digits, '_', '-' and '.'")
        return self.folder / f"{self.stem}.{name}.aria.yml"

    def check(self, name: str, text: str) -> str:
        """Compare ``text`` with the file of ``name``: ``"same"``, ``"recorded"`` (it was
        missing) or ``"updated"``; ``SnapshotMismatch`` on a difference (or a missing file in
        CI), the message holding a unified diff."""
        __tracebackhide__ = True
        file = self.path(name)
        text = text if text.endswith("\n") else text + "\n"
        if not file.exists():
            if self.ci:
                raise SnapshotMismatch(
                    f"{file}: no snapshot, and CI is set (snapshots are read-only in CI): "
                    "record it locally, review it, commit it"
                )
            self._write(file, text)
            return "recorded"
        expected = file.read_text(encoding="utf-8")
        if expected == text:
            return "same"
        if self.update and not self.ci:
            self._write(file, text)
            return "updated"
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"{file} (committed)",
                tofile="page (now)",
            )
        )
        how = (
            "CI is set: snapshots are read-only here"
            if self.ci
            else "if the change is intended, rerun with STUNTSET_SNAPSHOT_UPDATE=1 and review it"
        )
        raise SnapshotMismatch(f"{file}: the page differs from its snapshot ({how}):\n{diff}")

    def _write(self, file: Path, text: str) -> None:
        file.parent.mkdir(parents=True, exist_ok=True)
        temporary = file.with_name(f".{file.name}.tmp")
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(file)


def normalize(text: str, replacements: Mapping[str, str]) -> str:
    """``text`` with each regular expression of ``replacements`` replaced (ids, times)."""
    for pattern, replacement in replacements.items():
        text = re.sub(pattern, replacement, text)
    return text


class PageSnapshot:
    """A Playwright ``page`` and the snapshot files of one test. ``check(name)`` compares
    the ARIA snapshot of ``selector`` (default ``main``) with ``<name>``'s file; on a
    failure a full-page screenshot is saved in ``failures`` and named in the message."""

    def __init__(
        self,
        page: Any,
        files: SnapshotFiles,
        failures: Path,
        *,
        selector: str = "main",
        normalize: Mapping[str, str] | None = None,
    ) -> None:
        self.page = page
        self.files = files
        self.failures = failures
        self.selector = selector
        self.replacements = dict(normalize or {})

    def aria(self, selector: str | None = None) -> str:
        """The normalized ARIA snapshot of ``selector`` (default: this fixture's)."""
        raw = self.page.locator(selector or self.selector).aria_snapshot()
        return normalize(str(raw), self.replacements)

    def check(self, name: str, *, selector: str | None = None) -> str:
        """Compare the page with snapshot ``name`` (see ``SnapshotFiles.check``)."""
        __tracebackhide__ = True
        text = self.aria(selector)
        try:
            return self.files.check(name, text)
        except SnapshotMismatch as mismatch:
            self.failures.mkdir(parents=True, exist_ok=True)
            shot = self.failures / f"{self.files.stem}.{name}.png"
            self.page.screenshot(path=str(shot), full_page=True)
            raise SnapshotMismatch(f"{mismatch}\nscreenshot of the page: {shot}") from None
