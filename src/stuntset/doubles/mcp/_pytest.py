"""The logic behind the ``mcp_double`` fixture and marker, kept out of the pytest plugin.

Marker: ``@pytest.mark.mcp_double(script_or_scenario_or_path=None, *, tools=(),
resources=(), prompts=(), auth_token=None, name=..., time_scale=1.0,
allow_unused_turns=False, **scenario_params)``. A path names an MCP spec file (``.toml`` or
``.json``: the server's tools, resources and prompts beside the script's turns).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stuntset._plugin_support import resolve_script_path, script_from
from stuntset.errors import UsageError

from .double import McpDouble
from .spec import McpServerSpec, load_spec

__all__ = ["mcp_double_from_marker"]

_SERVER_OPTIONS = ("tools", "resources", "prompts", "auth_token", "name", "version", "instructions")


def mcp_double_from_marker(
    args: Sequence[Any], kwargs: Mapping[str, Any], where: str, root: Path, base: Path | None
) -> tuple[McpDouble, bool]:
    """The fixture's double (its files under ``root``) and its ``allow_unused_turns``."""
    __tracebackhide__ = True
    options = dict(kwargs)
    allow = options.pop("allow_unused_turns", False)
    if not isinstance(allow, bool):
        raise UsageError(f"{where}: allow_unused_turns must be True or False, got {allow!r}")
    time_scale = options.pop("time_scale", 1.0)
    server = {key: options.pop(key) for key in _SERVER_OPTIONS if key in options}
    spec: Any = None
    if args:
        first = args[0]
        if isinstance(first, McpServerSpec):
            spec = first
        elif isinstance(first, Path) or (
            isinstance(first, str) and first.endswith((".toml", ".json"))
        ):
            spec = load_spec(resolve_script_path(first, base, where))
        else:
            spec = script_from(first, options, where, base)
            options = {}
    if options:
        raise UsageError(f"{where}: unknown mcp_double options {sorted(options)}")
    if isinstance(spec, McpServerSpec) and server:
        raise UsageError(f"{where}: {sorted(server)} given with a whole MCP spec")
    root.mkdir(parents=True, exist_ok=True)
    double = McpDouble(spec, time_scale=time_scale, root=root, **server)
    return double, allow
