"""The bodies of the browser fixtures of the pytest plugin (``stuntset_browser``,
``page_snapshot``), kept here so the plugin stays thin."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .chromium import launch, missing_reason
from .snapshot import PageSnapshot, SnapshotFiles, update_requested

__all__ = ["SharedBrowser", "open_browser", "open_page_snapshot", "snapshot_options"]


class SharedBrowser:
    """One Chromium for a whole test session, and Playwright's event loop.

    Playwright's sync API leaves its event loop marked as running in the thread that started
    it, which breaks every later ``asyncio.run()`` there (other tests, in the same worker).
    So the loop is marked running only inside ``active()``: around each test that uses the
    browser, and around closing it.
    """

    def __init__(self, browser: Any, loop: asyncio.AbstractEventLoop | None) -> None:
        self.browser = browser
        self.loop = loop

    @contextmanager
    def active(self) -> Iterator[Any]:
        """The browser, usable (Playwright's loop marked running) until the block ends."""
        asyncio._set_running_loop(self.loop)
        try:
            yield self.browser
        finally:
            asyncio._set_running_loop(None)


@contextmanager
def open_browser(skip: Any) -> Iterator[SharedBrowser]:
    """One headless Chromium for the whole session (``skip(reason)`` when there is none)."""
    reason = missing_reason()
    if reason is not None:
        skip(f"browser tests need a Chromium: {reason}")
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    shared = SharedBrowser(None, asyncio._get_running_loop())
    try:
        with shared.active():
            shared.browser = launch(playwright)
        yield shared
    finally:
        with shared.active():
            if shared.browser is not None:
                shared.browser.close()
            playwright.stop()


def snapshot_options(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The ``page_snapshot`` marker's options, checked: ``selector``, ``normalize``
    (regex -> replacement), ``viewport`` ((width, height))."""
    known = {"selector", "normalize", "viewport"}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise TypeError(
            f"page_snapshot marker: unknown option(s) {unknown}; known: {sorted(known)}"
        )
    return dict(kwargs)


@contextmanager
def open_page_snapshot(
    browser: Any,
    test_path: Path,
    test_name: str,
    failures: Path,
    *,
    update: bool = False,
    options: Mapping[str, Any] | None = None,
) -> Iterator[PageSnapshot]:
    """A fresh browser context and page, with the snapshot files of the test at
    ``test_path`` (``snapshots/<module>/`` beside it, files named after ``test_name``)."""
    found = snapshot_options(options or {})
    width, height = found.get("viewport", (1280, 800))
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        stem = test_name.replace("[", "-").replace("]", "").replace("/", "-")
        files = SnapshotFiles(
            test_path.parent / "snapshots" / test_path.stem, stem, update=update_requested(update)
        )
        yield PageSnapshot(
            page,
            files,
            failures,
            selector=found.get("selector", "main"),
            normalize=found.get("normalize"),
        )
    finally:
        context.close()
