"""The real ``@google/gemini-cli`` (``tests/node/node_modules/.bin/gemini``, or
``STUNTSET_GEMINI_BIN``) over the model double's Gemini wire, offline: every case of
``_gemini_cli.CASES`` shows what was observed (the transcripts the fake is held to), and the
double answered as many model requests as the case says. The real binary waits its own
backoff (5 s and up) before each retry, so a case with a retry takes seconds."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import stuntset

from ._gemini_cli import CASES, lay_out, run

_DEFAULT = Path(__file__).resolve().parents[1] / "node" / "node_modules" / ".bin" / "gemini"
REAL_GEMINI = os.environ.get("STUNTSET_GEMINI_BIN") or (
    str(_DEFAULT) if _DEFAULT.exists() else None
)

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(
        REAL_GEMINI is None,
        reason="needs node and @google/gemini-cli (tests/node, or STUNTSET_GEMINI_BIN)",
    ),
]


@pytest.mark.parametrize("name", list(CASES))
def test_the_real_cli_over_the_double_shows_the_observed_transcript(
    tmp_path: Path, name: str
) -> None:
    assert REAL_GEMINI is not None
    case = CASES[name]
    cwd, env = lay_out(tmp_path, case)
    with stuntset.serve(case.script) as stand_in:
        env["GOOGLE_GEMINI_BASE_URL"] = stand_in.url("gemini").rstrip("/")
        shown = run(REAL_GEMINI, case, cwd, env)
        answered = len(stand_in.requests)
    assert shown == (case.stdout, case.stderr, case.code)
    assert answered == case.requests


def test_the_real_clis_run_is_recorded_in_a_cli_cassette_and_replayed(tmp_path: Path) -> None:
    """A recording of a program no one here wrote: the real ``gemini`` through the CLI
    recorder, over the double; the replaying fake writes the same stdout, stderr and status."""
    import subprocess

    from stuntset.cassettes.cli_record import install_cli_recorder
    from stuntset.cassettes.cli_replay import install_cli_replay

    assert REAL_GEMINI is not None
    case = CASES["read_yolo_stream"]
    cwd, env = lay_out(tmp_path, case)
    cassette = tmp_path / "gemini.jsonl"

    def played(path: Path) -> tuple[str, str, int]:
        done = subprocess.run(
            [str(path), *case.args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return done.stdout, done.stderr, done.returncode

    recorder = install_cli_recorder("gemini", REAL_GEMINI, cassette, bin_dir=tmp_path / "rec")
    with stuntset.serve(case.script) as stand_in:
        env["GOOGLE_GEMINI_BASE_URL"] = stand_in.url("gemini").rstrip("/")
        recorded = played(recorder)
    replay = install_cli_replay("gemini", cassette, bin_dir=tmp_path / "replay")
    assert played(replay.path) == recorded
    assert recorded[2] == 0
    assert '"tool_name":"read_file"' in recorded[0]
    replay.verify()


#: Catalog scenarios whose normalized events differ between the real CLI and the fake (drift's
#: comparison, through the drift ``gemini`` adapter), and why; every other scenario but
#: ``stuck`` and ``spawn_missing`` must be the same.
#: (None now: ``crash_mid_turn`` is the model connection dropping on both sides, and the CLI
#: process itself dying is ``crash_mid_turn(cli=True)``, which the model API cannot cause.)
KNOWN_DIFFERENCES: dict[str, str] = {}


@pytest.mark.parametrize(
    "name",
    [
        "happy_path",
        "tool_use",
        "needs_approval",
        "input_request",
        "interleaved_streaming",
        "long_stream",
        "multi_turn",
        "auth_expired_mid_run",
        "rate_limited",
        "overloaded",
        "stream_cut",
        "malformed_json",
        "garbage_bytes",
        "out_of_order",
        "crash_mid_turn",
        "slow",
    ],
)
def test_drift_the_real_cli_and_the_fake_play_the_catalog_alike(tmp_path: Path, name: str) -> None:
    """The drift column for gemini: each catalog scenario on the real binary over the double
    and on the fake, read by ``stuntset.drift.gemini_cli``, normalized and compared."""
    import anyio

    from stuntset import scenarios
    from stuntset.drift.compare import differences
    from stuntset.drift.gemini_cli import GeminiCliProvider, make_fake, make_real
    from stuntset.drift.native import native_script, prepare
    from stuntset.drift.normalize import normalize
    from stuntset.events import Event

    assert REAL_GEMINI is not None
    catalog = scenarios.build(name)
    # as the drift column plays it: the catalog's tools as gemini's own, the real binary's
    # working folder laid out so that its tools print the scripted results
    prepare(catalog, tmp_path / "real-cwd")
    script = native_script(catalog, "gemini", tmp_path / "real-cwd")

    async def events(provider: GeminiCliProvider) -> list[Event]:
        played: list[Event] = []
        try:
            with anyio.fail_after(120):
                async for event in provider.start("go"):
                    played.append(event)
        finally:
            await provider.aclose()
        return played

    fake = normalize(anyio.run(events, make_fake(script, tmp_path)))
    with stuntset.serve(script) as stand_in:
        real = normalize(
            anyio.run(events, make_real(Path(REAL_GEMINI), tmp_path, stand_in.url("gemini")))
        )
    found = differences(real, fake)
    if name in KNOWN_DIFFERENCES:
        assert found, f"{name} is the same now: drop it from KNOWN_DIFFERENCES"
    else:
        assert found == []
