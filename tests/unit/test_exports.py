from __future__ import annotations

import importlib

import pytest

import stuntset

PACKAGES = [
    "stuntset",
    "stuntset.script",
    "stuntset.providers",
    "stuntset.events",
    "stuntset.errors",
    "stuntset.checks",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_has_no_duplicates_and_names_real_objects(name: str) -> None:
    module = importlib.import_module(name)
    assert len(set(module.__all__)) == len(module.__all__)
    for symbol in module.__all__:
        assert getattr(module, symbol) is not None, f"{name}.{symbol}"


def test_every_lazy_top_level_name_is_public() -> None:
    assert set(stuntset._LAZY) == set(stuntset.__all__)
    assert set(stuntset.__all__) <= set(dir(stuntset))


def test_unknown_top_level_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        stuntset.nope  # type: ignore[attr-defined]  # noqa: B018


def test_importing_stuntset_stays_light() -> None:
    import subprocess
    import sys

    code = "import sys, stuntset; print(sorted(m for m in ('uvicorn', 'starlette', 'hypothesis', 'rich', 'click') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
