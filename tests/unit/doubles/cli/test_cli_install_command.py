"""``stuntset cli install|invocations|verify``: a fake claude or codex for another language's
tests — installed where asked, its path printed, every run readable afterwards as JSON lines,
checked as a Python test's teardown checks it, per-test scripts (installing again starts over)
and resume across runs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from stuntset.cli import main


def cli(*argv: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(argv))
    return result.exit_code, result.stdout, result.stderr


def run(path: str, *args: str) -> list[dict[str, object]]:
    done = subprocess.run([path, *args], capture_output=True, text=True, timeout=30, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.slow  # four fake processes: ≈ 0.9 s
def test_install_prints_the_path_and_runs_are_readable_and_verified(tmp_path: Path) -> None:
    code, out, _ = cli(
        "cli", "install", "claude", "--scenario", "multi_turn", "--param", "turns=2",
        "--dir", str(tmp_path / "bin"),
    )  # fmt: skip
    assert code == 0
    path = out.strip()
    assert path == str(tmp_path / "bin" / "claude")
    first = run(path, "-p", "one", "--output-format", "stream-json", "--verbose")
    session = str(first[0]["session_id"])
    assert first[-1]["result"] == "Answer number 1."
    code, _, err = cli("cli", "verify", "claude", "--dir", str(tmp_path / "bin"))
    assert code == 1
    assert "turn 1: [text, usage]" in err
    assert "--allow-unused-turns" in err
    assert (
        cli("cli", "verify", "claude", "--dir", str(tmp_path / "bin"), "--allow-unused-turns")[0]
        == 0
    )
    second = run(
        path, "-p", "two", "--resume", session, "--output-format", "stream-json", "--verbose"
    )
    assert second[-1]["result"] == "Answer number 2."
    assert second[-1]["session_id"] == session
    code, out, _ = cli("cli", "invocations", "claude", "--dir", str(tmp_path / "bin"))
    runs = [json.loads(line) for line in out.splitlines()]
    assert [r["argv"][1] for r in runs] == ["one", "two"]
    assert runs[1]["exit_code"] == 0
    assert runs[1]["stdout"][-1]["result"] == "Answer number 2."
    code, out, _ = cli("cli", "verify", "claude", "--dir", str(tmp_path / "bin"))
    assert (code, out.strip()) == (
        0,
        f"fake claude in {tmp_path / 'bin'}: 2 invocation(s), all as scripted",
    )


@pytest.mark.slow  # two fake processes: ≈ 0.5 s
def test_installing_again_is_a_fresh_script_and_journal(tmp_path: Path) -> None:
    script = tmp_path / "s.toml"
    script.write_text('[[turns]]\nsteps = [{ text = "from the file" }]\n')
    folder = str(tmp_path / "bin")
    path = cli("cli", "install", "codex", "--scenario", "happy_path", "--dir", folder)[1].strip()
    run(path, "exec", "--json", "hi")
    code, out, _ = cli(
        "cli", "install", "codex", "--script", str(script), "--dir", folder, "--json"
    )
    assert code == 0
    info = json.loads(out)
    assert info["path"] == path
    assert info["script"] == str(script)
    assert Path(info["invocations"]).is_dir()
    assert cli("cli", "invocations", "codex", "--dir", folder)[1] == ""
    events = run(path, "exec", "--json", "hi")
    assert any(e.get("item", {}).get("text") == "from the file" for e in events)  # type: ignore[union-attr]
    assert cli("cli", "verify", "codex", "--dir", folder)[0] == 0


def test_a_spawn_failure_installs_no_executable(tmp_path: Path) -> None:
    code, out, _ = cli(
        "cli", "install", "claude", "--scenario", "spawn_missing", "--dir", str(tmp_path), "--json"
    )
    assert code == 0
    info = json.loads(out)
    assert info["spawnable"] is False
    assert not Path(info["path"]).exists()
    assert cli("cli", "verify", "claude", "--dir", str(tmp_path))[0] == 0
