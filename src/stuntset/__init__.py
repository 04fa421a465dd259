"""stuntset: a film set for testing AI-agent software.

Doubles that speak the real wire protocols, driven by scripts; one catalog of failures; a
normalized event vocabulary and its contract; deterministic seams; and a pytest plugin.

The most used names are here; each subpackage has the rest (``stuntset.events``,
``stuntset.script``, ``stuntset.scenarios``, ``stuntset.providers``…).
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what type checkers and IDEs read; tests/unit/test_exports.py checks it
    # against _PUBLIC below (the ``X as X`` form re-exports each name explicitly)
    from stuntset import events as events
    from stuntset import scenarios as scenarios
    from stuntset.clock import Clock as Clock
    from stuntset.clock import FakeClock as FakeClock
    from stuntset.clock import SystemClock as SystemClock
    from stuntset.contract import ContractChecker as ContractChecker
    from stuntset.contract import check_events as check_events
    from stuntset.doubles.cli import install_cli as install_cli
    from stuntset.doubles.model.serve import serve as serve
    from stuntset.doubles.model.transport import transport as transport
    from stuntset.driver import drive as drive
    from stuntset.errors import CapabilityError as CapabilityError
    from stuntset.errors import ContractViolation as ContractViolation
    from stuntset.errors import HarnessFailure as HarnessFailure
    from stuntset.errors import ScriptError as ScriptError
    from stuntset.errors import ScriptExhausted as ScriptExhausted
    from stuntset.errors import StuntsetError as StuntsetError
    from stuntset.errors import UnknownScenario as UnknownScenario
    from stuntset.errors import UnstubbedCall as UnstubbedCall
    from stuntset.errors import UnusedTurns as UnusedTurns
    from stuntset.errors import UsageError as UsageError
    from stuntset.errors import WaitTimeout as WaitTimeout
    from stuntset.ids import IdGenerator as IdGenerator
    from stuntset.ids import RandomIds as RandomIds
    from stuntset.ids import SequentialIds as SequentialIds
    from stuntset.providers import AgentProvider as AgentProvider
    from stuntset.providers import AgentRun as AgentRun
    from stuntset.providers import Capabilities as Capabilities
    from stuntset.providers import ScriptedProvider as ScriptedProvider
    from stuntset.providers import StuckProvider as StuckProvider
    from stuntset.script import Match as Match
    from stuntset.script import Script as Script
    from stuntset.script import Turn as Turn
    from stuntset.script import TurnRequest as TurnRequest
    from stuntset.script import load_script as load_script
    from stuntset.script import loads_script as loads_script
    from stuntset.script import turn as turn
    from stuntset.seams import current_clock as current_clock
    from stuntset.seams import current_ids as current_ids
    from stuntset.seams import deterministic as deterministic
    from stuntset.seams import use_seams as use_seams
    from stuntset.waiting import collect_events as collect_events
    from stuntset.waiting import wait_for as wait_for
    from stuntset.waiting import wait_for_async as wait_for_async
    from stuntset.wires import Framing as Framing

# `stub` is a function in a submodule of the same name. Importing a submodule rebinds the
# package's attribute to it (`import stuntset.stub` anywhere, even after `stuntset.stub` was
# looked up), so the function is bound here, after its module (stdlib-only, cheap) is loaded.
from stuntset.stub import stub as stub

__version__ = "0.1.0"

#: The public API, declared once: the module each public name comes from (``stuntset``: the
#: name is that submodule itself). The lazy table and ``__all__`` are derived from it.
_PUBLIC: dict[str, str] = {
    "stuntset": "events scenarios",
    "stuntset.clock": "Clock FakeClock SystemClock",
    "stuntset.contract": "ContractChecker check_events",
    "stuntset.driver": "drive",
    "stuntset.errors": "CapabilityError ContractViolation HarnessFailure ScriptError "
    "ScriptExhausted StuntsetError UnknownScenario UnstubbedCall UnusedTurns UsageError "
    "WaitTimeout",
    "stuntset.ids": "IdGenerator RandomIds SequentialIds",
    "stuntset.providers": "AgentProvider AgentRun Capabilities ScriptedProvider StuckProvider",
    "stuntset.script": "Match Script Turn TurnRequest load_script loads_script turn",
    "stuntset.seams": "current_clock current_ids deterministic use_seams",
    "stuntset.stub": "stub",
    "stuntset.waiting": "collect_events wait_for wait_for_async",
    "stuntset.wires": "Framing",
    "stuntset.doubles.model": "serve transport",
    "stuntset.doubles.cli": "install_cli",
}

# Every name loads on first use: `import stuntset` (and the pytest plugin, which pytest loads
# before coverage starts) costs nothing until a name is touched.
_LAZY: dict[str, str] = {
    name: f"stuntset.{name}" if module == "stuntset" else module
    for module, names in _PUBLIC.items()
    for name in names.split()
}
_MODULES = frozenset(_PUBLIC["stuntset"].split())


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


__all__ = sorted(_LAZY)
