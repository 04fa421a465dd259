"""The ``stuntset`` command."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import click

from stuntset.errors import StuntsetError, UsageError

__all__ = ["main"]


class _Group(click.Group):
    """Turns stuntset's own errors into one clear line and a documented exit code
    (2 = usage, 1 = a check failed), never a traceback."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except click.UsageError as error:  # a bad option: one line naming it, not the usage
            click.echo(f"error: {_one_line(error.format_message())}", err=True)
            sys.exit(2)
        except UsageError as error:
            click.echo(f"error: {_one_line(str(error))}", err=True)
            sys.exit(2)
        except StuntsetError as error:
            click.echo(f"failed: {error}", err=True)
            sys.exit(1)


def _one_line(message: str) -> str:
    """``message`` on one line, printable whatever it holds (a lone surrogate from a file)."""
    flat = " ".join(message.split("\n"))
    return flat.encode("utf-8", "backslashreplace").decode("utf-8")


@click.group(cls=_Group)
@click.version_option(package_name="stuntset")
def main() -> None:
    """stuntset: doubles, a failure catalog and checks for testing AI-agent software."""


@main.command()
@click.option(
    "--show",
    "name",
    metavar="NAME",
    default=None,
    help="Print one scenario's reference: parameters, tools, texts, what each wire shows.",
)
def scenarios(name: str | None) -> None:
    """List the scenario catalog with one-line descriptions (or --show one in full)."""
    if name is not None:
        from stuntset.scenarios_reference import show

        click.echo(show(name), nl=False)
        return
    from stuntset._cli_output import print_scenarios

    print_scenarios()


@main.command()
def demo() -> None:
    """Play every catalog scenario through the doubles and check each stream."""
    from stuntset._demo import run_demo

    sys.exit(run_demo())


@main.group()
def script() -> None:
    """Work with script files."""


@script.command("check")
@click.argument("path", type=click.Path(dir_okay=False))
def script_check(path: str) -> None:
    """Validate a script file (TOML or JSON) and summarise its turns."""
    from stuntset._cli_output import print_script_summary
    from stuntset.script import load_script

    print_script_summary(load_script(path))


@main.command("lint-mocks")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--package",
    "packages",
    multiple=True,
    help="A top-level package of your own (repeatable; default: those in . and src/).",
)
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False),
    default=None,
    help="Patches tolerated for now (default: lint-mocks-baseline.txt if present).",
)
@click.option("--shrink-baseline", is_flag=True, help="Drop baseline entries that were fixed.")
@click.option(
    "--write-baseline", is_flag=True, help="Write the first baseline from today's findings."
)
def lint_mocks(
    paths: tuple[str, ...],
    packages: tuple[str, ...],
    baseline: str | None,
    shrink_baseline: bool,
    write_baseline: bool,
) -> None:
    """Find patches of your own modules in PATHS (default: tests): unittest.mock.patch
    (mock.patch.object, mocker.patch...) and pytest's monkeypatch.setattr / delattr /
    setitem. Exit 1 on any the baseline does not list, or that it lists but no longer occur
    (it may only shrink). Keep one on purpose with `# lint-mocks: allow <reason>`."""
    from stuntset.checks.lint_mocks import run_lint

    lines, status = run_lint(
        paths or ("tests",),
        packages=packages or None,
        baseline=baseline,
        shrink=shrink_baseline,
        write=write_baseline,
    )
    for line in lines[:-1]:
        click.echo(line)
    click.echo(lines[-1], err=True)
    sys.exit(status)


@main.group()
def cassettes() -> None:
    """Work with cassettes (recordings of real traffic)."""


@cassettes.command("verify")
@click.argument("paths", nargs=-1, type=click.Path())
def cassettes_verify(paths: tuple[str, ...]) -> None:
    """Fail if any cassette or JSONL file under PATHS (default: .) holds something that looks
    like a secret (exit 1) or is malformed (exit 2, naming file and line). Entries that are
    not regular files are skipped, saying so."""
    from stuntset._cli_output import print_verify

    sys.exit(print_verify(paths or (".",)))


@cassettes.command("show")
@click.argument("path", type=click.Path())
@click.option("--frames", is_flag=True, help="Also list every streamed frame of HTTP responses.")
def cassettes_show(path: str, frames: bool) -> None:
    """Print a cassette as a readable transcript: what was asked, what came back (text, tool
    calls, usage) and when; a recorded CLI run line by line in both directions."""
    from stuntset._cli_output import print_cassette
    from stuntset.cassettes import load_cassette

    print_cassette(load_cassette(path), frames=frames)


