"""``stuntset serve``: the model double as a standalone server, for clients in any language.

Serves the given script (or ``happy_path``, over and over) at ``/openai/v1`` and
``/anthropic``, every catalog scenario at ``/scenarios/<name>/openai/v1`` and
``/scenarios/<name>/anthropic`` (``/scenarios/<name>;param=value/…`` with parameters), and
the control API under ``/_stuntset/`` (stages: ``control``), until interrupted.

A long-running server among real (and bad) clients: it remembers the last ``journal``
requests only, refuses bodies over ``max_body`` bytes with the provider's 413, closes
connections whose request does not arrive within ``request_timeout`` seconds, holds at most
``max_connections`` connections (see ``stuntset.doubles.model._server``), and its logging never blocks serving.
"""

from __future__ import annotations

import gc
import logging
import math
from dataclasses import dataclass
from typing import Any

import click
import uvicorn

from stuntset import scenarios
from stuntset._bind import check_bind, listening_socket
from stuntset._uvicorn_server import PromptServer
from stuntset.doubles.model._lane import lane_protocol
from stuntset.doubles.model._server import (
    DroppingLogHandler,
    Guard,
    describe_stats,
    guarded_protocol,
    install_log_handler,
    raise_fd_limit,
)
from stuntset.doubles.model.app import ModelApp
from stuntset.doubles.model.double import ModelDouble
from stuntset.errors import UsageError
from stuntset.script import load_script
from stuntset.wires import API_PROVIDERS

__all__ = ["ServeOptions", "run_serve"]

#: File descriptors kept free of connections (the listener, stdio, the log writer, imports).
_FD_MARGIN = 64


@dataclass(frozen=True)
class ServeOptions:
    """What ``stuntset serve`` takes besides the script (defaults: the command's)."""

    journal: int = 1000
    max_body: int = 32 * 1024 * 1024
    request_timeout: float = 10.0
    keep_alive: float = 5.0
    max_connections: int = 1024
    allow_remote: bool = False
    console: bool = False
    #: ``GET /stuntset/verdicts`` (the resilience verdicts so far), and printed at exit.
    verdicts: bool = False


def _check(options: ServeOptions) -> None:
    if options.journal < 0:
        raise UsageError(f"--journal {options.journal}: must be 0 or more (requests to keep)")
    if options.max_body < 1:
        raise UsageError(f"--max-body {options.max_body}: must be at least 1 (bytes)")
    if not (math.isfinite(options.request_timeout) and options.request_timeout > 0):
        raise UsageError(
            f"--request-timeout {options.request_timeout}: must be a finite number of seconds "
            f"above 0"
        )
    if not (math.isfinite(options.keep_alive) and options.keep_alive > 0):
        raise UsageError(
            f"--keep-alive {options.keep_alive}: must be a finite number of seconds above 0"
        )
    if options.max_connections < 1:
        raise UsageError(f"--max-connections {options.max_connections}: must be at least 1")


def run_serve(
    host: str,
    port: int,
    script_path: str | None,
    cycle: bool,
    options: ServeOptions | None = None,
) -> None:
    """Serve in the foreground until Ctrl-C (uvicorn handles the signals)."""
    options = options or ServeOptions()
    _check(options)
    warning = check_bind(host, port, allow_remote=options.allow_remote)
    if script_path is None:
        double = ModelDouble(scenarios.build("happy_path"), cycle=True, keep=options.journal)
    else:
        double = ModelDouble(load_script(script_path), cycle=cycle, keep=options.journal)
    limit = raise_fd_limit(options.max_connections + _FD_MARGIN)
    guard = Guard(
        request_timeout=options.request_timeout,
        max_connections=max(1, min(options.max_connections, limit - _FD_MARGIN)),
    )
    sock = listening_socket(host, port, backlog=min(guard.max_connections, 4096))
    bound = sock.getsockname()[1]
    base = f"http://{host}:{bound}"
    if warning:
        click.echo(warning, err=True)
    click.echo(f"stuntset model double on {base}")
    for api in API_PROVIDERS:
        click.echo(f"  {api.title + ':':<38}{base}{api.client_path}")
    click.echo(f"  one scenario, e.g. rate_limited:      {base}/scenarios/rate_limited/openai/v1")
    click.echo(f"  scenarios: {', '.join(n for n in scenarios.names() if n != 'spawn_missing')}")
    click.echo(
        f"  with parameters:                      {base}/scenarios/rate_limited;failures=2/openai/v1"
    )
    click.echo(f"  control API (stages, journals):       {base}/_stuntset/openapi.json")
    model_app = ModelApp(double, max_body=options.max_body)
    app: Any = model_app
    if options.console:
        from stuntset.console import with_console
        from stuntset.runtime.security import new_token

        token = new_token()
        app = with_console(app, double, port=bound, token=token)
        click.echo(f"  console: {base}/console/?token={token}")
    if options.verdicts:
        from stuntset.checks._verdicts_app import VERDICTS_PATH, with_verdicts

        app = with_verdicts(app, double)
        click.echo(f"  resilience verdicts: {base}{VERDICTS_PATH}")
    click.echo("Ctrl-C to stop.", nl=True)
    handler = DroppingLogHandler()
    install_log_handler(handler)
    config = uvicorn.Config(
        app,
        http=guarded_protocol(guard, lane_protocol(model_app)),
        loop="asyncio",
        lifespan="off",
        access_log=False,
        log_config=None,
        log_level=logging.WARNING,
        timeout_keep_alive=int(max(1, round(options.keep_alive))),
        timeout_graceful_shutdown=1,
        proxy_headers=False,  # no X-Forwarded-* rewriting: one ASGI layer less per request
    )
    # what start-up made lives as long as the server: out of the collector's sight, so a
    # full collection scans only what requests made (the journal), not every module
    gc.collect()
    gc.freeze()
    try:
        PromptServer(config).run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it handled: a normal stop
        pass
    finally:
        double.close()
        sock.close()
        if options.verdicts:
            from stuntset.checks._verdicts_app import verdicts_lines

            for line in verdicts_lines(double):
                click.echo(line, err=True)
        stats = describe_stats(guard, handler)
        # through the handler: a stderr nobody reads must not hang the exit either
        handler.close(f"stuntset serve: {stats}" if stats else None)
