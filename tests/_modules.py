"""Libraries imported inside an in-process pytester run stay imported after it.

``pytester.runpytest()`` (in-process) snapshots ``sys.modules`` and, when the inner run ends,
drops every module the inner run imported. For the inner run's own test files that is the
point. For a library it splits the library in two: the next import executes it again and
makes new classes, while whatever kept a reference to the first copy (a C extension, a cache,
a registry) still uses the old ones. Seen twice in this suite, each time as a later test's
failure far from its cause:

* httpx2 caches httpcore2's exception map on first use; after a re-import
  ``httpcore2.ReadError`` escaped unmapped (flaky loopback tests under ``-n 2``);
* httptools' compiled parser raises the ``HttpParserUpgrade`` of the copy it was first
  built with; uvicorn re-imported afterwards catches the new one, so a WebSocket upgrade
  crashed the server's protocol (``InvalidMessage('did not receive a valid HTTP response')``
  in ``stuntset demo`` after a deadline test had first started a loopback double).

So every snapshot keeps, besides what pytester keeps, every module loaded from the standard
library, the installed packages or ``src`` (``_installed``). The inner run's test files and
conftests, which live in its temporary directory, are still dropped. Loaded by
tests/conftest.py (``pytest_plugins``); tests/tools/test_modules.py shows both halves.
"""

from __future__ import annotations

import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

from _pytest import pytester

#: Where a module lives for it to be a library (never re-imported): the standard library,
#: the installed packages, and this repository's ``src``.
LIBRARY_ROOTS = tuple(
    {
        str(Path(sysconfig.get_paths()[key]).resolve())
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
    }
    | {str(Path(__file__).resolve().parents[1] / "src")}
)


def _installed(name: str) -> bool:
    module = sys.modules.get(name)
    origin = getattr(module, "__file__", None)
    if not origin:
        return module is not None and name in sys.builtin_module_names
    return str(Path(origin).resolve()).startswith(LIBRARY_ROOTS)


_snapshot_init = pytester.SysModulesSnapshot.__init__


def _init(self: pytester.SysModulesSnapshot, preserve: Callable[[str], bool] | None = None) -> None:
    def keep(name: str) -> bool:
        return (preserve is not None and preserve(name)) or _installed(name)

    _snapshot_init(self, keep)


pytester.SysModulesSnapshot.__init__ = _init  # type: ignore[method-assign]
