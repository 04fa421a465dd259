"""The script parser, fuzzed (issue #33): Hypothesis draws documents shaped like scripts —
known and unknown step kinds and fields, values of every JSON type (huge numbers, nan, inf,
deep nesting, lone surrogates), TOML and JSON text cut anywhere — and each must load or be
refused with a ``ScriptError`` (checked on every wire, too), and ``stuntset script check``
answers 0, 1 or 2 without a traceback. Derandomized (the suite's profile) and bounded:
``max_examples`` is small, the slow tier runs it."""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stuntset.cli import main
from stuntset.errors import ScriptError
from stuntset.script import AGENT_WIRE, STEP_KINDS, loads_script
from stuntset.script._steps import STEP_CLASSES
from stuntset.wires import MODEL_WIRES

pytestmark = pytest.mark.slow

FIELDS = sorted({name for cls in STEP_CLASSES.values() for name in cls.__struct_fields__})
TURN_FIELDS = ["steps", "match", "times", "name", "rate_limits", "bogus"]

hostile = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.sampled_from([0, -1, 2**63, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -0.0, 5e-324]),
    st.sampled_from(["\ud800", "x\udfffy", "", "a" * 300]),
)
plausible = st.one_of(
    st.text(max_size=8),
    st.integers(0, 600),
    st.floats(0, 5),
    st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2),
)


def scripts(scalars: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Documents shaped like scripts, their leaves drawn from ``scalars``."""
    values = st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
        ),
        max_leaves=8,
    )
    known_step = st.builds(
        lambda kind, fields: {"kind": kind, **fields},
        st.sampled_from([*STEP_KINDS, "bogus", ""]),
        st.dictionaries(st.sampled_from(FIELDS), scalars, max_size=3),
    )
    steps = st.one_of(
        known_step,
        known_step,
        st.dictionaries(st.sampled_from(["kind", *FIELDS]), values, max_size=4),
        st.builds(lambda kind, value: {kind: value}, st.sampled_from(STEP_KINDS), values),
        values,
    )
    turns = st.one_of(
        st.builds(lambda body: {"steps": body}, st.lists(steps, max_size=4)),
        st.builds(
            lambda body, extra: {"steps": body, **extra},
            st.lists(steps, max_size=4),
            st.dictionaries(st.sampled_from(TURN_FIELDS[1:]), values, max_size=2),
        ),
        values,
    )
    return st.one_of(
        st.builds(lambda body: {"turns": body}, st.lists(turns, max_size=3)),
        st.builds(
            lambda body, extra: {"turns": body, **extra},
            st.lists(turns, max_size=3),
            st.dictionaries(
                st.sampled_from(["seed", "name", "format", "rate_limits", "x"]), values, max_size=2
            ),
        ),
        values,
    )


#: Near-valid documents (plausible values only), and hostile ones (any value anywhere).
documents = st.one_of(scripts(plausible), scripts(st.one_of(plausible, plausible, hostile)))
turns = st.lists(
    st.fixed_dictionaries(
        {
            "steps": st.lists(
                st.builds(
                    lambda kind, fields: {"kind": kind, **fields},
                    st.sampled_from(STEP_KINDS),
                    st.dictionaries(
                        st.sampled_from(FIELDS), st.one_of(plausible, hostile), max_size=3
                    ),
                ),
                max_size=3,
            )
        }
    ),
    max_size=3,
)


def as_json(document: Any) -> str:
    return json.dumps(document, allow_nan=True)  # NaN and Infinity: Python's json reads them


def loads_or_refuses(text: str, format: str) -> None:
    """The text loads, on no wire and on every wire, or is a ``ScriptError``: nothing else."""
    try:
        script = loads_script(text, format=format)  # type: ignore[arg-type]
    except ScriptError:
        return
    for wire in (AGENT_WIRE, *MODEL_WIRES):
        with contextlib.suppress(ScriptError):
            loads_script(text, format=format, wire=wire)  # type: ignore[arg-type]
    assert script.turns is not None


def check_command(path: Path) -> None:
    result = CliRunner().invoke(main, ["script", "check", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"script check raised {result.exception!r} on {path.read_bytes()[:300]!r}"
    )
    assert result.exit_code in (0, 1, 2), result.output
    assert "Traceback" not in result.output
    if result.exit_code == 2:
        assert result.output.strip().count("\n") == 0, result.output  # one line


_fixture_ok = settings(
    max_examples=200,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@_fixture_ok
@given(document=documents)
def test_a_generated_json_script_loads_or_is_a_script_error(document: Any) -> None:
    loads_or_refuses(as_json(document), "json")


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=documents, cut=st.integers(0, 400))
def test_script_check_answers_0_1_or_2_on_generated_files(
    tmp_path: Path, document: Any, cut: int
) -> None:
    text = as_json(document)
    (tmp_path / "s.json").write_text(text, errors="surrogatepass")
    check_command(tmp_path / "s.json")
    (tmp_path / "cut.json").write_text(text[:cut], errors="surrogatepass")  # cut anywhere
    check_command(tmp_path / "cut.json")


def toml_value(value: Any) -> str:
    """``value`` as TOML text, as near as TOML has it (None as an empty table)."""
    if value is None:
        return "{}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return (
            "nan"
            if math.isnan(value)
            else ("inf" if value > 0 else "-inf")
            if math.isinf(value)
            else repr(value)
        )
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=turns,
    cut=st.one_of(st.none(), st.integers(0, 300)),
)
def test_a_generated_toml_script_loads_or_is_a_script_error(
    tmp_path: Path, body: list[Any], cut: int | None
) -> None:
    lines = []
    for turn in body:
        if isinstance(turn, dict):
            lines.append("[[turns]]")
            lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in turn.items()]
        else:
            lines.append(f"turns = {toml_value(turn)}")
    text = "\n".join(lines)[: cut if cut is not None else None]
    loads_or_refuses(text, "toml")
    (tmp_path / "s.toml").write_text(text, errors="surrogatepass")
    check_command(tmp_path / "s.toml")
