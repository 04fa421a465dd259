"""The fake CLIs' stdin, fuzzed (issue #33): Hypothesis draws runs of lines — claude's
stream-json user messages and control requests, codex app-server's JSON-RPC, with fields of
every JSON type (lone surrogates, huge numbers, deep nesting, NUL), JSON that is not an
object, and text that is not JSON — and feeds each run to a fresh fake process. It answers
as a real CLI does, exit 0 or 1 (never 70, the fake's own failure, which no real CLI
exits with), nothing about an internal error on stderr, and every stdout line a JSON
object. Derandomized (the suite's profile), a small ``max_examples`` (a process each): the
slow tier runs it."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stuntset import scenarios
from stuntset.doubles.cli import InstalledCli, install_cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CLAUDE_ARGV = ["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]

values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**20), 10**20),
        st.sampled_from([2**63, 10**400]),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
        st.sampled_from(["", "\x00", "\ud800", "x\udfff", "x" * 3000]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
oddities = st.one_of(
    values.map(json.dumps),
    st.sampled_from(["", "{", "[" * 5000, "not json", '{"type": "user"', "\t", "null"]),
)

claude_lines = st.one_of(
    st.builds(
        lambda content, extra: json.dumps(
            {"type": "user", "message": {"role": "user", "content": content}, **extra}
        ),
        st.text(max_size=10) | values,
        st.dictionaries(
            st.sampled_from(["session_id", "parent_tool_use_id", "uuid"]), values, max_size=1
        ),
    ),
    st.builds(
        lambda rid, subtype, extra: json.dumps(
            {"type": "control_request", "request_id": rid, "request": {"subtype": subtype, **extra}}
        ),
        st.text(max_size=4) | values,
        st.sampled_from(["initialize", "interrupt", "set_permission_mode", "can_use_tool", "bogus"])
        | values,
        st.dictionaries(
            st.sampled_from(["hooks", "mode", "tool_name", "input"]), values, max_size=2
        ),
    ),
    st.builds(
        lambda rid, body: json.dumps(
            {"type": "control_response", "response": {"request_id": rid, **body}}
        ),
        # a list or an object as the request_id was exit 70 ("unhashable type"), found here
        st.text(max_size=4) | values,
        st.dictionaries(st.sampled_from(["subtype", "response", "error"]), values, max_size=2),
    ),
    oddities,
)

codex_lines = st.one_of(
    st.builds(
        lambda method, ident, params: json.dumps({"method": method, **ident, **params}),
        st.sampled_from(
            ["initialize", "initialized", "thread/start", "turn/start", "turn/interrupt", "bogus"]
        )
        | st.text(max_size=5),
        st.one_of(st.just({}), st.builds(lambda i: {"id": i}, st.text(max_size=3) | values)),
        st.one_of(st.just({}), st.builds(lambda p: {"params": p}, values)),
    ),
    oddities,
)


def run(cli: InstalledCli, argv: list[str], lines: list[str], env: dict[str, str]) -> None:
    text = "".join(line.replace("\n", " ") + "\n" for line in lines)
    done = subprocess.run(
        [str(cli.path), *argv],
        input=text.encode("utf-8", "surrogatepass"),
        capture_output=True,
        timeout=30,
        env={**os.environ, **env},
    )
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode in (0, 1), (done.returncode, stderr[-500:], lines)
    assert "internal error" not in stderr, (stderr[-500:], lines)
    for out in done.stdout.splitlines():
        assert isinstance(json.loads(out.decode("utf-8")), dict), out[:200]


@pytest.fixture(scope="module")
def clis(tmp_path_factory: pytest.TempPathFactory) -> dict[str, InstalledCli]:
    folder = tmp_path_factory.mktemp("fuzz-clis")
    return {
        name: install_cli(name, scenarios.build("tool_use"), bin_dir=folder / name, time_scale=0)
        for name in ("claude", "codex")
    }


_settings = settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_settings
@given(lines=st.lists(claude_lines, min_size=1, max_size=4))
def test_the_fake_claude_answers_any_run_of_stdin_lines_as_a_cli_does(
    clis: dict[str, InstalledCli], lines: list[str]
) -> None:
    run(clis["claude"], CLAUDE_ARGV, lines, {})


@_settings
@given(lines=st.lists(codex_lines, min_size=1, max_size=4))
def test_the_fake_codex_app_server_answers_any_run_of_stdin_lines_as_a_cli_does(
    clis: dict[str, InstalledCli], lines: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    home = clis["codex"].path.parent.parent / "codex-home"
    home.mkdir(exist_ok=True)
    run(clis["codex"], ["app-server", "--listen", "stdio://"], lines, {"CODEX_HOME": str(home)})
