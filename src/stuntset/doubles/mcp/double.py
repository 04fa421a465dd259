"""``McpDouble``: a scripted MCP server a test points its client at, over stdio (a command to
spawn) or Streamable HTTP (a URL), with the journal of every call."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from stuntset.errors import ScriptExhausted, UnusedTurns, UsageError
from stuntset.script import Script, ScriptPlayer

from .journal import JournalWriter, McpCall, read_journal
from .spec import McpPrompt, McpResource, McpServerSpec, McpTool, dumps_spec, spec_of

__all__ = ["McpDouble"]


def _toml_string(value: str) -> str:
    return msgspec.json.encode(value).decode()


class McpDouble:
    """A scripted MCP server.

    ::

        double = McpDouble(Script.of([ToolCall("add"), ToolResult("3")]))
        command = double.stdio_command()            # spawn it: mcp's stdio_client, claude…
        with double.serve_http() as server:         # or connect to server.url
            ...
        assert double.tool_calls("add")[0].arguments == {"a": 1, "b": 2}

    ``time_scale`` multiplies scripted delays (they are real time: the server runs in its own
    process or thread). ``root`` is where the spec and the journal live (a temp folder by
    default, removed by ``close()``).
    """

    def __init__(
        self,
        script: McpServerSpec | Script | Sequence[Any] | None = None,
        *,
        tools: Sequence[McpTool | str] = (),
        resources: Sequence[McpResource] = (),
        prompts: Sequence[McpPrompt] = (),
        time_scale: float = 1.0,
        root: str | Path | None = None,
        **server: Any,
    ) -> None:
        if isinstance(script, McpServerSpec):
            self.spec = script
        else:
            self.spec = spec_of(script, tools=tools, resources=resources, prompts=prompts, **server)
        self.time_scale = time_scale
        self._own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="stuntset-mcp-") if root is None else root)
        self.journal_dir = self.root / "journal"
        self.journal_dir.mkdir(parents=True, exist_ok=True)
        self._spec_file: Path | None = None
        self._player = ScriptPlayer(self.spec.call_script())
        self._dispatchers: list[Any] = []
        self._servers: list[Any] = []

    def play(
        self,
        script: McpServerSpec | Script | Sequence[Any] | None = None,
        *,
        tools: Sequence[McpTool | str] = (),
        resources: Sequence[McpResource] = (),
        prompts: Sequence[McpPrompt] = (),
        **server: Any,
    ) -> McpDouble:
        """Serve this script (or spec) from now on: before any client connects."""
        if self._servers or (self._spec_file is not None and read_journal(self.journal_dir)):
            raise UsageError(
                "play() after a client connected: configure the MCP double before serving it"
            )
        if isinstance(script, McpServerSpec):
            self.spec = script
        else:
            self.spec = spec_of(script, tools=tools, resources=resources, prompts=prompts, **server)
        self._spec_file = None
        self._player = ScriptPlayer(self.spec.call_script())
        return self

    # --- stdio -------------------------------------------------------------------------------

    @property
    def spec_file(self) -> Path:
        """The spec as JSON, for a server in another process (written on first use)."""
        if self._spec_file is None:
            path = self.root / "spec.json"
            path.write_text(dumps_spec(self.spec), encoding="utf-8")
            self._spec_file = path
        return self._spec_file

    def stdio_command(self) -> list[str]:
        """The command (argv) that serves this double on stdio: give it to the client to
        spawn. Each process plays the script from its start."""
        return [
            sys.executable,
            "-m",
            "stuntset.doubles.mcp.stdio",
            "--spec",
            str(self.spec_file),
            "--journal",
            str(self.journal_dir),
            "--time-scale",
            repr(self.time_scale),
        ]

    def claude_config(self, name: str = "stuntset") -> dict[str, Any]:
        """``--mcp-config`` JSON for Claude Code (``mcpServers``), serving on stdio."""
        command, *args = self.stdio_command()
        return {"mcpServers": {name: {"type": "stdio", "command": command, "args": args}}}

    def codex_config(self, name: str = "stuntset", *, approve: bool = True) -> str:
        """A ``[mcp_servers.<name>]`` table for Codex's ``config.toml``, serving on stdio.

        ``required = true``: Codex waits for the server before the turn (an optional server
        still starting is left out of the model's tools). ``approve`` pre-approves its tools
        (``exec`` runs with approval policy ``never``, which refuses a tool needing approval).
        """
        command, *args = self.stdio_command()
        lines = [
            f"[mcp_servers.{name}]",
            f"command = {_toml_string(command)}",
            f"args = [{', '.join(_toml_string(a) for a in args)}]",
            "required = true",
            "startup_timeout_sec = 60",
        ]
        if approve:
            lines.append('default_tools_approval_mode = "approve"')
        return "\n".join(lines) + "\n"

    # --- HTTP --------------------------------------------------------------------------------

    def serve_http(self, *, port: int = 0, header_timeout: float | None = None) -> Any:
        """Start serving on ``http://127.0.0.1:<port>/mcp`` (a free port by default); returns
        the ``McpHttpServer`` (a context manager; ``close()`` also stops it). A connection
        that sends no whole request head within ``header_timeout`` seconds (default
        ``HEADER_TIMEOUT``, 10) of its accept or of its last response is closed."""
        from ._plan import Dispatcher
        from ._sdk import require_mcp
        from .http import McpHttpServer

        require_mcp()
        dispatcher = Dispatcher(
            self.spec,
            JournalWriter(self.journal_dir),
            transport="http",
            time_scale=self.time_scale,
            player=self._player,
        )
        server = McpHttpServer(dispatcher, port=port, header_timeout=header_timeout)
        self._dispatchers.append(dispatcher)
        self._servers.append(server)
        return server

    # --- the journal ---------------------------------------------------------------------------

    @property
    def calls(self) -> list[McpCall]:
        """Every message clients sent, in arrival order, across transports and processes."""
        return read_journal(self.journal_dir)

    def tool_calls(self, tool: str | None = None) -> list[McpCall]:
        """The ``tools/call`` requests (of ``tool``, if given)."""
        return [
            call
            for call in self.calls
            if call.method == "tools/call" and (tool is None or call.tool == tool)
        ]

    def methods(self) -> list[str]:
        """The method of every message, in order (``initialize``, ``tools/list``…)."""
        return [call.method for call in self.calls if call.method is not None]

    def check(self, *, allow_unused_turns: bool = False) -> None:
        """``ScriptExhausted`` if a call found no turn; ``UnusedTurns`` if a scripted turn was
        never played (counted over every server of this double)."""
        __tracebackhide__ = True
        calls = self.calls
        exhausted = [c for c in calls if c.outcome == "exhausted"]
        if exhausted:
            first = exhausted[0]
            message = first.result[1] if isinstance(first.result, list) else first.result
            raise ScriptExhausted(
                f"{len(exhausted)} MCP tool call(s) found no scripted turn; the first: {message}"
            )
        if allow_unused_turns:
            return
        used: dict[int, int] = {}
        for call in calls:
            if call.turn is not None:
                used[call.turn] = used.get(call.turn, 0) + 1
        unused = [
            f"  turn {i}: {t.describe()}"
            for i, t in enumerate(self.spec.script.turns)
            if used.get(i, 0) < t.times
        ]
        if unused:
            raise UnusedTurns(
                f"MCP double {self.spec.name!r}: {len(unused)} scripted turn(s) were never "
                f"called by the client:\n" + "\n".join(unused) + "\n"
                "If that is expected, pass allow_unused_turns=True."
            )

    def close(self) -> None:
        """Stop the HTTP servers and remove the temp folder (if it was ours)."""
        for server in self._servers:
            server.close()
        self._servers.clear()
        for dispatcher in self._dispatchers:
            dispatcher.journal.close()
        self._dispatchers.clear()
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> McpDouble:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
