"""The MCP servers of the fake ``claude``: ``--mcp-config`` read, and the ``mcp_servers`` and
``mcp__<server>__<tool>`` names ``system/init`` reports, as Claude Code 2.1.332 reports them
(observed with the bundled binary; docs/protocol-reference.md, *`claude`: MCP servers*).

Runs in the fake process (built-ins only, see ``_runtime``), imported only when
``--mcp-config`` is given. The fake connects to no server (docs/design.md, *The fake claude's
MCP servers*): a server's status comes from its configuration — ``failed`` for a stdio
server whose command cannot be found (the real CLI fails to spawn it too), ``connected``
otherwise — and a connected server's tools are the ``mcp__<server>__<tool>`` calls the script
makes.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["McpConfigError", "init_report", "load_servers"]


class McpConfigError(Exception):
    """An ``--mcp-config`` the real CLI refuses: ``str(error)`` is its stderr text (exit 1)."""


def _invalid(detail: str) -> McpConfigError:
    return McpConfigError(f"Error: Invalid MCP configuration:\n{detail}")


def _read(value: str, cwd: str, loads: Any) -> Any:
    """A config value: JSON text, else the path of a JSON file (relative to ``cwd``)."""
    try:
        return loads(value)
    except ValueError:
        pass
    path = value if value.startswith("/") else f"{cwd}/{value}"
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except OSError:
        raise _invalid(f"MCP config file not found: {path}") from None
    try:
        return loads(text)
    except ValueError:
        raise _invalid(f"MCP config file is not valid JSON: {path}") from None


_UNDEFINED = object()
#: zod's names for what it received instead of a record.
_JS_TYPES = {
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def _usable(config: Any) -> bool:
    """Whether the real CLI keeps the entry (observed: ``{}`` and unknown types are dropped
    without a word)."""
    if not isinstance(config, dict):
        return False
    kind = config.get("type", "stdio")
    if kind == "stdio":
        return isinstance(config.get("command"), str) and bool(config["command"])
    if kind in ("http", "sse", "ws"):
        return isinstance(config.get("url"), str)
    return bool(kind == "sdk")


def load_servers(values: list[str], cwd: str, loads: Any) -> dict[str, dict[str, Any]]:
    """The servers of every ``--mcp-config`` value, by name, in order (a later value's server
    replaces an earlier one of the same name)."""
    servers: dict[str, dict[str, Any]] = {}
    for value in values:
        config = _read(value, cwd, loads)
        entries = config.get("mcpServers", _UNDEFINED) if isinstance(config, dict) else None
        if not isinstance(entries, dict):
            received = _JS_TYPES.get(type(entries), "undefined")
            raise _invalid(f"mcpServers: Invalid input: expected record, received {received}")
        for name, entry in entries.items():
            if _usable(entry):
                servers[str(name)] = entry
    return servers


def _found(command: str, env: dict[str, str]) -> bool:
    """Whether ``command`` names an executable (a path, or a name on ``PATH``), without
    running it."""
    import posix

    if "/" in command:
        candidates = [command]
    else:
        candidates = [f"{d or '.'}/{command}" for d in env.get("PATH", "").split(":")]
    return any(posix.access(path, posix.X_OK) for path in candidates)


def _status(config: dict[str, Any], env: dict[str, str]) -> str:
    if config.get("type", "stdio") == "stdio" and not _found(config["command"], env):
        return "failed"
    return "connected"


def _config(config: dict[str, Any]) -> dict[str, Any] | None:
    """The configuration ``mcp_status`` shows (observed: stdio with ``args``, default ``[]``;
    none for an SDK server)."""
    kind = config.get("type", "stdio")
    if kind == "sdk":
        return None
    if kind == "stdio":
        shown = {"type": "stdio", "command": config["command"], "args": config.get("args") or []}
        keys: tuple[str, ...] = ("env",)
    else:
        shown = {"type": kind, "url": config["url"]}
        keys = ("headers",)
    shown.update((key, config[key]) for key in keys if key in config)
    return shown


def init_report(
    servers: dict[str, dict[str, Any]],
    tools: list[str],
    env: dict[str, str],
) -> tuple[list[dict[str, Any]], list[str]]:
    """The servers as ``mcp_status`` describes them (``system/init``'s ``mcp_servers`` is
    their ``name``, ``status`` and ``source``) and ``system/init``'s ``tools`` (``tools``:
    the built-in and scripted names without this report). As observed: servers in
    configuration order, the SDK's (``source: "sdk"``) after the others; the connected
    servers' tools after the built-in ones, sorted; a server's scripted tools are listed only
    if it is configured and connected (the real CLI has no tool of a server it was not
    given). ``serverInfo``, which only a connection tells, is left
    out."""
    report: list[dict[str, Any]] = []
    connected: list[str] = []
    ordered = sorted(servers.items(), key=lambda item: item[1].get("type") == "sdk")
    for name, config in ordered:
        status = _status(config, env)
        sdk = config.get("type") == "sdk"
        entry: dict[str, Any] = {"name": name, "status": status}
        if status == "failed":  # observed text, whatever the command
            entry["error"] = "ENOENT: no such file or directory, posix_spawn 'stdio'"
        shown = _config(config)
        if shown is not None:
            entry["config"] = shown
        entry["transport"] = config.get("type", "stdio")
        entry["scope"] = "dynamic"
        entry["source"] = "sdk" if sdk else "dynamic"
        if status == "connected":
            connected.append(name)
            prefix = f"mcp__{name}__"
            named = sorted(t[len(prefix) :] for t in tools if t.startswith(prefix))
            entry["tools"] = [{"name": tool, "annotations": {}} for tool in named]
        report.append(entry)
    ready = tuple(f"mcp__{name}__" for name in connected)
    builtin = [t for t in tools if not t.startswith("mcp__")]  # no server, no tool of it
    found = sorted(t for t in tools if t.startswith(ready)) if ready else []
    return report, builtin + found
