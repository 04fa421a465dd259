"""The first place two normalized streams part, explained in one line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .normalize import Step, describe, short

__all__ = ["Difference", "first_difference"]


@dataclass(frozen=True)
class Difference:
    """Where the real binary's stream and the fake's first differ: step ``index`` (0-based),
    the ``field`` that differs (``type`` when the steps are of different kinds, ``length``
    when one stream ended), and both steps."""

    index: int
    field: str
    real: Step | None
    fake: Step | None

    def explain(self) -> str:
        """``step 3 (tool.started) name: real 'Bash', fake 'bash'``, or the two whole steps
        when they are of different kinds."""
        if self.real is not None and self.fake is not None and self.field != "type":
            return (
                f"step {self.index} ({self.real['type']}) {self.field}: "
                f"real {short(self.real.get(self.field))}, fake {short(self.fake.get(self.field))}"
            )
        return f"step {self.index}: real {describe(self.real)}; fake {describe(self.fake)}"


def first_difference(real: Sequence[Step], fake: Sequence[Step]) -> Difference | None:
    """``None`` when the streams are the same step for step."""
    for index in range(max(len(real), len(fake))):
        ours = real[index] if index < len(real) else None
        theirs = fake[index] if index < len(fake) else None
        if ours is None or theirs is None:
            return Difference(index, "length", ours, theirs)
        if ours["type"] != theirs["type"]:
            return Difference(index, "type", ours, theirs)
        for name in ours:
            if ours.get(name) != theirs.get(name):
                return Difference(index, name, ours, theirs)
    return None
