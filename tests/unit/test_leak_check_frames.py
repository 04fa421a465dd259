"""The leak check's frame readers (``_leak_check._entry``, ``_maker``, ``_origin``), called
directly: the audit hook that calls them runs with tracing off, so the coverage tier never
sees their lines from a leak test, and what they answer is pinned here."""

from __future__ import annotations

import sys
import threading

from stuntset import _leak_check


def test_the_maker_is_the_innermost_line_outside_the_standard_library() -> None:
    assert _leak_check._maker(sys._getframe()) == __file__
    assert _leak_check._maker(None) == ""


def test_the_entry_is_the_outermost_line_outside_the_standard_library() -> None:
    seen: list[str] = []
    thread = threading.Thread(target=lambda: seen.append(_leak_check._entry(sys._getframe())))
    thread.start()
    thread.join()
    # a thread's work entered at its target: this file (threading's own frames are stdlib)
    assert seen == [__file__]
    assert _leak_check._entry(None) == ""


def test_the_origin_is_the_tests_own_line() -> None:
    here = sys._getframe()
    origin = _leak_check._origin(here)
    assert origin.startswith(f"{__file__}:")
    assert origin.endswith(" in test_the_origin_is_the_tests_own_line")
    assert _leak_check._origin(None) == ""