@cassettes.command("diff")
@click.argument("old", type=click.Path())
@click.argument("new", type=click.Path())
def cassettes_diff(old: str, new: str) -> None:
    """What changed between two recordings, per interaction (exit 1 if anything did)."""
    from stuntset.cassettes import load_cassette
    from stuntset.cassettes.diff import diff_cassettes

    lines = diff_cassettes(load_cassette(old), load_cassette(new))
    for line in lines:
        click.echo(line)
    click.echo(
        f"{len([x for x in lines if not x.startswith('  ')])} interaction(s) differ", err=True
    )
    sys.exit(1 if lines else 0)


@cassettes.command("migrate")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing: say what would change, exit 1 if anything would.",
)
@click.option(
    "--keep-unused",
    is_flag=True,
    help="Keep the blocks of a folder's _blocks.jsonl that no cassette refers to.",
)
def cassettes_migrate(paths: tuple[str, ...], check: bool, keep_unused: bool) -> None:
    """Rewrite cassettes in place in the current format (canonical, scrubbed, scanned), their
    system prompts and tool schemas in their folder's _blocks.jsonl; a folder: every cassette
    in it. Then drop the blocks no cassette of the folder refers to."""
    from pathlib import Path

    from stuntset.cassettes.blocks import STORE_NAME
    from stuntset.cassettes.migrate import cassettes_under, migrate_file, unused_blocks

    files = [file for path in paths for file in cassettes_under(path)]
    changed = False
    for file in files:
        done = migrate_file(file, write=not check)
        changed |= done
        state = ("would be rewritten" if check else "rewritten") if done else "already current"
        click.echo(f"{file}: {state}")
    if keep_unused:
        sys.exit(1 if check and changed else 0)
    for folder in sorted({Path(file).parent for file in files}):
        if not (folder / STORE_NAME).is_file():
            continue
        # (with --check: the blocks no cassette refers to as the cassettes are now)
        unused = unused_blocks(folder, drop=not check)
        if unused:
            changed = True
            verb = "would drop" if check else "dropped"
            click.echo(f"{folder / STORE_NAME}: {verb} {len(unused)} unused block(s)")
    sys.exit(1 if check and changed else 0)


@cassettes.command("to-script")
@click.argument("path", type=click.Path())
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write here (default: stdout).",
)
def cassettes_to_script(path: str, output: str | None) -> None:
    """Turn a recording into an editable TOML script (one turn per recorded response)."""
    from pathlib import Path

    from stuntset.cassettes import load_cassette
    from stuntset.cassettes.to_script import dumps_script_toml, script_from_cassette

    text = dumps_script_toml(script_from_cassette(load_cassette(path)))
    if output is None:
        click.echo(text, nl=False)
    else:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)


@main.command("record")
@click.option(
    "--upstream", required=True, help="The real API's base URL (e.g. https://api.openai.com/v1)."
)
@click.option("--output", "-o", required=True, type=click.Path(), help="Cassette to write.")
@click.option("--port", default=0, show_default=True, help="Port to listen on (0: a free one).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--allow-remote", is_flag=True, help="Allow a --host that is not loopback.")
def record_command(upstream: str, output: str, port: int, host: str, allow_remote: bool) -> None:
    """Record traffic through a proxy: point the client at the printed URL, then Ctrl-C (or
    SIGTERM, or SIGHUP) to write the (scrubbed) cassette."""
    from stuntset._bind import check_bind, listening_socket
    from stuntset.cassettes.format import check_target
    from stuntset.cassettes.record import record

    check_target(output)
    warning = check_bind(host, port, allow_remote=allow_remote)
    listening_socket(host, port).close()  # a port in use is one line naming --port, here
    if warning:
        click.echo(warning, err=True)
    stop = _until_signalled()
    with record(upstream, output, host=host, port=port) as recording:
        click.echo(recording.url, nl=True)
        sys.stdout.flush()
        click.echo(recording.stands_for(), err=True)
        stop.wait()
        count = len(recording.proxy.interactions)
    click.echo(f"wrote {output}: {count} interaction(s)", err=True)


