"""The failure matrix: every catalog scenario on every provider adapter, over the doubles.

Each cell is how the adapter's run of that scenario ended — ``completed``, ``killed`` (the
stuck scenario, interrupted), ``crashed: <kind>`` with ``(retryable)`` when a retry may help —
after the run passed the conformance suite's per-run invariants (``started-first``,
``contract``, ``terminates``); a run that broke one shows ``FAILED <invariant>``. ``n/a`` marks
a scenario the adapter's runtime cannot render (no process to spawn for a model API).

Adapters and the wires they are played over:

``scripted``     ``ScriptedProvider`` (in-process)
``pydantic-ai``  ``PydanticAIProvider``: a pydantic-ai Agent, OpenAI chat model, in-process
                 model double (through the real openai SDK)
``pydantic-ai-gemini``  the same agent with pydantic-ai's ``GoogleModel`` on the Gemini wire
                 (through the real google-genai SDK, which does not retry by default)
``claude-code``  ``ClaudeCodeProvider``: claude-agent-sdk spawning the fake ``claude``
``codex``        ``CodexProvider``: the openai-codex SDK driving the fake ``codex app-server``

``stuntset matrix`` prints it (``--markdown`` for the docs); ``provider_matrix()`` returns it.
"""

from __future__ import annotations

import importlib.util
import itertools
import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stuntset.checks._grid import columns, scenario_names, work_root
from stuntset.checks.provider_conformance import check_provider_conformance
from stuntset.errors import ConformanceFailure
from stuntset.providers.base import AgentProvider
from stuntset.script import Script
from stuntset.seams import deterministic

__all__ = ["ADAPTERS", "Cell", "matrix_markdown", "print_matrix", "provider_matrix"]

#: Adapter name → the optional package it needs (``None``: always there).
ADAPTERS: dict[str, str | None] = {
    "scripted": None,
    "pydantic-ai": "pydantic_ai",
    "pydantic-ai-gemini": "pydantic_ai",
    "claude-code": "claude_agent_sdk",
    "codex": "openai_codex",
}
_PER_RUN = ("started-first", "contract", "terminates")


@dataclass(frozen=True)
class Cell:
    """One adapter × scenario outcome."""

    status: str  # "ok", "failed", "n/a", "not installed"
    terminal: str | None = None
    kind: str | None = None
    retryable: bool | None = None
    detail: str = ""

    @property
    def label(self) -> str:
        if self.status == "failed":
            return f"FAILED {self.detail}"
        if self.status != "ok":
            return self.status
        label = (self.terminal or "?").removeprefix("run.")
        if self.kind is not None:
            label += f": {self.kind}"
        if self.retryable:
            label += " (retryable)"
        return label


def _scripted(workdir: Path) -> Callable[[Script], AgentProvider]:
    from stuntset.providers import ScriptedProvider

    return lambda script: ScriptedProvider(script)


def _pydantic_ai(workdir: Path, *, gemini: bool = False) -> Callable[[Script], AgentProvider]:
    import httpx2
    from pydantic_ai import Agent

    from stuntset.clock import SystemClock
    from stuntset.doubles.model import ModelDouble, transport
    from stuntset.providers.pydantic_ai import PydanticAIProvider

    def make(script: Script) -> AgentProvider:
        # A stall must really stall (until interrupted), not fire the read timeout at once.
        double = ModelDouble(script, clock=SystemClock() if script.name == "stuck" else None)
        in_process: Any = transport(double=double)  # an httpx2 transport (duck-typed)
        model: Any
        if gemini:
            from pydantic_ai.models.google import GoogleModel
            from pydantic_ai.providers.google import GoogleProvider

            # httpx's default 5 s timeout draws a warning from GoogleProvider
            http = httpx2.AsyncClient(transport=in_process, timeout=60)
            provider = GoogleProvider(api_key="k", http_client=http)
            model = GoogleModel("gemini-stuntset", provider=provider)
        else:
            from pydantic_ai.models.openai import OpenAIChatModel
            from pydantic_ai.providers.openai import OpenAIProvider

            http = httpx2.AsyncClient(transport=in_process)
            model = OpenAIChatModel(
                "gpt-stuntset", provider=OpenAIProvider(api_key="k", http_client=http)
            )
        agent: Agent[None, str] = Agent(model)

        @agent.tool_plain
        def read_file(path: str) -> str:
            return f"contents of {path}"

        @agent.tool_plain
        def bash(command: str) -> str:
            return f"ran {command}"

        @agent.tool_plain
        def list_files(path: str) -> str:
            return "README.md\nsrc/"

        return PydanticAIProvider(agent)

    return make


def _claude_code(workdir: Path) -> Callable[[Script], AgentProvider]:
    from claude_agent_sdk import ClaudeAgentOptions

    from stuntset.doubles.cli import install_cli
    from stuntset.providers.claude_code import ClaudeCodeProvider

    count = itertools.count()

    def make(script: Script) -> AgentProvider:
        bin_dir = workdir / f"claude-{next(count)}"
        cli = install_cli("claude", script, bin_dir=bin_dir, time_scale=0.1)
        quiet = ClaudeAgentOptions(cli_path=cli.path, stderr=lambda line: None)
        return ClaudeCodeProvider(quiet)

    return make


