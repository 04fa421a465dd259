"""Hands out a script's turns to the requests a double receives, and remembers what it used."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any

import msgspec

from stuntset.errors import ScriptExhausted, UnusedTurns
from stuntset.script._model import Script, Turn, TurnRequest

__all__ = ["PlayedTurn", "ScriptPlayer"]


class PlayedTurn(msgspec.Struct, frozen=True):
    """A turn handed out for a request. ``index`` is the turn's place in the script (or, for
    turns made by the script's function, ``len(script.turns)`` plus the call number)."""

    index: int
    turn: Turn
    request: TurnRequest


class ScriptPlayer:
    """Chooses the turn for each request: the first turn with uses left whose match accepts
    the request (turns without a match accept anything, so plain scripts play in order).

    Thread-safe: doubles serve concurrent requests. ``keep`` bounds ``played`` to the last
    ``keep`` turns handed out (a long-running server); by default it keeps them all.

    ``next_open`` is ``next_turn`` for a server's hot path: no ``TurnRequest`` is made for a
    request unless ``played`` is read.
    """

    def __init__(self, script: Script, *, keep: int | None = None, cycle: bool = False) -> None:
        self.script = script
        #: Start the turns over when none is left for a request (``stuntset serve``).
        self.cycle = cycle and bool(script.turns)
        #: How many times the turns were started over.
        self.cycles = 0
        self._times = [t.times for t in script.turns]
        self._left = self._times.copy()
        #: No turn has a match or a predicate: the turn for a request is the first with uses
        #: left, found in O(1) from ``_first`` (the index before which every turn is used up)
        self._open = all(t.match is None and t.predicate is None for t in script.turns)
        self._first = self._skip_used(0)
        self._function_calls = 0
        self._lock = threading.Lock()
        #: The turns handed out, oldest first: a ``PlayedTurn``, or (from ``next_open``) its
        #: index, turn, and how to make its request: ``(index, turn, make, source)``.
        self._played: deque[PlayedTurn | tuple[int, Turn, Callable[[Any], TurnRequest], Any]]
        self._played = deque(maxlen=keep)
        #: How many requests asked for a turn (including those beyond ``played``).
        self.requests = 0

    def next_turn(self, request: TurnRequest) -> PlayedTurn:
        """The turn for ``request``; ``ScriptExhausted`` if none is left or none matches."""
        with self._lock:
            self.requests += 1
            played = self._next_open(request) if self._open else self._scripted(request)
            if played is None and self.cycle:
                self._left = self._times.copy()
                self._first = self._skip_used(0)
                self.cycles += 1
                played = self._next_open(request) if self._open else self._scripted(request)
            if played is None:
                if self.script.function is None:
                    raise ScriptExhausted(self._exhausted_message(request))
                index = len(self.script.turns) + self._function_calls
                self._function_calls += 1
                played = PlayedTurn(index, self.script.turn_from_function(request, index), request)
            self._played.append(played)
            return played

    def next_open(self, make: Callable[[Any], TurnRequest], source: Any) -> tuple[int, Turn] | None:
        """``next_turn`` for a script whose turns accept any request (no match, predicate or
        function needed): the turn's index and the turn, its request recorded as ``make(
        source)``, made only when ``played`` is read. ``None``, with nothing counted, when
        the script is not such a script or no turn is left (``next_turn`` says why)."""
        if not self._open:
            return None
        # per request on a server: ``_next_open`` and the start-over inlined (each call of
        # their own costs more than the work)
        with self._lock:
            index = self._first
            left = self._left
            if index == len(left):
                if not self.cycle:
                    return None
                self._left = left = self._times.copy()
                index = 0  # every turn is used at least once
                self.cycles += 1
            count = left[index] - 1
            left[index] = count
            if not count:
                after = index + 1
                while after < len(left) and not left[after]:
                    after += 1
                self._first = after
            else:
                self._first = index
            self.requests += 1
            turn = self.script.turns[index]
            self._played.append((index, turn, make, source))
            return index, turn

    @property
    def played(self) -> deque[PlayedTurn]:
        """The turns handed out, oldest first (the last ``keep`` of them when bounded)."""
        with self._lock:
            kept = list(self._played)
        return deque(
            (
                (item if isinstance(item, PlayedTurn) else PlayedTurn(*item[:2], item[2](item[3])))
                for item in kept
            ),
            self._played.maxlen,
        )

    def _skip_used(self, index: int) -> int:
        left = self._left
        while index < len(left) and not left[index]:
            index += 1
        return index

    def _next_open(self, request: TurnRequest) -> PlayedTurn | None:
        """``_scripted`` for a script whose turns accept any request: the first turn with
        uses left, without looking at the others."""
        index = self._first
        left = self._left
        if index == len(left):
            return None
        left[index] -= 1
        if not left[index]:
            self._first = self._skip_used(index + 1)
        return PlayedTurn(index, self.script.turns[index], request)

    def _scripted(self, request: TurnRequest) -> PlayedTurn | None:
        left = self._left
        for index, t in enumerate(self.script.turns):
            if left[index] and t.accepts(request):
                left[index] -= 1
                return PlayedTurn(index, t, request)
        return None

    def _exhausted_message(self, request: TurnRequest) -> str:
        left = [
            f"  turn {i}: {t.describe()}" for i, t in enumerate(self.script.turns) if self._left[i]
        ]
        shown = (
            request.input_text if len(request.input_text) <= 80 else request.input_text[:77] + "..."
        )
        head = (
            f"script {self.script.label()!r} has no turn for request #{self.requests} "
            f"(input {shown!r}, model {request.model!r}, wire {request.wire!r})"
        )
        if not left:
            return (
                f"{head}: all {len(self.script.turns)} turns were used. The code under test made "
                f"more requests than scripted: add a turn, or use times=N for repeats."
            )
        return head + ": no remaining turn matches it. Remaining:\n" + "\n".join(left)

    def unused(self) -> list[tuple[int, Turn]]:
        """Turns with uses left, with their indexes."""
        with self._lock:
            return [(i, t) for i, t in enumerate(self.script.turns) if self._left[i]]

    def uses_left(self, index: int) -> int:
        """How many more requests turn ``index`` may answer."""
        with self._lock:
            return self._left[index]

    def describe_unused(self, index: int, t: Turn) -> str:
        """``turn <i>: <turn>``, saying how often it was used when it was, but not enough
        (a ``times=2`` turn used once is partly used, not "never requested")."""
        left = self.uses_left(index)
        if left == t.times:
            return f"turn {index}: {t.describe()}"
        used = t.times - left
        return f"turn {index}: {t.describe()} partly used: {used} of {t.times} time(s)"

    def assert_all_used(self) -> None:
        """``UnusedTurns`` if any scripted turn was never requested."""
        __tracebackhide__ = True
        unused = self.unused()
        if unused:
            lines = "\n".join(f"  {self.describe_unused(i, t)}" for i, t in unused)
            raise UnusedTurns(
                f"script {self.script.label()!r}: {len(unused)} scripted turn(s) were never "
                f"requested by the code under test:\n{lines}\n"
                f"If that is expected, pass allow_unused_turns=True (marker or fixture option)."
            )