@cassettes.command("tee")
@click.argument("name")
@click.option("--output", "-o", required=True, type=click.Path(), help="Cassette to add to.")
@click.option(
    "--real",
    type=click.Path(),
    default=None,
    help="The real program (default: NAME on PATH).",
)
@click.option(
    "--bin-dir",
    type=click.Path(file_okay=False),
    default=".stuntset-tee",
    show_default=True,
    help="Where to write the recording executable NAME.",
)
def cassettes_tee(name: str, output: str, real: str | None, bin_dir: str) -> None:
    """Record an agent CLI by hand: writes an executable NAME that runs the real program and
    adds every run (argv, stdin, stdout, stderr, exit) to the cassette. Point the SDK at the
    printed path (cli_path=, codex_bin=) or put its folder first on PATH."""
    import os
    import shutil

    from stuntset.cassettes.cli_record import install_cli_recorder
    from stuntset.cassettes.format import check_target

    check_target(output)
    program = real or shutil.which(name)
    if program is None:
        raise UsageError(f"no {name!r} on PATH: pass --real /path/to/{name}")
    if not os.path.isfile(program):
        raise UsageError(f"--real {program}: no such program (not a file)")
    click.echo(install_cli_recorder(name, program, output, bin_dir=bin_dir))


@cassettes.command("serve")
@click.argument("path", type=click.Path())
@click.option("--port", default=0, show_default=True, help="Port on 127.0.0.1 (0: a free one).")
@click.option(
    "--pace",
    type=click.Choice(["none", "recorded", "scaled"]),
    default="none",
    show_default=True,
    help="Keep the recorded timing (recorded), scale it (scaled), or drop it.",
)
@click.option("--scale", default=1.0, show_default=True, help="Timing factor for --pace scaled.")
def cassettes_serve(path: str, port: int, pace: Any, scale: float) -> None:
    """Serve a cassette on a port for clients in other processes (a real agent CLI, a Node
    client) until Ctrl-C or SIGTERM; then fail (exit 1) on mismatches and unplayed
    interactions."""
    from stuntset.cassettes import load_cassette
    from stuntset.cassettes.replay_server import replay_server

    cassette = load_cassette(path)  # a bad file is refused before anything listens
    stop = _until_signalled()
    with replay_server(cassette, pace=pace, scale=scale, port=port) as server:
        click.echo(server.url, nl=True)
        sys.stdout.flush()
        stop.wait()
    server.replayer.verify()
    click.echo(f"played all {len(server.replayer.played)} interaction(s) of {path}", err=True)


def _until_signalled() -> threading.Event:
    """An event set by SIGINT, SIGTERM or SIGHUP (the way to end a foreground server; a
    closed terminal sends SIGHUP, whose default would end it before it writes anything)."""
    import signal

    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda *_: stop.set())
    return stop


@main.command()
@click.option(
    "--adapter",
    "adapters",
    multiple=True,
    type=click.Choice(["scripted", "pydantic-ai", "pydantic-ai-gemini", "claude-code", "codex"]),
    help="Only this adapter (repeatable; default: all).",
)
@click.option("--scenario", "names", multiple=True, help="Only this scenario (repeatable).")
@click.option("--markdown", is_flag=True, help="Print a Markdown table (for the docs).")
def matrix(adapters: tuple[str, ...], names: tuple[str, ...], markdown: bool) -> None:
    """Play the catalog on every provider adapter over the doubles: adapter x scenario ->
    terminal state and error kind (exit 1 if a run broke a conformance invariant)."""
    from stuntset.checks.matrix import print_matrix

    sys.exit(print_matrix(adapters or None, names or None, markdown=markdown, echo=click.echo))


@main.command()
@click.option(
    "--cli",
    "clis",
    multiple=True,
    type=click.Choice(["claude", "claude-session", "codex", "codex-exec", "gemini"]),
    help="Only this column (repeatable): claude (a ClaudeSDKClient per run), claude-session "
    "(one session: several queries, interrupt), codex (app-server), codex-exec (exec --json), "
    "gemini (gemini -p, stream-json).",
)
@click.option("--scenario", "names", multiple=True, help="Only this scenario (repeatable).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write a report.")
@click.option(
    "--live",
    is_flag=True,
    help="Instead: the real providers' stream shape vs the double's (needs a key).",
)
@click.option(
    "--claude-bin",
    help="The real claude to compare (default: $STUNTSET_CLAUDE_BIN, else the bundled one).",
)
@click.option(
    "--codex-bin",
    help="The real codex to compare (default: $STUNTSET_CODEX_BIN, else the bundled one).",
)
@click.option(
    "--gemini-bin",
    help="The real gemini to compare (default: $STUNTSET_GEMINI_BIN, else the Node tier's "
    "@google/gemini-cli in tests/node, from make node; without one its column is not played).",
)
def drift(
    clis: tuple[str, ...],
    names: tuple[str, ...],
    json_path: str | None,
    live: bool,
    claude_bin: str | None,
    codex_bin: str | None,
    gemini_bin: str | None,
) -> None:
    """Play the catalog through the real claude/codex/gemini binaries and the fakes and diff
    the normalized streams (exit 1 on a difference not in the allowlist)."""
    from stuntset.drift.command import run

    code = run(
        clis or None,
        names or None,
        json_path=json_path,
        live=live,
        echo=click.echo,
        claude_bin=claude_bin,
        codex_bin=codex_bin,
        gemini_bin=gemini_bin,
    )
    sys.exit(code)


