"""Run at the start of every Python process the test suite starts (tests/_tiers.py puts this
folder first on ``PYTHONPATH``): when ``STUNTSET_SPAWN_LOG`` names a file, every process this
one starts is appended to it, one JSON line each (executable, argv), so that the tier guard
sees what a test's descendants started, not only its children (a pytester run whose inner test
launches Chromium through Playwright's driver, say). The environment carries it down the tree.

Nothing here imports the project: it also runs in the fresh venvs of the wheel tests (which
drop ``PYTHONPATH`` anyway). Processes started ``-I`` (the fake CLIs) ignore ``PYTHONPATH``
and are not watched; they start nothing of a tier."""

import os
import sys

_LOG = os.environ.get("STUNTSET_SPAWN_LOG")
_EVENTS = frozenset({"subprocess.Popen", "os.posix_spawn", "os.exec"})


def _hook(event: str, args: tuple) -> None:  # type: ignore[type-arg]
    if event not in _EVENTS or not _LOG:
        return
    try:  # never in the way of the process it watches (a log removed after its test, say)
        import json

        executable, argv = args[0], args[1]
        if isinstance(argv, str | bytes):
            argv = [argv]
        line = json.dumps(
            {
                "executable": os.fsdecode(executable) if executable else None,
                "argv": [os.fsdecode(a) for a in argv] if isinstance(argv, list | tuple) else [],
            }
        )
        fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
    except Exception:
        pass


if _LOG:
    sys.addaudithook(_hook)
