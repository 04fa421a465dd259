"""Finding and starting the user's Chromium. Playwright's own browser downloads are never
used: ``STUNTSET_CHROMIUM`` names the executable, else ``chromium``, ``chromium-browser``,
``google-chrome`` on ``PATH`` (Debian: ``apt-get install chromium``)."""

from __future__ import annotations

import importlib.util
import os
import shutil
from typing import Any

__all__ = ["LAUNCH_ARGS", "find_chromium", "launch", "missing_reason"]

#: Headless, and quiet on a closed network: no background connections, no updates.
LAUNCH_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """The Chromium executable to use, or ``None``."""
    named = os.environ.get("STUNTSET_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    for name in _NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def missing_reason() -> str | None:
    """Why browser tests cannot run here (``None``: they can)."""
    if importlib.util.find_spec("playwright") is None:
        return "Playwright is not installed (pip install 'stuntset[browser]')"
    if find_chromium() is None:
        named = os.environ.get("STUNTSET_CHROMIUM")
        if named:
            return f"STUNTSET_CHROMIUM={named} is not an executable file"
        return (
            "no Chromium found (install one: `apt-get install chromium` on Debian/Ubuntu, or "
            "set STUNTSET_CHROMIUM to its path)"
        )
    return None


def launch(playwright: Any) -> Any:
    """A headless Chromium browser from ``playwright`` (``sync_playwright().start()``)."""
    executable = find_chromium()
    if executable is None:
        raise RuntimeError(missing_reason() or "no Chromium found")
    return playwright.chromium.launch(executable_path=executable, args=list(LAUNCH_ARGS))