# --- commands contributed by the doubles are registered below ---


@main.command()
@click.option("--port", default=0, show_default=True, help="Port on the host (0: a free one).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a --host that is not loopback (anyone who reaches it can use the server).",
)
@click.option(
    "--script",
    "script_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Script file (TOML/JSON) to play; default: happy_path, over and over.",
)
@click.option("--cycle", is_flag=True, help="Restart the script when it runs out.")
@click.option(
    "--journal",
    default=1000,
    show_default=True,
    help="Remember the last N requests (and played turns); memory stays flat.",
)
@click.option(
    "--max-body",
    default=32 * 1024 * 1024,
    show_default=True,
    help="Largest request body in bytes; beyond it the provider's 413.",
)
@click.option(
    "--request-timeout",
    default=10.0,
    show_default=True,
    help="Seconds a connection has to send a request's headers and body before it is closed.",
)
@click.option(
    "--keep-alive", default=5.0, show_default=True, help="Seconds an idle connection stays open."
)
@click.option(
    "--max-connections",
    default=1024,
    show_default=True,
    help="At this many, a new connection closes the oldest one waiting for a request.",
)
@click.option("--console", "with_console", is_flag=True, help="Serve the web console at /console.")
@click.option(
    "--verdicts",
    is_flag=True,
    help="Judge the clients' resilience: GET /stuntset/verdicts, and printed at exit.",
)
def serve(
    port: int,
    host: str,
    allow_remote: bool,
    script_path: str | None,
    cycle: bool,
    journal: int,
    max_body: int,
    request_timeout: float,
    keep_alive: float,
    max_connections: int,
    with_console: bool,
    verdicts: bool,
) -> None:
    """Serve the model double (OpenAI Chat/Responses, Anthropic Messages) and every catalog
    scenario under /scenarios/<name>/ (parameters: /scenarios/rate_limited;failures=2/), until
    interrupted, with a JSON control API under /_stuntset/ (isolated stages with their own
    script and journal; GET /_stuntset/openapi.json). The journal path of a request is its
    API path (/v1/...), whatever prefix it came with."""
    from stuntset.commands.serve import ServeOptions, run_serve

    options = ServeOptions(
        journal=journal,
        max_body=max_body,
        request_timeout=request_timeout,
        keep_alive=keep_alive,
        max_connections=max_connections,
        allow_remote=allow_remote,
        console=with_console,
        verdicts=verdicts,
    )
    run_serve(host, port, script_path, cycle, options)


@main.group("mcp")
def mcp_group() -> None:
    """The MCP server double (needs the `mcp` extra)."""


@mcp_group.command("serve")
@click.option("--stdio", is_flag=True, help="Serve on stdin/stdout (for a client that spawns it).")
@click.option("--port", default=0, show_default=True, help="Port for Streamable HTTP (0: free).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to bind.")
@click.option("--allow-remote", is_flag=True, help="Allow a --host that is not loopback.")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False), help="MCP spec .toml/.json.")
@click.option("--scenario", default=None, help="A catalog scenario answering every tool call.")
@click.option("--journal", type=click.Path(file_okay=False), help="Folder for the call journal.")
@click.option("--time-scale", default=1.0, show_default=True, help="Factor on scripted delays.")
def mcp_serve(
    stdio: bool,
    port: int,
    host: str,
    allow_remote: bool,
    spec_path: str | None,
    scenario: str | None,
    journal: str | None,
    time_scale: float,
) -> None:
    """Serve a scripted MCP server on stdio or Streamable HTTP (/mcp) until stopped."""
    from stuntset.commands.mcp import run_mcp_serve

    run_mcp_serve(
        stdio=stdio,
        host=host,
        port=port,
        spec_path=spec_path,
        scenario=scenario,
        journal=journal,
        time_scale=time_scale,
        allow_remote=allow_remote,
    )