def _codex(workdir: Path) -> Callable[[Script], AgentProvider]:
    from stuntset.doubles.cli import install_cli
    from stuntset.providers.codex import CodexProvider

    count = itertools.count()
    # one fake codex and CODEX_HOME per script (resume), by identity: the script is kept in
    # the entry, so a collected script's recycled id can never find another script's codex
    homes: dict[int, tuple[Script, str, Path]] = {}

    def make(script: Script) -> AgentProvider:
        entry = homes.get(id(script))
        if entry is None or entry[0] is not script:
            where = workdir / f"codex-{next(count)}"
            cli = install_cli("codex", script, bin_dir=where / "bin", time_scale=0.01)
            entry = homes[id(script)] = (script, str(cli.path), where)
        _, path, where = entry
        return CodexProvider(path, cwd=str(workdir), env={"CODEX_HOME": str(where / "home")})

    return make


_FACTORIES: dict[str, Callable[[Path], Callable[[Script], AgentProvider]]] = {
    "scripted": _scripted,
    "pydantic-ai": _pydantic_ai,
    "pydantic-ai-gemini": lambda workdir: _pydantic_ai(workdir, gemini=True),
    "claude-code": _claude_code,
    "codex": _codex,
}


def _cell(make: Callable[[Script], AgentProvider], scenario: str, timeout: float) -> Cell:
    try:
        report = check_provider_conformance(
            make, invariants=_PER_RUN, scenarios=[scenario], timeout=timeout
        )
    except ConformanceFailure as failure:
        return Cell("failed", detail=failure.invariant)
    result = report.outcomes().get(scenario)
    if result is None or result.status != "passed":
        return Cell("n/a", detail=result.reason if result is not None else "")
    return Cell("ok", result.terminal, result.kind, result.retryable)


def provider_matrix(
    adapters: Iterable[str] | None = None,
    scenarios: Iterable[str] | None = None,
    *,
    workdir: str | Path | None = None,
    timeout: float = 30.0,
) -> dict[str, dict[str, Cell]]:
    """adapter → scenario → ``Cell``, played under deterministic seams. Fake CLIs are
    installed under ``workdir`` (a temporary directory, removed afterwards, by default)."""
    chosen = columns(adapters, ADAPTERS, "adapter")
    names = scenario_names(scenarios)
    table: dict[str, dict[str, Cell]] = {}
    with work_root(workdir, "stuntset-matrix-") as root:
        for adapter in chosen:
            package = ADAPTERS[adapter]
            if package is not None and importlib.util.find_spec(package) is None:
                table[adapter] = dict.fromkeys(names, Cell("not installed"))
                continue
            with deterministic():
                make = _FACTORIES[adapter](root / adapter)
                table[adapter] = {name: _cell(make, name, timeout) for name in names}
    return table


def matrix_markdown(table: dict[str, dict[str, Cell]]) -> str:
    """The matrix as a Markdown table (scenarios down, adapters across)."""
    adapters = list(table)
    names = list(next(iter(table.values()), {}))
    lines = [
        "| scenario | " + " | ".join(adapters) + " |",
        "|---|" + "---|" * len(adapters),
    ]
    for name in names:
        cells = " | ".join(table[a][name].label for a in adapters)
        lines.append(f"| `{name}` | {cells} |")
    return "\n".join(lines) + "\n"


def print_matrix(
    adapters: Iterable[str] | None = None,
    scenarios: Iterable[str] | None = None,
    *,
    markdown: bool = False,
    echo: Callable[[str], Any] = print,
) -> int:
    """Print the matrix (a rich table, or Markdown); 1 if any run broke an invariant.

    Scenario names are never cut: the name column is as wide as the longest name, and when
    stdout is not a terminal (a pipe, a file) the table gets the width it needs. What the
    client SDKs log while their runs crash (claude-agent-sdk's "Fatal error in message
    reader"…) is held back and summarised on stderr after the table, not printed inside it.
    """
    with _sdk_logs_held() as held:
        table = provider_matrix(adapters, scenarios)
    if markdown:
        echo(matrix_markdown(table))
    else:
        from rich.console import Console
        from rich.measure import Measurement
        from rich.table import Table

        names = list(next(iter(table.values()), {}))
        view = Table(title="adapter × scenario → how the run ended")
        view.add_column("scenario", no_wrap=True, min_width=max(map(len, names), default=8))
        for adapter in table:
            view.add_column(adapter, overflow="fold")
        for name in names:
            view.add_row(name, *(table[a][name].label for a in table))
        console = Console(highlight=False)
        if not console.is_terminal:
            wide = console.options.update(width=10_000)
            console.width = max(console.width, Measurement.get(console, wide, view).maximum)
        console.print(view)
    if held:
        first = held[0]
        print(
            f"{len(held)} log line(s) from the client SDKs held back (the table shows each "
            f"run's outcome); first: {first.name}: {first.getMessage().splitlines()[0]}",
            file=sys.stderr,
        )
    failed = any(cell.status == "failed" for row in table.values() for cell in row.values())
    return 1 if failed else 0


#: The loggers of the SDKs the matrix drives (their errors describe the runs it reports).
_SDK_LOGGERS = (
    "claude_agent_sdk",
    "openai_codex",
    "pydantic_ai",
    "openai",
    "httpx2",
    "google_genai",
)


@contextmanager
def _sdk_logs_held() -> Iterator[list[logging.LogRecord]]:
    """Collect the client SDKs' log records (warning and above) instead of letting Python's
    last-resort handler print them between the table's rows."""
    held: list[logging.LogRecord] = []

    class _Hold(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            held.append(record)

    handler = _Hold(logging.WARNING)
    loggers = [logging.getLogger(name) for name in _SDK_LOGGERS]
    saved = [logger.propagate for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.propagate = False
    try:
        yield held
    finally:
        for logger, propagate in zip(loggers, saved, strict=True):
            logger.removeHandler(handler)
            logger.propagate = propagate
