"""The prefilter (``stuntset.cassettes.candidates``): a text it passes over holds nothing the
full scan would find. Checked three ways: directly (every shape, every corpus secret in every
encoding, every way the full scan decodes a text), and differentially — on generated streams
with the corpus's secrets planted at generated split points, and on generated secret-free
streams, a scrubber with the prefilter writes, scrubs and scans exactly what one without it
does (same findings, same scrubbed frames)."""

from __future__ import annotations

import base64
import itertools
import json
import string
from urllib.parse import quote

import pytest
from _secret_corpus import SHAPES as CORPUS
from _secret_corpus import encodings, planted
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stuntset.cassettes import (
    Cassette,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    Scrubber,
    dumps_cassette,
    scan_for_secrets,
)
from stuntset.cassettes.candidates import Candidates
from stuntset.cassettes.format import scrub_cassette
from stuntset.cassettes.scrub import SECRET_FIELDS
from stuntset.cassettes.secrets import SHAPES, find_secrets

ENV = {"ACME_SERVICE_TOKEN": "hunter2 correct horse"}
VALUES = ["hunter2 correct horse"]


def candidates() -> Candidates:
    return Candidates(VALUES)


def with_prefilter() -> Scrubber:
    return Scrubber(env=ENV)


def full_scan() -> Scrubber:
    return Scrubber(env=ENV, prefilter=False)


@pytest.mark.parametrize("shape", CORPUS, ids=lambda s: s.name)
def test_every_corpus_secret_in_every_encoding_is_a_candidate(shape: object) -> None:
    secret, text, core = planted(shape)  # type: ignore[arg-type]
    for written in [text, secret, *encodings(secret), *encodings(core)]:
        if find_secrets(written, values=VALUES):
            assert candidates().may_hold(written), written


# (the bare AWS secret key's look-aheads are more than generation can meet: ONLY_TRACE's
# "bare run" below holds one)
@pytest.mark.parametrize(
    "shape",
    [s for s in SHAPES if "(?=" not in s.pattern.pattern],
    ids=lambda s: f"{s.name}:{s.pattern.pattern[:20]}",
)
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_whatever_a_shape_matches_is_a_candidate(shape: object, data: st.DataObject) -> None:
    pattern = shape.pattern  # type: ignore[attr-defined]
    text = data.draw(st.from_regex(pattern, fullmatch=False))
    if find_secrets(text, values=VALUES):
        assert candidates().may_hold(text), text