@main.group("cli")
def fake_cli() -> None:
    """Run a fake agent CLI (claude, codex, gemini) by hand, playing a script, or install
    one (claude, codex) for another language's tests (install, invocations, verify)."""


def _add_fake_cli(name: str, example: str) -> None:
    @fake_cli.command(
        name,
        help=f"The fake `{name}`, e.g. `{example}`.",
        short_help=f"The fake `{name}`, playing a script.",
        context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    )
    @click.option(
        "--script",
        "script_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="Script file (TOML/JSON) to play.",
    )
    @click.option(
        "--scenario", default=None, help="A catalog scenario instead (default: happy_path)."
    )
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def command(script_path: str | None, scenario: str | None, args: tuple[str, ...]) -> None:
        from stuntset.commands.fake_cli import run_fake_cli

        sys.exit(run_fake_cli(name, script_path, scenario, list(args)))


_add_fake_cli("claude", "stuntset cli claude --script s.toml -- -p hello")
_add_fake_cli("codex", "stuntset cli codex --script s.toml -- exec --json hello")
_add_fake_cli("gemini", "stuntset cli gemini --script s.toml -- -p hello -o json")


_PROGRAM = click.Choice(["claude", "codex"])


@fake_cli.command("install")
@click.argument("program", type=_PROGRAM)
@click.option(
    "--script", "script_path", type=click.Path(dir_okay=False), help="Script file (TOML/JSON)."
)
@click.option("--scenario", default=None, help="A catalog scenario instead (default: happy_path).")
@click.option("--param", "params", multiple=True, help="A scenario parameter: name=value.")
@click.option(
    "--dir", "directory", required=True, help="Folder to install it in (made if need be)."
)
@click.option("--time-scale", default=1.0, show_default=True, help="Factor on scripted delays.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object, not only the path.")
def cli_install(
    program: str,
    script_path: str | None,
    scenario: str | None,
    params: tuple[str, ...],
    directory: str,
    time_scale: float,
    as_json: bool,
) -> None:
    """Install a fake claude or codex executable in DIR playing a script, and print its path
    (for tests in any language: run it, or put DIR first on PATH). Each run journals into
    DIR/.<program>.stuntset/invocations/ (`stuntset cli invocations`); installing again in
    DIR replaces the script and starts its turns and sessions over."""
    from stuntset.commands.fake_cli import run_install

    click.echo(
        run_install(
            program,
            script_path,
            scenario,
            params,
            directory,
            time_scale=time_scale,
            as_json=as_json,
        )
    )


@fake_cli.command("invocations")
@click.argument("program", type=_PROGRAM)
@click.option("--dir", "directory", required=True, help="The folder it was installed in.")
def cli_invocations(program: str, directory: str) -> None:
    """Print each run of an installed fake as a JSON line (argv, env, cwd, pid, every stdin
    and stdout message, stderr, exit_code), in start order."""
    from stuntset.commands.fake_cli import invocations_jsonl

    click.echo(invocations_jsonl(program, directory), nl=False)


@fake_cli.command("verify")
@click.argument("program", type=_PROGRAM)
@click.option("--dir", "directory", required=True, help="The folder it was installed in.")
@click.option("--allow-unused-turns", is_flag=True, help="Only fail on a run the script lacked.")
def cli_verify(program: str, directory: str, allow_unused_turns: bool) -> None:
    """Exit 1 if an installed fake was asked for a turn its script lacked, or (without
    --allow-unused-turns) left scripted turns unused: a Python test's teardown check."""
    from stuntset.commands.fake_cli import verify_installed

    click.echo(verify_installed(program, directory, allow_unused_turns=allow_unused_turns))


