"""Agent providers: the normalized interface and the in-process doubles.

``AgentProvider`` / ``AgentRun`` are the interface every adapter implements (Claude Code,
Codex, pydantic-ai adapters build on it). ``ScriptedProvider`` plays a script;
``StuckProvider`` never finishes a run until told to.
"""

from stuntset.providers.base import (
    AgentProvider,
    AgentRun,
    Call,
    Capabilities,
    Interrupted,
    Responded,
    Started,
)
from stuntset.providers.scripted import ScriptedProvider, ScriptedRun, crash_for
from stuntset.providers.stuck import StuckProvider

__all__ = [
    "AgentProvider",
    "AgentRun",
    "Call",
    "Capabilities",
    "Interrupted",
    "Responded",
    "ScriptedProvider",
    "ScriptedRun",
    "Started",
    "StuckProvider",
    "crash_for",
]