TEXT = st.text(
    alphabet=st.sampled_from(
        [*string.ascii_letters, *string.digits, *" _-./+=:%\\\"'{}[],@\n", "é", "K", "İ"]
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(
    before=TEXT,
    after=TEXT,
    shape=st.sampled_from(CORPUS),
    seed=st.integers(0, 3),
    how=st.sampled_from(["plain", "json", "percent", "base64"]),
)
def test_a_text_the_full_scan_finds_something_in_is_a_candidate(
    before: str, after: str, shape: object, seed: int, how: str
) -> None:
    _, text, _ = planted(shape, seed)  # type: ignore[arg-type]
    written = {
        "plain": text,
        "json": json.dumps(text)[1:-1],
        "percent": quote(text, safe=""),
        "base64": base64.b64encode(text.encode()).decode(),
    }[how]
    for sample in (before + written + after, before + after, before, after):
        if find_secrets(sample, values=VALUES):
            assert candidates().may_hold(sample), sample


# the traces the prefilter must see, each on its own: a text whose only sign of a secret is one
# of them is still read in full (with a prefilter missing that piece, these fail)
ONLY_TRACE = {
    # a key written with JSON escapes only: no literal of it is in the text
    "json escape": "\\u0073\\u006b-\\u0061nt-" + "a1B2c3D4" * 3,
    # percent-encoded: ``sk%2Dant-`` has no ``sk-``
    "percent-encoding": "sk%2D" + "ant-" + "a1B2c3D4" * 3,
    # a base64 run that decodes to a key
    "base64 run": base64.b64encode(b"xa" + b"i-" + b"Q9w8E7r6T5y4U3i2O1p0" * 2).decode(),
    # an environment variable's value, percent-encoded in a query
    "env value, percent-encoded": "q=1&p=hunter2%20correct%20horse",
    "env value": "the password is hunter2 correct horse.",
    # only a gitleaks rule knows it (keyword ``sumo``), no shape of ours
    "rule keyword": "sumo_key = " + "suE6d7f8g9h0j1k2l3m4n5o6p7q8r9s0",
    # a keyword's value: no prefix at all
    "keyword value": "my Mistral credential: " + "Zq8Xw7Cv6Bn5Mm4Ll3Kk2Jj1Hh0Gg9",
    # the Kelvin sign lower-cases to k: ``\u212aey=`` is a key's name as the scan reads it
    "kelvin sign": "\u212aey=" + "Zq8Xw7Cv6Bn5Mm4Ll3Kk2Jj1Hh0Gg9",
    # a long run of base64 characters: an AWS secret key on its own
    "bare run": "x " + "aB3/eF6+hI9kL2nO5qR8tU1wX4zA7cD0fG3iJ6mP" + " y",
}


@pytest.mark.parametrize("name", ONLY_TRACE)
def test_a_secret_whose_only_trace_the_prefilter_must_see_is_found(name: str) -> None:
    text = ONLY_TRACE[name]
    expected = full_scan().find(text)
    assert expected, f"{name}: the full scan finds it"
    assert candidates().may_hold(text)
    assert with_prefilter().find(text) == expected
    # also among many clean texts read in one pass, and in a stream split at every position
    texts = [f"filler {n} words" for n in range(50)]
    texts.insert(25, text)
    assert with_prefilter().find_each(texts) == full_scan().find_each(texts)
    frames = [chunk(text[:cut]) + "\n" + chunk(text[cut:]) for cut in range(1, len(text))]
    for pair in frames:
        datas = pair.split("\n")
        assert with_prefilter().stream(datas) == full_scan().stream(datas)


@pytest.mark.parametrize("name", sorted(SECRET_FIELDS))
def test_every_credential_field_name_is_a_candidate(name: str) -> None:
    for spelling in (name, name.upper(), name.replace("_", "-").title()):
        assert candidates().may_hold(spelling), spelling


def test_a_scrubber_with_shapes_of_its_own_reads_every_text() -> None:
    scrubber = Scrubber(env={}, extra_patterns={"acme": r"ac_[0-9]{6}"})
    assert scrubber.find("id ac_123456 ok") != []
    assert Candidates([], (*SHAPES, *SHAPES[:1])).may_hold("nothing here")


def test_a_clean_text_is_not_a_candidate() -> None:
    assert not candidates().may_hold("Here is the weather today, ok.")
    assert candidates().holding(["hello", "sk-" + "x", "world", "fine"]) == {1}


# -- differential: generated streams -------------------------------------------------------


def chunk(text: str, index: int = 0) -> str:
    return json.dumps(
        {
            "id": "chatcmpl-abc123",
            "object": "chat.completion.chunk",
            "model": "gpt-4o",
            "choices": [{"index": index, "delta": {"content": text}}],
        }
    )


WORDS = st.lists(
    st.sampled_from(
        ["Here", "is", "the", " ", "answer", ".", "\n", "ok", "word1", "42", "é", "naïve", "-"]
    ),
    max_size=12,
).map("".join)


def split(text: str, points: list[int]) -> list[str]:
    bounds = sorted({0, len(text), *(p % (len(text) + 1) for p in points)})
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@st.composite
def streams(draw: st.DrawFn, *, secret: bool) -> list[str]:
    pieces: list[str] = draw(st.lists(WORDS, min_size=1, max_size=6))
    if secret:
        shape = draw(st.sampled_from(CORPUS))
        planted_secret, text, _ = planted(shape, draw(st.integers(0, 5)))
        if draw(st.booleans()):
            text = planted_secret
        points = draw(st.lists(st.integers(0, 10_000), max_size=5))
        at = draw(st.integers(0, len(pieces)))
        pieces[at:at] = split(text, points)
    frames = []
    for piece in pieces:
        kind = draw(st.sampled_from(["chunk", "chunk", "chunk", "other-index", "text"]))
        if kind == "text":
            frames.append(piece)  # a frame that is not JSON: read as text
        else:
            frames.append(chunk(piece, 1 if kind == "other-index" else 0))
    frames.append("[DONE]")
    return frames


def cassette_of(frames: list[str]) -> Cassette:
    return Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="openai-chat",
                request=RecordedRequest(method="POST", path="/v1/chat/completions", body={}),
                response=RecordedResponse(
                    status=200,
                    headers={"content-type": "text/event-stream"},
                    frames=[Frame(t=n * 0.01, data=d) for n, d in enumerate(frames)],
                ),
            )
        ]
    )


def assert_same(frames: list[str]) -> None:
    fast, full = with_prefilter(), full_scan()
    assert fast.stream(frames) == full.stream(frames)
    raw = dumps_cassette(cassette_of(frames))
    for join in (True, False):
        assert scan_for_secrets(raw, fast, join_streams=join) == scan_for_secrets(
            raw, full, join_streams=join
        )
    scrubbed = dumps_cassette(scrub_cassette(cassette_of(frames), fast))
    assert scrubbed == dumps_cassette(scrub_cassette(cassette_of(frames), full))
    assert scan_for_secrets(scrubbed, fast, join_streams=False) == scan_for_secrets(
        scrubbed, full, join_streams=False
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames=streams(secret=True))
def test_on_streams_with_a_secret_split_anywhere_the_prefilter_changes_nothing(
    frames: list[str],
) -> None:
    assert_same(frames)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames=streams(secret=False))
def test_on_secret_free_streams_the_prefilter_changes_nothing(frames: list[str]) -> None:
    assert_same(frames)