@main.command("daemon")
@click.option(
    "--db",
    default=None,
    help="SQLite file of the event log and the host's rows (one daemon per file); default: "
    "$XDG_DATA_HOME/stuntset/host.db or ~/.local/share/stuntset/host.db.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="127.0.0.1, localhost or ::1.")
@click.option("--port", default=0, show_default=True, help="Port to listen on (0: a free one).")
@click.option(
    "--token-file",
    default=None,
    type=click.Path(dir_okay=False),
    help="Where to write url, port, pid and token (mode 0600); default: the per-user runtime dir.",
)
@click.option("--console", "with_console", is_flag=True, help="Serve the web console at /console.")
@click.option(
    "--allow-origin",
    "allow_origins",
    multiple=True,
    metavar="URL",
    help="A browser origin let in besides the daemon's own, e.g. a dev UI on "
    "http://127.0.0.1:5173 (repeatable; the token is still required).",
)
def daemon(
    db: str | None,
    host: str,
    port: int,
    token_file: str | None,
    with_console: bool,
    allow_origins: tuple[str, ...],
) -> None:
    """Serve the session host on loopback: WebSocket API at /ws (token required), GET /health,
    POST /shutdown. SIGINT and SIGTERM shut it down gracefully (running runs end as
    run.killed). Providers: the catalog scenarios by name, and `stuck`."""
    from stuntset.commands.daemon import run_daemon_command

    run_daemon_command(
        db,
        port,
        token_file,
        click.echo,
        host=host,
        console=with_console,
        allowed_origins=allow_origins,
    )


@main.command("eval")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--target",
    "targets",
    multiple=True,
    type=click.Choice(["scripted", "claude", "codex"]),
    help="Where to run (repeatable): the scripted provider (default), or the real claude / "
    "codex binary over the model doubles.",
)
@click.option("--runs", type=int, default=None, help="Runs per scenario (default: the file's).")
@click.option("--seed", type=int, default=0, show_default=True, help="Picks the behaviours.")
@click.option("--live", is_flag=True, help="The real provider instead of the doubles (keys).")
@click.option("--json", "json_path", type=click.Path(path_type=Path), help="Write a report.")
@click.option("--html", "html_path", type=click.Path(path_type=Path), help="Write a page.")
@click.option("--min-pass-rate", type=float, default=None, help="Exit 1 below it (0 to 1).")
@click.option("--progress/--no-progress", default=None, help="Default: on a terminal.")
def eval_command(
    paths: tuple[Path, ...],
    targets: tuple[str, ...],
    runs: int | None,
    seed: int,
    live: bool,
    json_path: Path | None,
    html_path: Path | None,
    min_pass_rate: float | None,
    progress: bool | None,
) -> None:
    """Run eval scenario files (or folders of them) N times and report pass rates."""
    from stuntset.commands.eval import run_eval_command

    sys.exit(
        run_eval_command(
            paths,
            targets,
            runs=runs,
            seed=seed,
            live=live,
            json_path=json_path,
            html_path=html_path,
            min_pass_rate=min_pass_rate,
            progress=progress,
        )
    )


@main.command("console")
@click.option("--db", default=":memory:", show_default=True, help="SQLite file of the sessions.")
@click.option("--port", default=0, show_default=True, help="Port to listen on (0: a free one).")
@click.option("--cassettes", default=None, help="Folder of cassettes for the Cassettes view.")
@click.option("--trace", "trace", default=None, help="Open a test's trace file (.html or .jsonl).")
def console(db: str, port: int, cassettes: str | None, trace: str | None) -> None:
    """Serve the web console on loopback (Requests, Sessions, Cassettes) with a session host
    and a model double to point clients at; prints its address with the token. With
    ``--trace FILE``: serve that failed test's trace (what its doubles saw and did) instead."""
    if trace is not None:
        from stuntset.explain.viewer import run_trace_viewer

        run_trace_viewer(trace, port, click.echo)
        return
    from stuntset.commands.console import run_console_command

    run_console_command(db, port, cassettes, click.echo)


@main.group("log")
def log_group() -> None:
    """Work with session-log databases (SQLite)."""


@log_group.command("doctor")
@click.argument("db")
@click.option(
    "--move-aside",
    is_flag=True,
    help="Move the rows that do not decode into the table events_aside (refused while a "
    "daemon holds the database).",
)
def log_doctor(db: str, move_aside: bool) -> None:
    """List the rows of DB that do not decode (session, seq, why): stored by a stuntset from
    before events were checked on append. Exit 1 if any are left in place."""
    from stuntset.commands.log import print_doctor
    from stuntset.log import doctor

    rows = doctor.move_aside(db) if move_aside else doctor.diagnose(db)
    sys.exit(print_doctor(db, rows, moved=move_aside))


if __name__ == "__main__":  # pragma: no cover - `python -m stuntset.cli`
    main()
