"""Leak checks: child processes, sockets, pipes, asyncio tasks, temporary directories and
model-double streams a block (or a test) opened and left open. ``check_no_leaks()`` wraps a
block; ``LeakSnapshot.take()`` / ``.check()`` split it; under pytest the ``stuntset_leaks``
fixture and marker run it at teardown. The implementation is ``stuntset._leak_check`` (see
there for what each kind means and where it comes from)."""

from stuntset._leak_check import KINDS, SETTLE_SECONDS, Leak, LeakSnapshot, check_no_leaks
from stuntset.errors import ResourceLeak

__all__ = ["KINDS", "SETTLE_SECONDS", "Leak", "LeakSnapshot", "ResourceLeak", "check_no_leaks"]
