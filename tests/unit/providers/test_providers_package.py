"""``stuntset.providers``: the adapters load on first use, by name."""

from __future__ import annotations

import pytest


def test_an_adapter_loads_by_name() -> None:
    import stuntset.providers
    from stuntset.providers.scripted import ScriptedProvider

    assert stuntset.providers.ScriptedProvider is ScriptedProvider


def test_an_unknown_name_is_an_attribute_error_naming_the_package() -> None:
    import stuntset.providers

    with pytest.raises(
        AttributeError, match=r"module 'stuntset.providers' has no attribute 'Nope'"
    ):
        stuntset.providers.Nope  # noqa: B018
