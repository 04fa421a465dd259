"""The mismatch window: the path to the first difference and the text around it, for any
change at any place in a long value (generated, not only the examples of issue 28)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stuntset.explain.window import MISSING, first_difference, mismatch_window, text_window

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=400)


def _escaped(char: str) -> str:
    return char.encode("unicode_escape").decode("ascii")


@settings(max_examples=200, deadline=None)
@given(prefix=TEXT, old=st.characters(), new=st.characters(), suffix=TEXT)
def test_the_window_shows_the_changed_character_under_a_caret(
    prefix: str, old: str, new: str, suffix: str
) -> None:
    expected, actual = prefix + old + suffix, prefix + new + suffix
    if old == new:
        assert mismatch_window(expected, actual) == ""
        return
    lines = mismatch_window(expected, actual).splitlines()
    assert lines[0] == (
        f"  first difference at (the whole value), character {len(prefix)} "
        f"(lengths {len(expected)} and {len(actual)}):"
    )
    column = len(lines[3]) - 1
    assert lines[3] == " " * column + "^"
    # under the caret: the changed character, on each line (escaped as the window shows it)
    assert lines[1][column:].startswith(_escaped(old))
    assert lines[2][column:].startswith(_escaped(new))
    # never the whole of a long value: at most the window either side
    assert len(lines[1]) < 2 * 40 * 10 + 20


@settings(max_examples=100, deadline=None)
@given(
    depth=st.integers(min_value=0, max_value=30),
    size=st.integers(min_value=0, max_value=5000),
    at=st.floats(min_value=0, max_value=1),
)
def test_a_change_deep_in_messages_is_found_with_its_path(depth: int, size: int, at: float) -> None:
    content = "a" * size
    where = int(at * size)
    changed = content[:where] + "Z" + content[where + 1 :] if size else "Z"
    before: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "x"}] * depth}
    after: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "x"}] * depth}
    before["messages"] = [*before["messages"], {"role": "user", "content": content}]
    after["messages"] = [*after["messages"], {"role": "user", "content": changed}]
    found = first_difference(before, after)
    assert found == (f"messages[{depth}].content", content, changed)
    shown = mismatch_window(before, after, labels=("recorded", "got"), path="body")
    assert f"first difference at body.messages[{depth}].content, character {where}" in shown
    assert "Z" in shown.splitlines()[2]


def test_missing_keys_and_items_and_type_changes() -> None:
    assert first_difference({"a": 1}, {"a": 1, "b": 2}) == ("b", MISSING, 2)
    assert first_difference([1], []) == ("[0]", 1, MISSING)
    assert first_difference({"a": 1}, {"a": True}) == ("a", 1, True)
    assert first_difference({"a": 1.0}, {"a": 1}) == ("a", 1.0, 1)
    assert first_difference({"a b": [1]}, {"a b": [2]}) == ('["a b"][0]', 1, 2)
    assert first_difference({"x": {"y": "s"}}, {"x": {"y": "s"}}) is None
    assert "expected: <missing>" in mismatch_window({}, {"k": "v"})


def test_control_characters_are_escaped_so_the_lines_stay_lines() -> None:
    index, a, _ = text_window("line one\nline two", "line one\nline 2wo")
    assert index == 14
    assert "\n" not in a
    assert a.startswith("line one\\n")
