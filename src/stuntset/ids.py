"""The id seam: every id stuntset mints comes from an ``IdGenerator``.

``SequentialIds`` gives ``run-1``, ``run-2``, ``tool-1``… (one counter per prefix): the same
test produces the same ids on any machine, any xdist worker, in any order.
``RandomIds`` gives unique ids for real use.
"""

from __future__ import annotations

import _random
import os
from collections import defaultdict
from collections.abc import Iterator
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
#: Ids' random parts are made ``_BATCH`` at a time, dash included (one big number turned to
#: hex with a dash before every 12 digits, and split: all in C), so minting one is one
#: concatenation (a server mints two per request; formatting each number cost more than the
#: rest of the id, and cutting the digits with a regex ≈ 1.5k instructions an id, twice the
#: split's).
_BATCH = 512
_suffixes: Iterator[str] = iter(())


def _refill() -> Iterator[str]:
    global _suffixes
    data = _SOURCE.getrandbits(48 * _BATCH).to_bytes(6 * _BATCH, "big")
    _suffixes = iter(("-" + data.hex(" ", 6)).replace(" ", " -").split())
    return _suffixes


def _reseed() -> None:
    global _suffixes
    _SOURCE.seed(int.from_bytes(os.urandom(16), "big"))
    _suffixes = iter(())  # a forked child must not hand out the parent's next suffixes


os.register_at_fork(after_in_child=_reseed)


class RandomIds:
    """Unique ids for real runs: ``<prefix>-<12 hex digits>`` (48 random bits, as uuid4's
    first 12 digits)."""

    def new(self, prefix: str) -> str:
        for suffix in _suffixes:  # the next one (``-`` and 12 digits), if the batch has any
            return prefix + suffix
        return prefix + next(_refill())

    def __repr__(self) -> str:
        return "RandomIds()"
