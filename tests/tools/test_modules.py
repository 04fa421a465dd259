"""tests/_modules.py: a library first imported inside an in-process pytester run is the same
module object after it; the inner run's own test files are still dropped."""

from __future__ import annotations

import sys

import pytest

#: Small standard-library modules nothing in the suite imports.
_CANDIDATES = ("colorsys", "graphlib", "zipapp", "tabnanny", "pyclbr")


def test_a_library_imported_inside_an_inline_run_is_kept_and_its_test_file_dropped(
    pytester: pytest.Pytester,
) -> None:
    fresh = [name for name in _CANDIDATES if name not in sys.modules]
    assert fresh, f"every one of {_CANDIDATES} is imported already: name another"
    name = fresh[0]
    pytester.makepyfile(
        test_inner=f"""
        import sys

        def test_imports():
            import {name}
            sys.modules["{name}"].__inner_mark__ = True
        """
    )
    result = pytester.inline_run("-q", "-p", "no:randomly")
    result.assertoutcome(passed=1)
    kept = sys.modules.get(name)
    assert kept is not None
    assert getattr(kept, "__inner_mark__", False)
    assert "test_inner" not in sys.modules


def test_without_it_pytester_drops_the_library(pytester: pytest.Pytester) -> None:
    """The failure it prevents: pytester's own rule drops a library imported inside."""
    from _pytest.pytester import SysModulesSnapshot

    import _modules

    fresh = [name for name in _CANDIDATES if name not in sys.modules]
    assert fresh
    name = fresh[-1]
    bare = object.__new__(SysModulesSnapshot)
    _modules._snapshot_init(bare, lambda n: n.startswith(("zope", "readline")))
    __import__(name)
    bare.restore()
    assert name not in sys.modules
