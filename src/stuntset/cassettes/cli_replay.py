"""Replaying a recorded CLI: a fake executable that plays a ``<name>-cli`` cassette back to
the real client — the same bytes, in the same order, at the recorded pace if asked.

::

    claude = install_cli_replay("claude", "cassettes/claude.jsonl", bin_dir=tmp_path)
    ClaudeAgentOptions(cli_path=claude.path)     # the SDK talks to the recording
    ...
    claude.verify()                              # mismatches and unused recordings fail here

Recorded stdout lines (frames) are written as recorded, a line the process died in the middle
of stays cut, stderr and the exit status (or the killing signal) are reproduced. What the
client sends is compared with what the recorded client sent, line by line, as JSON. Two
things legitimately differ between runs and are handled by the protocol rather than by a
looser comparison:

* ids a client chooses for its requests (stream-json ``control_request.request_id``,
  JSON-RPC ``id``) are not compared; the recorded responses are re-addressed to this run's ids;
* the recorded working directory is replaced by the current one, in argv, stdin and output.

Each spawn claims the first unreplayed recorded invocation with the same argv (values of the
flags in ``ignore_args`` not compared), so concurrent and nested processes each get their own.
The runtime side is ``stuntset.doubles.cli._replay_run``.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from stuntset.cassettes.format import Cassette, CassetteError, Interaction, load_cassette
from stuntset.cassettes.replay import Pace, UnusedInteractions, check_mismatches, not_allowed
from stuntset.cassettes.secrets import placeholder
from stuntset.doubles.cli._install import InstalledExecutable, prepare_state, write_launcher
from stuntset.errors import UsageError

__all__ = ["Pace", "ReplayedCli", "install_cli_replay", "timeline"]
_RUNTIME = "stuntset.doubles.cli._replay_run"


class ReplayedCli(InstalledExecutable):
    """A fake CLI replaying recorded invocations (see ``install_cli_replay``)."""

    def __init__(
        self,
        name: str,
        interactions: Sequence[Interaction],
        *,
        source: str,
        path: Path,
        state_dir: Path,
        owns: Path | None,
    ) -> None:
        super().__init__(name, path=path, state_dir=state_dir, owns=owns)
        self.interactions = list(interactions)
        self.source = source

    @property
    def mismatches(self) -> list[str]:
        """What invocations met that the recording did not have, in order."""
        return list(self._state().get("mismatches", []))

    def unused(self) -> list[Interaction]:
        """Recorded invocations no spawn has claimed."""
        replayed = set(self._state().get("replayed", []))
        return [i for n, i in enumerate(self.interactions) if n not in replayed]

    def verify(self, *, allow_unused: bool | Collection[str] = False) -> None:
        """``CassetteMismatch`` if an invocation departed from the recording;
        ``UnusedInteractions`` if recorded invocations were never spawned (``allow_unused``:
        ``True``, or the interaction ids that may stay unused)."""
        __tracebackhide__ = True
        check_mismatches(self.mismatches, prefix=f"fake {self.name} replaying ")
        unused = not_allowed(self.unused(), allow_unused)
        if unused:
            lines = "\n".join(f"  {i.id}: {self.name} {_argv_text(i)}" for i in unused)
            raise UnusedInteractions(
                f"{self.source}: {len(unused)} recorded {self.name} invocation(s) were never "
                f"spawned:\n{lines}\nIf that is expected, allow them by id (allow_unused=[...])."
            )


def _argv_text(interaction: Interaction) -> str:
    text = " ".join(interaction.request.body["argv"])
    return text if len(text) <= 100 else text[:97] + "..."


def _entries(value: Any, where: str) -> list[tuple[float, str]]:
    if not isinstance(value, list):
        raise CassetteError(f"{where}: expected a list of {{t, data}}, got {type(value).__name__}")
    out = []
    for index, entry in enumerate(value):
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("t"), int | float)
            and isinstance(entry.get("data"), str)
        ):
            raise CassetteError(f"{where}[{index}]: expected {{t: seconds, data: text}}")
        out.append((float(entry["t"]), entry["data"]))
    return out


def timeline(interaction: Interaction, *, source: str = "<memory>") -> list[tuple[Any, ...]]:
    """One recorded invocation as the replay runtime's timeline (see ``_replay_run``): stdin
    lines, stdout frames, stderr and the stdin close, ordered by time (input first on a tie,
    since what the process read was read before what it wrote in answer)."""
    where = f"{source}: interaction {interaction.id}"
    body = interaction.request.body
    if not isinstance(body, dict) or not isinstance(body.get("argv"), list):
        raise CassetteError(f"{where}: field 'request.body.argv' is missing (not a CLI run?)")
    if not all(isinstance(arg, str) for arg in body["argv"]):
        raise CassetteError(f"{where}: field 'request.body.argv' must hold strings only")
    steps: list[tuple[float, int, tuple[Any, ...]]] = []
    for t, data in _entries(body.get("stdin", []), f"{where}: field 'request.body.stdin'"):
        steps.append((t, 0, ("in", t, data)))
    if isinstance(body.get("stdin_closed"), int | float):
        t = float(body["stdin_closed"])
        steps.append((t, 0, ("eof", t)))
    for frame in interaction.response.frames or []:
        steps.append((frame.t, 1, ("out", frame.t, frame.data, frame.event == "partial")))
    stderr = interaction.response.body.get("stderr", []) if interaction.response.body else []
    for t, data in _entries(stderr, f"{where}: field 'response.body.stderr'"):
        steps.append((t, 1, ("err", t, data)))
    steps.sort(key=lambda step: (step[0], step[1]))
    return [step for _, _, step in steps]


def _scale(pace: Pace, scale: float) -> float:
    if pace not in ("none", "recorded", "scaled"):
        raise UsageError(f"pace {pace!r}: use none, recorded or scaled")
    if scale < 0:
        raise UsageError(f"scale must not be negative (got {scale})")
    return {"none": 0.0, "recorded": 1.0, "scaled": scale}[pace]


def install_cli_replay(
    name: str,
    cassette: Cassette | str | os.PathLike[str],
    *,
    bin_dir: str | os.PathLike[str] | None = None,
    pace: Pace = "none",
    scale: float = 1.0,
    stdin_timeout: float = 60.0,
    ignore_args: Collection[str] = (),
) -> ReplayedCli:
    """Install a fake ``name`` in ``bin_dir`` that replays the cassette's ``<name>-cli``
    invocations (recorded by ``install_cli_recorder`` or ``cassette.cli(...)``).

    ``pace``: ``none`` (as fast as the client reads), ``recorded`` (the recorded gaps) or
    ``scaled`` (the gaps times ``scale``). ``stdin_timeout``: how long a replay waits for the
    client's next line before calling it a mismatch. ``ignore_args``: flags whose values may
    differ from the recording (``["--mcp-config"]``).
    """
    recording = cassette if isinstance(cassette, Cassette) else load_cassette(cassette)
    wire = f"{name}-cli"
    interactions = [i for i in recording.interactions if i.wire == wire]
    if not interactions:
        raise CassetteError(
            f"{recording.source}: no {wire} interactions to replay "
            f"(it holds: {', '.join(recording.wires) or 'nothing'})"
        )
    invocations = [
        {
            "id": interaction.id,
            "argv": list(interaction.request.body["argv"]),
            "cwd": interaction.request.body.get("cwd") or "",
            "status": interaction.response.status,
            "timeline": timeline(interaction, source=recording.where(interaction)),
        }
        for interaction in interactions
    ]
    plan = {
        "name": name,
        "source": recording.source,
        "time_scale": _scale(pace, scale),
        "stdin_timeout": float(stdin_timeout),
        "ignore_args": sorted({*ignore_args, *_scrubbed_flags(interactions)}),
        "invocations": invocations,
        "journal_env": list(_journal_env(name)),
    }
    directory, owns, state_dir = prepare_state(name, bin_dir)
    path = directory / name
    write_launcher(path, state_dir, _RUNTIME, plan)
    return ReplayedCli(
        name,
        interactions,
        source=recording.source,
        path=path,
        state_dir=state_dir,
        owns=owns,
    )


def _scrubbed_flags(interactions: list[Interaction]) -> set[str]:
    """Flags whose recorded value was scrubbed (``--token <scrubbed:cli-option>``): the client
    passes the real value again, so these are compared without their values."""
    scrubbed = placeholder("cli-option")
    flags: set[str] = set()
    for interaction in interactions:
        argv = interaction.request.body.get("argv", []) if interaction.request.body else []
        for before, arg in zip([None, *argv], argv, strict=False):
            if arg == scrubbed and isinstance(before, str) and before.startswith("-"):
                flags.add(before)
            elif isinstance(arg, str) and arg.endswith("=" + scrubbed):
                flags.add(arg.partition("=")[0])
    return flags


def _journal_env(name: str) -> tuple[str, ...]:
    from stuntset.doubles.cli import PROGRAMS, _programs

    return _programs()[name].journal_env if name in PROGRAMS else ()
