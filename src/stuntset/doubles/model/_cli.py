"""``stuntset serve``: the model double as a standalone server, for clients in any language.

Serves the given script (or ``happy_path``, over and over) at ``/openai/v1`` and
``/anthropic``, and every catalog scenario at ``/scenarios/<name>/openai/v1`` and
``/scenarios/<name>/anthropic``, until interrupted.
"""

from __future__ import annotations

import click
import uvicorn

from stuntset import scenarios
from stuntset.script import load_script

from .app import ModelApp
from .double import ModelDouble
from .serve import _listening_socket

__all__ = ["run_serve"]


def run_serve(host: str, port: int, script_path: str | None, cycle: bool) -> None:
    """Serve in the foreground until Ctrl-C (uvicorn handles the signals)."""
    if script_path is None:
        double = ModelDouble(scenarios.build("happy_path"), cycle=True)
    else:
        double = ModelDouble(load_script(script_path), cycle=cycle)
    sock = _listening_socket(host, port)
    bound = sock.getsockname()[1]
    base = f"http://{host}:{bound}"
    click.echo(f"stuntset model double on {base}")
    click.echo(f"  OpenAI (Chat Completions, Responses): {base}/openai/v1")
    click.echo(f"  Anthropic (Messages):                 {base}/anthropic")
    click.echo(f"  one scenario, e.g. rate_limited:      {base}/scenarios/rate_limited/openai/v1")
    click.echo(f"  scenarios: {', '.join(n for n in scenarios.names() if n != 'spawn_missing')}")
    click.echo("Ctrl-C to stop.", nl=True)
    config = uvicorn.Config(
        ModelApp(double),
        http="httptools",
        loop="asyncio",
        lifespan="off",
        access_log=False,
        log_level="warning",
        timeout_graceful_shutdown=1,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it handled: a normal stop
        pass
    finally:
        double.close()
        sock.close()
