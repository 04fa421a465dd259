"""The fake ``codex`` process: codex-cli 0.163.0's ``exec`` and ``app-server``, from a plan.

Runs inside the installed executable (see ``_runtime``: built-ins only). The plan was
compiled from a script at install time by ``stuntset.doubles.cli.codex``. This module parses
the top level of the command line (``codex [-c k=v]… <subcommand> …``, clap's error texts
and exit status 2 for bad flags), then hands over to ``exec`` (``exec`` / ``e``) or
``app_server`` (``app-server``); what both modes share is in ``common``.
"""

from __future__ import annotations

from stuntset.doubles.cli.codex._process.common import COMMON_OPTIONS, ArgumentError, parse_options

TYPE_CHECKING = False
if TYPE_CHECKING:
    from stuntset.doubles.cli._runtime import Runtime

__all__ = ["run"]

_TOP_HELP = """Codex CLI

If no subcommand is specified, options will be forwarded to the interactive CLI.

Usage: codex [OPTIONS] [PROMPT]
       codex [OPTIONS] <COMMAND> [ARGS]

Commands:
  exec        Run Codex non-interactively [aliases: e]
  app-server  [experimental] Run the app server or related tooling
  help        Print this message or the help of the given subcommand(s)

(stuntset fake codex: exec --json and app-server --listen stdio:// are simulated)
"""

#: Subcommands the real CLI has that the double does not simulate.
_OTHER_COMMANDS = frozenset(
    {
        "agents",
        "review",
        "login",
        "logout",
        "mcp",
        "plugin",
        "remote-control",
        "completion",
        "update",
        "doctor",
        "sandbox",
        "debug",
        "apply",
        "a",
        "resume",
        "queue",
        "archive",
        "delete",
        "migrate-rollouts",
        "unarchive",
        "fork",
        "cloud",
        "exec-server",
        "features",
    }
)

_TOP_OPTIONS: dict[str, tuple[str, bool, str, tuple[str, ...]]] = {
    **COMMON_OPTIONS,
    "-m": ("model", True, "MODEL", ()),
    "--model": ("model", True, "MODEL", ()),
    "-p": ("profile", True, "CONFIG_PROFILE_V2", ()),
    "--profile": ("profile", True, "CONFIG_PROFILE_V2", ()),
    "-s": ("sandbox", True, "SANDBOX_MODE", ("read-only", "workspace-write", "danger-full-access")),
    "--sandbox": (
        "sandbox",
        True,
        "SANDBOX_MODE",
        ("read-only", "workspace-write", "danger-full-access"),
    ),
    "-a": ("approval", True, "APPROVAL_POLICY", ("on-request", "never")),
    "--ask-for-approval": ("approval", True, "APPROVAL_POLICY", ("on-request", "never")),
    "-C": ("cd", True, "DIR", ()),
    "--cd": ("cd", True, "DIR", ()),
}


def run(rt: Runtime) -> None:
    """The fake ``codex``'s main."""
    rt.open_journal()
    usage = "Usage: codex [OPTIONS] [PROMPT]\n       codex [OPTIONS] <COMMAND> [ARGS]"
    commands = frozenset({"exec", "e", "app-server", "help"} | _OTHER_COMMANDS)
    try:
        options, _, command, rest = parse_options(rt.argv, _TOP_OPTIONS, usage, stop_at=commands)
    except ArgumentError as error:
        rt.stderr(str(error))
        rt.exit(2)
        return
    if options.get("version"):
        rt.write_bytes(f"codex-cli {rt.plan['version']}\n".encode())
        return
    if options.get("help") or command == "help":
        rt.write_bytes(_TOP_HELP.encode())
        return
    if command in ("exec", "e"):
        from stuntset.doubles.cli.codex._process.exec import run_exec

        run_exec(rt, options, rest)
        return
    if command == "app-server":
        from stuntset.doubles.cli.codex._process.app_server import run_app_server

        run_app_server(rt, options, rest)
        return
    if command is not None:
        rt.stderr(f"stuntset fake codex: `codex {command}` is not simulated\n")
        rt.exit(2)
        return
    import posix

    if not posix.isatty(0):
        rt.stderr("Error: stdin is not a terminal\n")
    else:
        rt.stderr("stuntset fake codex: the interactive UI is not simulated; use `codex exec`\n")
    rt.exit(1)
