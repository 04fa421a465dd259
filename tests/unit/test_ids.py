from __future__ import annotations

import re

from stuntset.ids import IdGenerator, RandomIds, SequentialIds


def test_sequential_ids_count_per_prefix() -> None:
    ids = SequentialIds()
    assert [ids.new("run"), ids.new("tool"), ids.new("run")] == ["run-1", "tool-1", "run-2"]


def test_namespace_separates_generators() -> None:
    assert SequentialIds("a").new("run") == "run-a1"
    assert "namespace='a'" in repr(SequentialIds("a"))


def test_random_ids_are_unique_and_prefixed() -> None:
    ids = RandomIds()
    made = {ids.new("run") for _ in range(100)}
    assert len(made) == 100
    assert all(re.fullmatch(r"run-[0-9a-f]{12}", i) for i in made)
    assert isinstance(ids, IdGenerator)
    assert isinstance(SequentialIds(), IdGenerator)
    assert repr(ids) == "RandomIds()"


def test_random_ids_stay_unique_and_well_formed_across_batches() -> None:
    """Random parts come in batches (``_BATCH``): ids over several batches stay distinct."""
    from stuntset import ids as ids_module

    minted = [RandomIds().new("req") for _ in range(3 * ids_module._BATCH + 7)]
    assert len(set(minted)) == len(minted)
    assert all(re.fullmatch(r"req-[0-9a-f]{12}", value) for value in minted)
