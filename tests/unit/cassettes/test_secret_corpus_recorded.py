"""The corpus through the real record paths (issue 32): the recording proxy in front of a
model double (request body, query, path, response body, SSE text and tool-call arguments
streamed in pieces) and the CLI tee around a real program (argv, stdin, stdout split over
lines, stderr). Nothing of any shape reaches the file, in any encoding, and ``verify`` passes
it."""

from __future__ import annotations

import io
import json
import random
import signal
import sys
from pathlib import Path
from urllib.parse import quote

import httpx2
import pytest
from _secret_corpus import SHAPES, encodings, planted

import stuntset
from stuntset.cassettes import Scrubber, load_cassette, verify_tree
from stuntset.cassettes.cli_record import main
from stuntset.cassettes.record import record
from stuntset.script import Script, Text, ToolCall

ENV_NAME = "ACME_SERVICE_TOKEN"
PLANTED = [planted(shape) for shape in SHAPES]
ENV = {
    ENV_NAME: next(
        s for shape, (s, _, _) in zip(SHAPES, PLANTED, strict=True) if shape.name == "env-value"
    )
}
TEXTS = [text for _, text, _ in PLANTED]


def leaks(path: Path) -> list[str]:
    written = path.read_text()
    return [
        shape.name
        for shape, (_, _, core) in zip(SHAPES, PLANTED, strict=True)
        if any(form in written for form in encodings(core))
    ]


def test_http_recordings_hold_no_shape(tmp_path: Path) -> None:
    rng = random.Random("http")
    streamed = " | ".join(TEXTS)
    scripts = {
        "text": Script.of([Text(streamed, chunk_size=rng.randint(3, 9))]),
        "tool": Script.of([ToolCall("bash", {"command": streamed}, fragments=97)]),
        "body": Script.of([Text("answer: " + streamed)]),
    }
    scrubber = Scrubber(env=ENV)
    for name, script in scripts.items():
        path = tmp_path / f"{name}.jsonl"
        with (
            stuntset.serve(script) as upstream,
            record(upstream.url("openai"), path, scrubber=scrubber) as recording,
            httpx2.Client(base_url=recording.url, timeout=30) as client,
        ):
            body = {
                "model": "m",
                "messages": [{"role": "user", "content": " ; ".join(TEXTS)}],
                "stream": name != "body",
            }
            query = "&".join(f"q{n}={quote(t, safe='')}" for n, t in enumerate(TEXTS[:20]))
            client.post("/chat/completions?" + query, json=body).read()
            for text in TEXTS[::7]:  # in a path segment (what the double says does not matter)
                client.get("/files/" + quote(text, safe="") + "/content").read()
        assert leaks(path) == [], name
        # the cassette and its folder's _blocks.jsonl (the long user message is a block)
        assert verify_tree(path, scrubber=scrubber) == (2, []), name
        assert load_cassette(path).interactions  # recorded, not dropped


def test_a_cli_run_holds_no_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_NAME, ENV[ENV_NAME])
    rng = random.Random("cli")
    real = tmp_path / "real"
    real.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "texts = json.loads(open(sys.argv[-1]).read())\n"
        "for line in sys.stdin:\n"
        "    sys.stdout.write(line)\n"
        # each text after a space (two texts back to back are one word to any reader), then
        # cut in two lines and two deltas at a drawn place
        "for text, cut in texts:\n"
        "    print('out: ' + text[:cut]); print(text[cut:])\n"
        "    print(json.dumps({'type': 'stream_event', 'event': {'index': 0, 'delta':"
        " {'text': ' ' + text[:cut]}}}))\n"
        "    print(json.dumps({'type': 'stream_event', 'event': {'index': 0, 'delta':"
        " {'text': text[cut:]}}}))\n"
        "    sys.stderr.write('error: ' + text + '\\n')\n"
    )
    real.chmod(0o755)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps([[t, rng.randint(1, len(t) - 1)] for t in TEXTS]))
    stdin = "".join(
        json.dumps({"type": "user", "message": {"content": t}}) + "\n" for t in TEXTS
    ).encode()
    streams = {
        name: io.TextIOWrapper(io.BytesIO(data))
        for name, data in (("stdin", stdin), ("stdout", b""), ("stderr", b""))
    }
    for name, stream in streams.items():
        monkeypatch.setattr(sys, name, stream)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    cassette = tmp_path / "run.jsonl"
    argv = ["--token", PLANTED[0][0], "-p", " ".join(TEXTS[:10]), str(plan)]
    try:
        status = main("tool", str(real), str(cassette), argv)
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert status == 0
    assert PLANTED[0][0].encode() in streams["stdout"].buffer.getvalue()  # the client saw it
    assert leaks(cassette) == []
    assert verify_tree(cassette) == (1, [])
