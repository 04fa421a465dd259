"""Where two normalized streams part: every difference, each at a step and a field.

The streams are aligned on their steps' kinds (``difflib``: a step one side has and the other
lacks does not shift every later step into a difference); aligned steps of one kind are
compared field by field. A difference is ``(step, field, real, fake)``: ``step`` the index in
the real stream (for a step only the fake has: the real index it comes before), ``field``
the differing field, or ``step`` for a run of steps one side has and the other lacks (or
has of other kinds): its values then the lists of those steps spelt out (``spell``), an
empty list for a side that has none.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .normalize import Step, describe, short, spell

__all__ = ["Difference", "differences", "first_difference"]


@dataclass(frozen=True)
class Difference:
    """One place the real binary's stream and the fake's differ (see the module docs);
    ``real_step``/``fake_step`` are the two steps, for the explanation."""

    index: int
    field: str
    real: Any
    fake: Any
    real_step: Step | None = None
    fake_step: Step | None = None

    def explain(self) -> str:
        """``step 3 (tool.started) name: real 'Bash', fake 'bash'``, or the two whole steps
        when they are of different kinds (or one is missing)."""
        if self.field != "step" and self.real_step is not None:
            return (
                f"step {self.index} ({self.real_step['type']}) {self.field}: "
                f"real {short(self.real)}, fake {short(self.fake)}"
            )
        return (
            f"step {self.index}: real {describe(self.real_step)}; fake {describe(self.fake_step)}"
        )


def _whole(index: int, real: Sequence[Step], fake: Sequence[Step]) -> Difference:
    return Difference(
        index,
        "step",
        [spell(s) for s in real],
        [spell(s) for s in fake],
        real[0] if real else None,
        fake[0] if fake else None,
    )


def differences(real: Sequence[Step], fake: Sequence[Step]) -> list[Difference]:
    """Every difference between the two streams, in stream order (empty: the same)."""
    found: list[Difference] = []
    kinds = difflib.SequenceMatcher(
        None, [s["type"] for s in real], [s["type"] for s in fake], autojunk=False
    )
    for op, r1, r2, f1, f2 in kinds.get_opcodes():
        if op != "equal":
            found.append(_whole(r1, real[r1:r2], fake[f1:f2]))
            continue
        for offset in range(r2 - r1):
            ours, theirs = real[r1 + offset], fake[f1 + offset]
            for name in dict.fromkeys([*ours, *theirs]):
                if ours.get(name) != theirs.get(name):
                    found.append(
                        Difference(
                            r1 + offset, name, ours.get(name), theirs.get(name), ours, theirs
                        )
                    )
    return found


def first_difference(real: Sequence[Step], fake: Sequence[Step]) -> Difference | None:
    """The first of ``differences``; ``None`` when the streams are the same."""
    found = differences(real, fake)
    return found[0] if found else None
