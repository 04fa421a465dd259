"""Agent providers: the normalized interface and the in-process doubles.

``AgentProvider`` / ``AgentRun`` are the interface every adapter implements (Claude Code,
Codex, pydantic-ai adapters build on it). ``ScriptedProvider`` plays a script;
``StuckProvider`` never finishes a run until told to. Adapters over real runtimes load on
first use, so the core never imports their optional SDKs: ``PydanticAIProvider``
(``stuntset[pydantic-ai]``), ``ClaudeCodeProvider`` (``stuntset[claude]``) and
``CodexProvider`` (``stuntset[codex]``).
"""

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from stuntset.providers.claude_code import ClaudeCodeProvider
    from stuntset.providers.codex import CodexProvider
    from stuntset.providers.pydantic_ai import PydanticAIProvider

#: Adapters whose SDK is an optional extra: name → module, imported on first use.
_ADAPTERS = {
    "ClaudeCodeProvider": "stuntset.providers.claude_code",
    "CodexProvider": "stuntset.providers.codex",
    "PydanticAIProvider": "stuntset.providers.pydantic_ai",
}


def __getattr__(name: str) -> Any:
    if name in _ADAPTERS:
        import importlib

        return getattr(importlib.import_module(_ADAPTERS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AgentProvider",
    "AgentRun",
    "Call",
    "Capabilities",
    "ClaudeCodeProvider",
    "CodexProvider",
    "Interrupted",
    "PydanticAIProvider",
    "Responded",
    "ScriptedProvider",
    "ScriptedRun",
    "Started",
    "StuckProvider",
    "crash_for",
]
