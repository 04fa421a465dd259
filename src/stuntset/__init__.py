"""stuntset: a film set for testing AI-agent software.

Doubles that speak the real wire protocols, driven by scripts; one catalog of failures; a
normalized event vocabulary and its contract; deterministic seams; and a pytest plugin.

The most used names are here; each subpackage has the rest (``stuntset.events``,
``stuntset.script``, ``stuntset.scenarios``, ``stuntset.providers``…).
"""

from stuntset import events, scenarios
from stuntset.clock import Clock, FakeClock, SystemClock
from stuntset.contract import ContractChecker, check_events
from stuntset.driver import drive
from stuntset.errors import (
    CapabilityError,
    ContractViolation,
    HarnessFailure,
    ScriptError,
    ScriptExhausted,
    StuntsetError,
    UnknownScenario,
    UnstubbedCall,
    UnusedTurns,
    UsageError,
    WaitTimeout,
)
from stuntset.ids import IdGenerator, RandomIds, SequentialIds
from stuntset.providers import (
    AgentProvider,
    AgentRun,
    Capabilities,
    ScriptedProvider,
    StuckProvider,
)
from stuntset.script import Match, Script, Turn, TurnRequest, load_script, loads_script, turn
from stuntset.seams import current_clock, current_ids, deterministic, use_seams
from stuntset.stub import stub
from stuntset.waiting import collect_events, wait_for, wait_for_async

__version__ = "0.1.0"

# Heavier pieces load on first use, so `import stuntset` stays cheap.
_LAZY = {
    "serve": "stuntset.doubles.model",
    "transport": "stuntset.doubles.model",
    "install_cli": "stuntset.doubles.cli",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'stuntset' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "AgentProvider",
    "AgentRun",
    "Capabilities",
    "CapabilityError",
    "Clock",
    "ContractChecker",
    "ContractViolation",
    "FakeClock",
    "HarnessFailure",
    "IdGenerator",
    "Match",
    "RandomIds",
    "Script",
    "ScriptError",
    "ScriptExhausted",
    "ScriptedProvider",
    "SequentialIds",
    "StuckProvider",
    "StuntsetError",
    "SystemClock",
    "Turn",
    "TurnRequest",
    "UnknownScenario",
    "UnstubbedCall",
    "UnusedTurns",
    "UsageError",
    "WaitTimeout",
    "check_events",
    "collect_events",
    "current_clock",
    "current_ids",
    "deterministic",
    "drive",
    "events",
    "load_script",
    "loads_script",
    "scenarios",
    "stub",
    "turn",
    "use_seams",
    "wait_for",
    "wait_for_async",
]
