"""The id seam: every id stuntset mints comes from an ``IdGenerator``.

``SequentialIds`` gives ``run-1``, ``run-2``, ``tool-1``… (one counter per prefix): the same
test produces the same ids on any machine, any xdist worker, in any order.
``RandomIds`` gives unique ids for real use.
"""

from __future__ import annotations

import _random
import os
from collections import defaultdict
from typing import Protocol, runtime_checkable

__all__ = ["IdGenerator", "RandomIds", "SequentialIds"]


@runtime_checkable
class IdGenerator(Protocol):
    """Mints ids of the form ``<prefix>-<something unique>``."""

    def new(self, prefix: str) -> str: ...


class SequentialIds:
    """Deterministic ids: ``<prefix>-1``, ``<prefix>-2``… with one counter per prefix.

    ``namespace`` (optional) is inserted after the prefix, for callers that share one id space
    between independent generators: ``SequentialIds("a").new("run") == "run-a1"``.
    """

    def __init__(self, namespace: str = "") -> None:
        self._namespace = namespace
        self._counters: defaultdict[str, int] = defaultdict(int)

    def new(self, prefix: str) -> str:
        self._counters[prefix] += 1
        return f"{prefix}-{self._namespace}{self._counters[prefix]}"

    def __repr__(self) -> str:
        return f"SequentialIds(namespace={self._namespace!r})"


#: 48 random bits an id, from a generator seeded by the OS (and again in a forked child, so
#: parent and child never share a sequence): no system call per id, as ``os.urandom`` was.
_SOURCE = _random.Random(int.from_bytes(os.urandom(16), "big"))
os.register_at_fork(after_in_child=lambda: _SOURCE.seed(int.from_bytes(os.urandom(16), "big")))


class RandomIds:
    """Unique ids for real runs: ``<prefix>-<12 hex digits>``."""

    def new(self, prefix: str) -> str:
        return f"{prefix}-{_SOURCE.getrandbits(48):012x}"  # as uuid4's first 12 digits

    def __repr__(self) -> str:
        return "RandomIds()"
