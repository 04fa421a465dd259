"""The console's views without a browser: frames and faults of a reply, the cassette folder
(never a path outside it), the mount beside a model double."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from stuntset import scenarios
from stuntset.cassettes.format import (
    Cassette,
    Frame,
    Interaction,
    RecordedRequest,
    RecordedResponse,
    dumps_cassette,
)
from stuntset.console import ConsoleSources, console_app, with_console
from stuntset.console.cassettes_view import (
    MAX_TICKS,
    PAGE_LINES,
    find,
    render_list,
    resolve,
    timing,
)
from stuntset.console.requests_view import exchanges, render_view
from stuntset.console.sessions_view import render_list as render_sessions
from stuntset.console.sessions_view import render_session
from stuntset.doubles.model.app import ModelApp
from stuntset.doubles.model.double import ModelDouble
from stuntset.errors import UsageError
from stuntset.wires._reply import ABORT, RESET, STALL, Pause, Reply

CHAT = b'{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}'


def ask(double: ModelDouble, path: str = "/openai/v1/chat/completions", body: bytes = CHAT) -> Any:
    return double.handle("POST", path, "", {"content-type": "application/json"}, body)


def test_frames_carry_byte_and_time_offsets_and_the_ending() -> None:
    double = ModelDouble(scenarios.build("happy_path"))
    ask(double)
    [found] = exchanges(double)
    assert found.entry.wire == "openai-chat"
    assert found.fault is None
    assert found.ending is None
    offsets = [frame.offset for frame in found.frames]
    assert offsets[0] == 0
    assert offsets == sorted(offsets)
    assert len(set(offsets)) == len(offsets)
    text = "".join(frame.text for frame in found.frames)
    assert "Hello!" in text
    assert text.rstrip().endswith("data: [DONE]")


@pytest.mark.parametrize(
    ("scenario", "fault", "status"),
    [
        ("rate_limited", "rate_limit", 429),
        ("stream_cut", "stream_cut", 200),
        ("stuck", "stall", 200),
        ("happy_path", None, 200),
    ],
)
def test_the_fault_of_the_turn_that_answered_is_named(
    scenario: str, fault: str | None, status: int
) -> None:
    double = ModelDouble()
    ask(double, f"/scenarios/{scenario}/openai/v1/chat/completions")
    [found] = exchanges(double)
    assert (found.entry.scenario, found.fault, found.entry.status) == (scenario, fault, status)
    double.close()


def test_a_request_no_turn_answered_has_no_fault() -> None:
    double = ModelDouble()  # an empty script: the double answers with an error
    ask(double)
    [found] = exchanges(double)
    assert found.fault is None
    assert found.entry.turn is None


def test_reply_endings_and_pauses_are_read_from_the_actions() -> None:
    from stuntset.console.requests_view import _frames

    reply = Reply(200, actions=[b"a", Pause(0.5), b"bc", STALL])
    frames, ending = _frames(reply)
    assert [(f.offset, f.t, f.text) for f in frames] == [(0, 0.0, "a"), (1, 0.5, "bc")]
    assert ending == "stall"
    assert _frames(Reply(None, actions=[ABORT]))[1] == "abort"
    assert _frames(Reply(None, actions=[RESET]))[1] == "reset"
    assert _frames(None) == ((), None)


def test_the_requests_view_says_how_to_get_a_double() -> None:
    assert "stuntset serve --console" in render_view(lambda: None)


def test_views_without_a_host_say_where_to_find_one() -> None:
    assert "stuntset daemon" in render_sessions("/console", None)
    assert "stuntset daemon" in (render_session("/console", None, "s") or "")


def test_cassettes_are_found_by_content_and_names_outside_are_refused(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.jsonl").write_bytes(dumps_cassette(Cassette()))
    (tmp_path / "b.txt").write_text("not one")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "sub" / "a.jsonl")
    assert find(tmp_path) == ["sub/a.jsonl"]
    assert resolve(tmp_path, "sub/a.jsonl") == tmp_path / "sub" / "a.jsonl"
    for name in ["../etc/passwd", "b.txt", "link.jsonl", "/etc/passwd"]:
        with pytest.raises(UsageError, match="no cassette"):
            resolve(tmp_path, name)
    with pytest.raises(UsageError):
        resolve(None, "sub/a.jsonl")
    assert find(None) == []
    assert find(tmp_path / "missing") == []
    assert "--cassettes DIR" in render_list("/console", None)
    assert "No cassettes in" in render_list("/console", tmp_path / "sub" / "x")


def test_timing_of_a_response_without_frames_is_empty() -> None:
    from stuntset.cassettes.format import Interaction, RecordedRequest, RecordedResponse

    plain = Interaction(
        id="i-1",
        wire="openai.chat",
        request=RecordedRequest(method="POST", path="/v1/chat/completions"),
        response=RecordedResponse(status=200, body={"ok": True}),
    )
    assert timing(plain) == (None, [])


def test_a_bad_cassette_name_is_a_404_page(tmp_path: Path) -> None:
    app = console_app(ConsoleSources(cassettes=tmp_path, base=""))
    client = TestClient(app)
    for path in ["/cassettes/show?name=../x", "/cassettes/diff?a=x&b=y"]:
        response = client.get(path)
        assert response.status_code == 404
        assert "no cassette" in response.text


def test_with_console_sends_other_paths_to_the_double() -> None:
    double = ModelDouble(scenarios.build("happy_path"))
    app = with_console(ModelApp(double), double, port=8080, token="t0k")
    client = TestClient(app, base_url="http://127.0.0.1:8080")
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert client.post("/openai/v1/chat/completions", json=body).status_code == 200
    assert client.get("/console/requests").status_code == 401
    page = client.get("/console/requests", headers={"Authorization": "Bearer t0k"})
    assert page.status_code == 200
    assert "1 request(s)" in page.text
    index = client.get("/console", headers={"Authorization": "Bearer t0k"}, follow_redirects=False)
    assert index.status_code in (303, 307)


def test_every_listed_cassette_link_opens_that_cassette_whatever_its_name(tmp_path: Path) -> None:
    # issue #33: names with & # + % opened another name (the link was not URL-quoted)
    import html
    import re

    names = [f"a{c}b.jsonl" for c in "&#+% ?=;'\"<>"] + ["%2e%2e.jsonl", "sp ace/x+y.jsonl"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(dumps_cassette(Cassette(source=name)))
    client = TestClient(console_app(ConsoleSources(cassettes=tmp_path, base="")))
    listing = client.get("/cassettes").text
    links = [html.unescape(h) for h in re.findall(r'href="(/cassettes/show\?[^"]*)"', listing)]
    assert len(links) == len(names)
    for link, name in zip(links, sorted(names), strict=True):
        page = client.get(link)
        assert page.status_code == 200, (name, link)
        assert html.escape(f"Cassette {name}") in page.text, (name, link)


def _streamed(number: int, frames: int) -> Interaction:
    return Interaction(
        id=f"i-{number}",
        wire="openai-chat",
        request=RecordedRequest(
            method="POST",
            path="/v1/chat/completions",
            body={"model": "m", "messages": [{"role": "user", "content": f"q{number}"}]},
        ),
        response=RecordedResponse(
            status=200,
            headers={"content-type": "text/event-stream"},
            frames=[
                Frame(
                    t=i / 1000, data=f'{{"choices":[{{"delta":{{"content":"w{i} "}},"index":0}}]}}'
                )
                for i in range(frames)
            ]
            + [Frame(t=frames / 1000, data="[DONE]")],
        ),
    )


def test_a_big_cassette_is_shown_a_bounded_page_at_a_time_with_links_to_the_others(
    tmp_path: Path,
) -> None:
    # issue #33: one page held every interaction and a tick per frame
    import html
    import re

    cassette = Cassette(
        interactions=[_streamed(n, 3) for n in range(300)] + [_streamed(300, 20_000)]
    )
    (tmp_path / "big.jsonl").write_bytes(dumps_cassette(cassette))
    client = TestClient(console_app(ConsoleSources(cassettes=tmp_path, base="")))
    seen: list[str] = []
    link: str | None = "/cassettes/show?name=big.jsonl&token=t0k"
    pages = 0
    while link is not None:
        text = client.get(link).text
        pages += 1
        assert text.count("<pre>") <= PAGE_LINES
        lines = sum(block.count("\n") + 1 for block in re.findall(r"<pre>(.*?)</pre>", text, re.S))
        assert lines <= PAGE_LINES
        for bar in text.split("<figure")[1:]:
            assert bar.split("</figure>")[0].count('class="tick') <= MAX_TICKS + 1
        seen += re.findall(r'<section aria-label="Interaction (\d+)"><h2>[^<]*</h2>', text)
        assert "(continued)" not in text  # no interaction here is longer than a page
        found = re.findall(r'<a href="([^"]*)">next</a>', text)
        link = html.unescape(found[0]) if found else None
        if link is not None:
            assert "token=t0k" in link
            assert "name=big.jsonl" in link
    assert pages > 1
    assert f"page {pages} of {pages}" in text
    assert seen == [str(n + 1) for n in range(301)]  # each interaction once, in order
    assert 'class="tick slowest"' in client.get("/cassettes/show?name=big.jsonl&page=99").text


def test_an_interaction_longer_than_a_page_continues_on_the_next(tmp_path: Path) -> None:
    lines = [f"line {n}" for n in range(PAGE_LINES + 10)]
    folder = tmp_path
    from stuntset.console import cassettes_view

    assert cassettes_view.PAGE_LINES == PAGE_LINES
    cli = Interaction(
        id="c-1",
        wire="claude-cli",
        request=RecordedRequest(method="RUN", path="claude", body={"argv": ["-p"], "cwd": "."}),
        response=RecordedResponse(
            status=0,
            frames=[
                Frame(t=i / 1000, data=f'{{"type":"system","n":"{text}"}}')
                for i, text in enumerate(lines)
            ],
        ),
    )
    (folder / "cli.jsonl").write_bytes(dumps_cassette(Cassette(interactions=[cli])))
    client = TestClient(console_app(ConsoleSources(cassettes=folder, base="")))
    first = client.get("/cassettes/show?name=cli.jsonl").text
    second = client.get("/cassettes/show?name=cli.jsonl&page=2").text
    assert "page 1 of 2" in first
    assert "page 2 of 2" in second
    assert "(continued)" in second
    assert "(continued)" not in first
