"""``stuntset mcp serve``: the MCP double as a standalone server, on stdio (for a client that
spawns it: ``"command": "stuntset", "args": ["mcp", "serve", "--stdio", ...]``) or on a port
(Streamable HTTP at ``/mcp``). Without ``--spec`` it serves one tool, ``echo``, that answers
its arguments as JSON, forever."""

from __future__ import annotations

import json
import math
from pathlib import Path

import click

from stuntset import scenarios
from stuntset._bind import check_bind, listening_socket
from stuntset.doubles.mcp._plan import Dispatcher
from stuntset.doubles.mcp.journal import JournalWriter
from stuntset.doubles.mcp.spec import MCP_WIRE, McpServerSpec, McpTool, load_spec
from stuntset.errors import UsageError
from stuntset.script import Script, Text, TurnRequest

__all__ = ["default_spec", "run_mcp_serve"]


def _echo(request: TurnRequest) -> list[Text]:
    return [Text(json.dumps(request.body.get("arguments") or {}, sort_keys=True))]


def default_spec() -> McpServerSpec:
    """One ``echo`` tool answering its arguments, forever."""
    return McpServerSpec(
        script=Script.from_function(_echo, name="echo"),
        tools=(McpTool(name="echo", description="Answers its arguments as JSON"),),
    )


def _spec(spec_path: str | None, scenario: str | None) -> McpServerSpec:
    if spec_path is not None and scenario is not None:
        raise UsageError("--spec and --scenario: give one of them")
    if spec_path is not None:
        return load_spec(spec_path)
    if scenario is not None:
        script = MCP_WIRE.check(scenarios.build(scenario))
        return McpServerSpec(script=script, tools=(McpTool(name="echo"),))
    return default_spec()


def run_mcp_serve(
    *,
    stdio: bool,
    host: str,
    port: int,
    spec_path: str | None,
    scenario: str | None,
    journal: str | None,
    time_scale: float,
    allow_remote: bool,
) -> None:
    """Serve until stdin ends (``--stdio``) or until Ctrl-C (a port)."""
    if not (math.isfinite(time_scale) and time_scale >= 0):
        raise UsageError(f"--time-scale {time_scale}: must be a finite number, 0 or more")
    spec = _spec(spec_path, scenario)
    from stuntset.doubles.mcp._sdk import require_mcp

    require_mcp()
    folder = Path(journal) if journal else None
    if stdio:
        from stuntset.doubles.mcp.stdio import run_stdio

        run_stdio(spec, folder, time_scale=time_scale)
        return
    warning = check_bind(host, port, allow_remote=allow_remote)
    sock = listening_socket(host, port)
    import uvicorn

    from stuntset._uvicorn_server import PromptServer, header_deadline
    from stuntset.doubles.mcp.http import LOOPBACK_HOSTS, build_http_app

    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    dispatcher = Dispatcher(spec, JournalWriter(folder), transport="http", time_scale=time_scale)
    loopback = warning is None
    app = build_http_app(
        dispatcher, crash_process=True, allowed_hosts=LOOPBACK_HOSTS if loopback else None
    )
    if warning:
        click.echo(warning, err=True)
    click.echo(f"stuntset MCP double {spec.name!r} on http://{host}:{sock.getsockname()[1]}/mcp")
    click.echo("Ctrl-C to stop.")
    config = uvicorn.Config(
        app,
        loop="asyncio",
        http=header_deadline(),
        lifespan="on",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=1,
    )
    try:
        PromptServer(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        dispatcher.journal.close()
        sock.close()
