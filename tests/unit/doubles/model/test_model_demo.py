"""The model doubles' section of ``stuntset demo``: the catalog on each wire, all ok."""

from __future__ import annotations

import pytest

from stuntset import scenarios
from stuntset.doubles.model._demo import model_rows
from stuntset.wires import WIRE_NAMES


@pytest.mark.slow
def test_every_scenario_on_every_wire_shows_what_the_client_saw() -> None:
    rows = model_rows()
    applicable = [s.name for s in scenarios.all() if s.name != "spawn_missing"]
    assert [(r.layer, r.scenario) for r in rows] == [
        (f"model ({wire})", name) for wire in WIRE_NAMES for name in applicable
    ]
    assert all(r.ok for r in rows), [r for r in rows if not r.ok]
    seen = {(r.layer, r.scenario): r.outcome for r in rows}
    assert seen["model (anthropic-messages)", "overloaded"] == "HTTP 529 → 36 chars"
    assert seen["model (openai-chat)", "stuck"] == "read timeout"
    assert seen["model (openai-responses)", "out_of_order"].startswith("out of order")
    assert "connection dropped" in seen["model (openai-chat)", "crash_mid_turn"]
    assert seen["model (gemini)", "overloaded"] == "HTTP 503 → 36 chars"
    assert seen["model (azure-openai-chat)", "auth_expired_mid_run"].endswith("HTTP 401")
    assert seen["model (gemini)", "tool_use"] == "25 chars, call read_file → 31 chars"
    assert seen["model (bedrock-converse)", "rate_limited"] == "HTTP 429 → 39 chars"
    assert seen["model (bedrock-invoke)", "garbage_bytes"] == (
        "a message that fails its checks (CRC32, length)"
    )
    assert seen["model (gemini)", "out_of_order"] == (
        "out of order: content after the finishing chunk"
    )
