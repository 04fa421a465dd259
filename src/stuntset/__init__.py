"""stuntset: a film set for testing AI-agent software.

Doubles that speak the real wire protocols, driven by scripts; one catalog of failures; a
normalized event vocabulary and its contract; deterministic seams; and a pytest plugin.

The most used names are here; each subpackage has the rest (``stuntset.events``,
``stuntset.script``, ``stuntset.scenarios``, ``stuntset.providers``…).
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stuntset import events, scenarios
    from stuntset.clock import Clock, FakeClock, SystemClock
    from stuntset.contract import ContractChecker, check_events
    from stuntset.doubles.cli import install_cli
    from stuntset.doubles.model import serve, transport
    from stuntset.doubles.model._reply import Framing
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
    from stuntset.waiting import collect_events, wait_for, wait_for_async

# `stub` is a function in a submodule of the same name. Importing a submodule rebinds the
# package's attribute to it (`import stuntset.stub` anywhere, even after `stuntset.stub` was
# looked up), so the function is bound here, after its module (stdlib-only, cheap) is loaded.
from stuntset.stub import stub

__version__ = "0.1.0"

# Every name loads on first use: `import stuntset` (and the pytest plugin, which pytest loads
# before coverage starts) costs nothing until a name is touched.
_LAZY: dict[str, str] = {
    "events": "stuntset.events",
    "scenarios": "stuntset.scenarios",
    **dict.fromkeys(["Clock", "FakeClock", "SystemClock"], "stuntset.clock"),
    **dict.fromkeys(["ContractChecker", "check_events"], "stuntset.contract"),
    "drive": "stuntset.driver",
    **dict.fromkeys(
        [
            "CapabilityError",
            "ContractViolation",
            "HarnessFailure",
            "ScriptError",
            "ScriptExhausted",
            "StuntsetError",
            "UnknownScenario",
            "UnstubbedCall",
            "UnusedTurns",
            "UsageError",
            "WaitTimeout",
        ],
        "stuntset.errors",
    ),
    **dict.fromkeys(["IdGenerator", "RandomIds", "SequentialIds"], "stuntset.ids"),
    **dict.fromkeys(
        ["AgentProvider", "AgentRun", "Capabilities", "ScriptedProvider", "StuckProvider"],
        "stuntset.providers",
    ),
    **dict.fromkeys(
        ["Match", "Script", "Turn", "TurnRequest", "load_script", "loads_script", "turn"],
        "stuntset.script",
    ),
    **dict.fromkeys(
        ["current_clock", "current_ids", "deterministic", "use_seams"], "stuntset.seams"
    ),
    "stub": "stuntset.stub",
    **dict.fromkeys(["collect_events", "wait_for", "wait_for_async"], "stuntset.waiting"),
    **dict.fromkeys(["Framing", "serve", "transport"], "stuntset.doubles.model"),
    "install_cli": "stuntset.doubles.cli",
}


_MODULES = frozenset({"events", "scenarios"})


def __getattr__(name: str) -> object:
    import importlib

    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'stuntset' has no attribute {name!r}")
    loaded = importlib.import_module(module)
    value = loaded if name in _MODULES else getattr(loaded, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AgentProvider",
    "AgentRun",
    "Capabilities",
    "CapabilityError",
    "Clock",
    "ContractChecker",
    "ContractViolation",
    "FakeClock",
    "Framing",
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
    "install_cli",
    "load_script",
    "loads_script",
    "scenarios",
    "serve",
    "stub",
    "transport",
    "turn",
    "use_seams",
    "wait_for",
    "wait_for_async",
]
