"""verify passes exactly what show and to-script can read (issue #33: a lone surrogate in a
frame's JSON and a CLI interaction without argv passed verify, then show crashed or refused).
Generated CLI bodies and frame texts; each command: exit 0 or 2, one line, no traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stuntset.cli import main

HEADER = {
    "format": "stuntset-cassette",
    "kind": "header",
    "recorded_by": "stuntset",
    "version": 1,
    "wires": [],
}

_values = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.text(max_size=5),
    st.lists(st.text(max_size=4), max_size=3),
    st.lists(st.one_of(st.integers(), st.text(max_size=3)), max_size=3),
)
_MISSING = object()


def _cli_body() -> st.SearchStrategy[Any]:
    field = st.one_of(st.just(_MISSING), _values)
    entries = st.lists(
        st.fixed_dictionaries({"t": st.floats(0, 5), "data": st.text(max_size=4)}), max_size=2
    )
    return st.one_of(
        _values,
        st.builds(
            lambda argv, stdin: {
                k: v for k, v in {"argv": argv, "stdin": stdin}.items() if v is not _MISSING
            },
            field,
            st.one_of(field, entries),
        ),
    )


#: Frame JSON with escapes: paired and lone surrogates, escaped backslashes.
_escapes = st.sampled_from(["\\ud800", "\\udfff", "\\ud83d\\ude00", "\\\\ud800", "\\u00e9", "x"])
_frame_data = st.builds(
    lambda parts, wrap: wrap.replace("@", "".join(parts)),
    st.lists(_escapes, min_size=1, max_size=3),
    st.sampled_from(
        ['{"type":"text","text":"@"}', '"@"', "@", '{"choices":[{"delta":{"content":"@"}}]}']
    ),
)


def _write(path: Path, wire: str, body: Any, frames: list[str]) -> None:
    request_path = "claude" if wire.endswith("-cli") else "/v1/chat/completions"
    interaction = {
        "id": "i-1",
        "kind": "interaction",
        "wire": wire,
        "session": None,
        "request": {
            "method": "EXEC" if wire.endswith("-cli") else "POST",
            "path": request_path,
            "query": "",
            "headers": {},
            "body": body,
        },
        "response": {
            "status": 0 if wire.endswith("-cli") else 200,
            "headers": {},
            "frames": [{"t": i, "data": d} for i, d in enumerate(frames)] or None,
            "body": None,
        },
    }
    path.write_text(json.dumps({**HEADER, "wires": [wire]}) + "\n" + json.dumps(interaction) + "\n")


def _run(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(argv))
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        argv,
        result.exception,
    )
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 2), (argv, result.output)
    if result.exit_code == 2:
        assert len(result.stderr.splitlines()) == 1, result.stderr
    return result.exit_code, result.output


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_cli_body(), frames=st.lists(_frame_data, max_size=2))
def test_verify_passes_a_cli_cassette_only_if_show_reads_it(
    tmp_path: Path, body: Any, frames: list[str]
) -> None:
    path = tmp_path / "c.jsonl"
    _write(path, "claude-cli", body, frames)
    verified, _ = _run("cassettes", "verify", str(path))
    shown, _ = _run("cassettes", "show", str(path))
    if verified == 0:
        assert shown == 0
    _run("cassettes", "to-script", str(path))


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frames=st.lists(_frame_data, min_size=1, max_size=2))
def test_verify_passes_streamed_frames_only_if_show_and_to_script_write_them(
    tmp_path: Path, frames: list[str]
) -> None:
    path = tmp_path / "c.jsonl"
    _write(path, "openai-chat", {"model": "m", "messages": [], "stream": True}, frames)
    verified, _ = _run("cassettes", "verify", str(path))
    shown, _ = _run("cassettes", "show", str(path))
    scripted, _ = _run("cassettes", "to-script", str(path))
    if verified == 0:
        assert (shown, scripted) == (0, 0)
