from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stuntset.cassettes.sse import SseParser, parse_sse


def test_the_framing_rules() -> None:
    body = b": keep-alive\nevent: ping\ndata: {}\n\ndata: a\ndata:b\n\n\n\nid: 7\nretry: x\ndata: last\n\n"
    assert parse_sse(body) == [("ping", "{}"), (None, "a\nb"), (None, "last")]


def test_an_unterminated_event_is_dropped_at_close() -> None:
    assert parse_sse(b"data: complete\n\ndata: half") == [(None, "complete")]


def test_invalid_utf8_does_not_break_the_parser() -> None:
    assert parse_sse(b"data: \xff\xfe\n\n") == [(None, "\ufffd\ufffd")]


events = st.lists(
    st.tuples(
        st.none() | st.sampled_from(["message_start", "ping", "content_block_delta"]),
        st.text(
            alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]),
            max_size=20,
        ),
    ),
    max_size=6,
)


@pytest.mark.slow
@given(
    events=events,
    ending=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    cuts=st.lists(st.integers(0, 400), max_size=8),
)
def test_parse_of_the_whole_equals_parse_of_the_same_bytes_split_anywhere(
    events: list[tuple[str | None, str]], ending: bytes, cuts: list[int]
) -> None:
    body = b""
    for name, data in events:
        if name:
            body += b"event: " + name.encode() + ending
        body += b"data: " + data.encode() + ending + ending
    expected = [(name, data) for name, data in events]
    assert parse_sse(body) == expected
    parser = SseParser()
    got: list[tuple[str | None, str]] = []
    last = 0
    for cut in sorted({min(c, len(body)) for c in cuts}):
        got += parser.feed(body[last:cut])
        last = cut
    got += parser.feed(body[last:]) + parser.close()
    assert got == expected
