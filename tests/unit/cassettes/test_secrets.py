"""Every credential shape, in every channel a cassette holds, is scrubbed before it reaches the
bytes and found by the scan (``verify``) when it is there; nothing else is.

Each case runs in-process on one small cassette (scrub, encode, scan: well under a
millisecond), so the full shape × channel table stays fast. Secrets are assembled from pieces
so this file holds none verbatim.
"""

from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

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
from stuntset.cassettes.format import scrub_cassette
from stuntset.cassettes.secrets import SHAPES, Hit, env_secrets, find_many, find_secrets
from stuntset.cassettes.sse import parse_sse

ENV_TOKEN = "plain-but-secret-value-42"  # no shape: found because of its variable's name
ENV = {"ACME_SERVICE_TOKEN": ENV_TOKEN, "DEBUG_KEY": "1", "HOME": "/home/someone-long"}

#: kind → a secret of that shape.
SECRETS: dict[str, str] = {
    "openai-key": "sk-" + "proj-" + "Ab3xY7" * 8,
    "openai-key (legacy)": "sk-" + "T3BlbkFJ" * 5,
    "anthropic-key": "sk-" + "ant-api03-" + "x9Y_" * 12,
    "aws-key": "AK" + "IA" + "IOSFODNN7EXAMPLE",
    "aws-key (session)": "AS" + "IA" + "QWERTYUIOPASDFGH",
    "aws-secret-key": "aws_secret_access_key=" + "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
    "github-token": "gh" + "p_" + "a1B2c3D4" * 5,
    "github-token (fine-grained)": "github" + "_pat_" + "11ABCDEFG0" + "_aBcDeFgH" * 6,
    "google-api-key": "AI" + "za" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "huggingface-token": "h" + "f_" + "aBcDeFgHiJ" * 4,
    "slack-token": "xo" + "xb-" + "123456789012-" + "abcdefABCDEF1234",
    "stripe-key": "sk" + "_live_" + "51Hq" + "a1B2c3D4" * 3,
    "jwt": "ey"
    + "JhbGciOiJIUzI1NiJ9"
    + ".ey"
    + "JzdWIiOiIxMjM0NTY3ODkwIn0"
    + ".dozjgNryP4J3jVmNHl0w5N",
    "bearer-token": "Bear" + "er " + "opaqueTok" * 3,
    "basic-auth": "Bas" + "ic " + base64.b64encode(b"alice:s3cr3t-pass").decode(),
    "private-key": "-----BEGIN RSA "
    + "PRIVATE KEY-----\nMIIEowIBAAKCAQEA"
    + "q" * 48
    + "\n-----END RSA "
    + "PRIVATE KEY-----",
    "url-credentials": "postgres://alice:" + "hunter2hunter2@db.example.com/app",
    "env-value": ENV_TOKEN,
}


#: The part of a secret that must be gone (default: its last 12 characters).
CORE = {"url-credentials": "hunter2hunter2", "private-key": "q" * 12}


def kind_of(name: str) -> str:
    return name.split(" (")[0]


def scrubber() -> Scrubber:
    return Scrubber(env=ENV)


def http(
    *,
    path: str = "/v1/chat/completions",
    query: str = "",
    headers: dict[str, str] | None = None,
    body: Any = None,
    frames: list[str] | None = None,
    response_body: Any = None,
) -> Cassette:
    return Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="openai-chat",
                request=RecordedRequest(
                    method="POST",
                    path=path,
                    query=query,
                    headers=headers or {},
                    body=body if body is not None else {"model": "m"},
                ),
                response=RecordedResponse(
                    status=200,
                    frames=None if frames is None else [Frame(t=0.0, data=d) for d in frames],
                    body=response_body,
                ),
            )
        ]
    )


def cli(
    *,
    argv: list[str] | None = None,
    stdin: list[str] | None = None,
    stdout: list[str] | None = None,
    stderr: list[str] | None = None,
) -> Cassette:
    body: dict[str, Any] = {
        "argv": argv or ["-p", "hello"],
        "cwd": "/work",
        "stdin": [{"t": 0.0, "data": line} for line in stdin or []],
    }
    return Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire="claude-cli",
                request=RecordedRequest(method="EXEC", path="claude", body=body),
                response=RecordedResponse(
                    status=0,
                    frames=[Frame(t=0.0, data=line) for line in stdout or ['{"type":"result"}']],
                    body={"stderr": [{"t": 0.0, "data": line} for line in stderr]}
                    if stderr
                    else None,
                ),
            )
        ]
    )


def assistant(text: str) -> str:
    return json.dumps(
        {"type": "assistant", "message": {"content": [{"type": "text", "text": text}]}}
    )


def chunk(text: str) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]})


CHANNELS = {
    "header": lambda s: http(headers={"x-request-id": s}),
    "query": lambda s: http(query="q=" + quote(s, safe="")),
    "path": lambda s: http(path="/v1/files/" + quote(s, safe="") + "/content"),
    "json body": lambda s: http(
        body={"model": "m", "messages": [{"role": "user", "content": f"use {s} now"}]}
    ),
    "json body, \\u-escaped": lambda s: http(body={"model": "m", "input": "\u2063" + s}),
    "response body": lambda s: http(response_body={"output_text": f"here: {s}."}),
    "cli argv": lambda s: cli(argv=["-p", f"deploy with {s}"]),
    "cli stdin": lambda s: cli(stdin=[json.dumps({"type": "user", "message": {"content": s}})]),
    "cli stdout": lambda s: cli(stdout=[assistant(f"the key is {s}")]),
    "cli stderr": lambda s: cli(stderr=[f"error: bad credential {s}\n"]),
    # the secret is the value of ACME_DEPLOY_TOKEN in the recorder's environment (see below)
    "cli env": lambda s: cli(stdout=[assistant(f"$ printenv\nACME_DEPLOY_TOKEN={s}\n")]),
}


def written(cassette: Cassette) -> bytes:
    return dumps_cassette(scrub_cassette(cassette, scrubber()))


@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("name", SECRETS)
def test_every_shape_in_every_channel_is_scrubbed_and_found(name: str, channel: str) -> None:
    secret = SECRETS[name]
    cassette = CHANNELS[channel](secret)
    env = {**ENV, "ACME_DEPLOY_TOKEN": secret} if channel == "cli env" else ENV
    raw = dumps_cassette(cassette)
    findings = scan_for_secrets(raw, Scrubber(env=env))
    assert findings, f"verify misses a {name} in the {channel}"
    clean = dumps_cassette(scrub_cassette(cassette, Scrubber(env=env)))
    assert scan_for_secrets(clean, Scrubber(env=env)) == []
    text = clean.decode()
    decoded = json.loads(text.splitlines()[-1])
    flat = json.dumps(decoded, ensure_ascii=False)
    # the secret's distinctive part is gone, however it was written
    core = CORE.get(name, secret[-12:])
    assert core not in flat
    assert core not in text
    assert "<scrubbed:" in flat or "%3Cscrubbed" in flat


def test_a_key_written_with_one_json_escape_is_found_and_scrubbed() -> None:
    key = SECRETS["anthropic-key"]
    escaped = f"\\u{ord(key[0]):04x}" + key[1:]
    line = '{"id":"x","kind":"block","value":"' + escaped + '"}'
    header = b'{"format":"stuntset-cassette","kind":"header","version":1}\n'
    findings = scan_for_secrets(header + line.encode() + b"\n", scrubber())
    assert [(f.line, f.kind) for f in findings] == [(2, "anthropic-key")]
    assert findings[0].describe().startswith("line 2, field value: looks like a anthropic-key")
    stdin = '{"type":"user","message":{"content":"' + escaped + '"}}'
    clean = written(cli(stdin=[stdin]))
    assert key not in clean.decode()
    assert scan_for_secrets(clean, scrubber()) == []


def split_everywhere(secret: str) -> list[list[str]]:
    """The secret streamed in two frames, cut at every position, between other text."""
    return [
        [chunk("Here is "), chunk(secret[:cut]), chunk(secret[cut:]), chunk(" ok.")]
        for cut in range(1, len(secret))
    ]


@pytest.mark.parametrize("name", SECRETS)
def test_a_key_split_across_sse_frames_at_every_position(name: str) -> None:
    secret = SECRETS[name]
    whole = scrubber().text(f"Here is {secret} ok.")  # split or not, the same text comes out
    assert f"<scrubbed:{kind_of(name)}>" in whole
    for frames in split_everywhere(secret):
        cassette = http(frames=frames)
        assert scan_for_secrets(dumps_cassette(cassette), scrubber()), (name, frames)
        clean = scrub_cassette(cassette, scrubber()).interactions[0].response.frames
        assert clean is not None
        assert len(clean) == len(frames)
        parsed = [json.loads(f.data) for f in clean]  # every frame still parses
        text = "".join(p["choices"][0]["delta"]["content"] for p in parsed)
        assert text == whole, frames
        assert (
            scan_for_secrets(
                dumps_cassette(
                    Cassette(
                        interactions=[
                            Interaction(
                                id="i-1",
                                wire="openai-chat",
                                request=RecordedRequest(method="POST", path="/v1/chat/completions"),
                                response=RecordedResponse(status=200, frames=clean),
                            )
                        ]
                    )
                ),
                scrubber(),
            )
            == []
        )


@pytest.mark.parametrize("name", ["openai-key", "jwt", "env-value", "private-key"])
def test_a_key_split_across_cli_stdout_lines_and_anthropic_deltas(name: str) -> None:
    secret = SECRETS[name]
    for cut in range(1, len(secret), 3):
        lines = [
            json.dumps(
                {
                    "type": "stream_event",
                    "event": {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": part},
                    },
                }
            )
            for part in ("key: ", secret[:cut], secret[cut:], ".")
        ]
        cassette = cli(stdout=lines)
        assert scan_for_secrets(dumps_cassette(cassette), scrubber())
        clean = written(cassette)
        assert scan_for_secrets(clean, scrubber()) == []
        frames = json.loads(clean.splitlines()[-1])["response"]["frames"]
        text = "".join(json.loads(f["data"])["event"]["delta"]["text"] for f in frames)
        assert text == f"key: <scrubbed:{kind_of(name)}>."


def test_credential_options_and_query_parameters_are_scrubbed_whatever_their_value() -> None:
    clean = scrub_cassette(
        cli(argv=["--token", "abc12345", "--api-key=zzz", "--db-password", "pw", "-p", "hi"]),
        scrubber(),
    ).interactions[0]
    assert clean.request.body["argv"] == [
        "--token", "<scrubbed:cli-option>",
        "--api-key=<scrubbed:cli-option>",
        "--db-password", "<scrubbed:cli-option>",
        "-p", "hi",
    ]  # fmt: skip
    query = (
        scrub_cassette(
            http(query="api_key=k1&token=t2&key=k3&model=gpt&access_token=a4"), scrubber()
        )
        .interactions[0]
        .request.query
    )
    assert query == (
        "api_key=<scrubbed:api_key>&token=<scrubbed:token>&key=<scrubbed:key>&model=gpt"
        "&access_token=<scrubbed:access_token>"
    )
    untouched = http(query="model=gpt&stream=true")
    assert (
        scrub_cassette(untouched, scrubber()).interactions[0].request.query
        == "model=gpt&stream=true"
    )


def test_environment_values_by_name_suffix_with_a_minimum_length() -> None:
    env = {
        "ACME_KEY": "k" * 12,
        "MY_TOKEN": "t" * 12,
        "DB_PASSWORD": "p" * 12,
        "APP_SECRET": "s" * 12,
        "DEBUG_KEY": "1",  # too short: would scrub every "1"
        "PATH": "/usr/bin:/bin",
        "KEYBOARD": "x" * 12,  # the name does not end in KEY
    }
    assert env_secrets(env) == ["kkkkkkkkkkkk", "pppppppppppp", "ssssssssssss", "tttttttttttt"]
    assert Scrubber(env=env).text("1 + 1 = 2; xxxxxxxxxxxx") == "1 + 1 = 2; xxxxxxxxxxxx"


def test_a_secret_field_in_a_file_is_found_even_without_a_shape() -> None:
    line = b'{"auth": {"client_secret": "just-some-words-here"}, "key": "ordinary"}\n'
    findings = scan_for_secrets(line, Scrubber(env={}))
    assert [f.kind for f in findings] == ["client_secret field"]
    assert (
        scan_for_secrets(b'{"client_secret": "<scrubbed:client_secret>"}\n', Scrubber(env={})) == []
    )


def test_every_shape_has_a_planted_example() -> None:
    """Each shape of the table finds one of the planted secrets (here, or in the corpus of
    ``test_secret_corpus``)."""
    from _secret_corpus import SHAPES as CORPUS
    from _secret_corpus import planted

    texts = [*SECRETS.values(), *(planted(shape)[1] for shape in CORPUS)]
    found = {hit.kind for text in texts for hit in find_secrets(text)}
    assert {shape.name for shape in SHAPES} - found == set()


def test_the_crafted_eyj_text_is_scanned_in_linear_time() -> None:
    """The issue asks for the crafted 240 KB case under 50 ms (measured in bench/, case
    secret_scan). This asserts a deliberately generous bound (1 s, against 30 s for the
    quadratic scanner) so a loaded machine cannot fail it, plus the shape of the claim:
    ten times the text takes well under a hundred times as long."""
    small = ("eyJ" * 8_000).encode()
    large = ("eyJ" * 80_000).encode()
    scan = Scrubber(env={})

    def timed(data: bytes) -> float:
        # CPU time, not wall time: a process descheduled on a loaded machine is not charged
        start = time.process_time()
        scan_for_secrets(b'{"body":"' + data + b'"}\n', scan)
        return time.process_time() - start

    timed(small)
    small_time = min(timed(small) for _ in range(5))
    large_time = min(timed(large) for _ in range(3))
    assert large_time < 1.0
    assert large_time < 40 * max(small_time, 1e-4)


#: Text crafted against each shape: its start over and over (each one a candidate that a
#: backtracking pattern would read to the end of the run).
CRAFTED = [
    "sk-", "sk-ant-", "sk_live_", "AKIA", "aws_secret_access_key=", "ghp_", "github_pat_",
    "AIza", "hf_", "xoxb-", "eyJ", "eyJaaaaaaaaaaaaaaaaaaaa.", "-----BEGIN ", "Bearer ",
    "Basic ", "https://a:",
]  # fmt: skip


@pytest.mark.parametrize("unit", CRAFTED)
def test_text_crafted_against_each_shape_is_scanned_in_linear_time(unit: str) -> None:
    """The same generous bound as above (the issue's claim is < 50 ms for 240 KB; the bench
    measures it), for a 240 KB run crafted against every shape of the table."""
    data = b'{"body":' + json.dumps(unit * (240_000 // len(unit))).encode() + b"}\n"
    start = time.process_time()  # CPU time: a loaded machine's waits are not charged
    scan_for_secrets(data, Scrubber(env={}))
    assert time.process_time() - start < 1.0


# --- no false positives ---------------------------------------------------------------------

ROOT = Path(__file__).parents[3]


def _catalog_streams() -> list[tuple[str, str, bytes]]:
    from stuntset import scenarios
    from stuntset.doubles.model import ModelDouble
    from stuntset.errors import ScriptError

    out = []
    for entry in scenarios.all():
        for path, body in (
            (
                "/v1/chat/completions",
                {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
            ),
            ("/v1/responses", {"model": "m", "stream": True, "input": "hi"}),
            (
                "/v1/messages",
                {
                    "model": "m",
                    "stream": True,
                    "max_tokens": 64,
                    "messages": [{"role": "user", "content": "hi"}],
                },
            ),
        ):
            try:
                double = ModelDouble(entry.build(), cycle=True, scenario_routes=False)
            except ScriptError:  # not renderable on a model wire (spawn_missing)
                continue
            for _ in range(len(double.script.turns)):
                reply = double.handle(
                    "POST",
                    path,
                    "",
                    {"content-type": "application/json"},
                    json.dumps(body).encode(),
                )
                data = b"".join(a for a in reply.actions if isinstance(a, bytes))
                out.append((entry.name, path, data))
    return out


def test_no_false_positive_on_the_catalog_rendered_through_the_doubles() -> None:
    streams = _catalog_streams()
    assert len(streams) > 50
    for name, path, data in streams:
        frames = [data_ for _, data_ in parse_sse(data)] or [data.decode("utf-8", "replace")]
        cassette = http(path=path, frames=frames)
        assert scan_for_secrets(dumps_cassette(cassette), Scrubber(env={})) == [], (name, path)
        clean = scrub_cassette(cassette, Scrubber(env={})).interactions[0].response.frames
        assert [f.data for f in clean or []] == frames, (name, path)


@pytest.mark.parametrize(
    "path",
    [
        ROOT / "README.md",
        ROOT / "docs" / "design.md",
        *sorted(p for p in (ROOT / "tests").rglob("*.jsonl") if "hostile" not in p.parts),
    ],
    ids=lambda p: str(Path(p).relative_to(ROOT)),
)
def test_no_false_positive_on_the_readme_docs_and_the_repos_own_jsonl(path: Path) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    hits = [(m, text[m.start : m.end]) for m in find_secrets(text)]
    assert hits == []


def test_placeholders_are_never_found_again() -> None:
    text = " ".join(f"<scrubbed:{kind_of(n)}>" for n in SECRETS) + " <scrubbed:cli-option>"
    assert find_secrets(text) == []
    assert re.search(r"sk-|eyJ|AKIA", text) is None


def test_no_false_positive_on_the_catalog_through_the_fake_clis(tmp_path: Path) -> None:
    """The fake claude (stream-json) and codex (exec --json) play every scenario that ends by
    itself; stdout and stderr, as the tee records them, hold nothing that looks like a secret
    and come out of the scrubber unchanged. (One process per scenario and program.)"""
    import os
    import subprocess

    from stuntset import scenarios
    from stuntset.doubles.cli import install_cli

    programs = {
        "claude": ["-p", "hi", "--output-format", "stream-json", "--verbose"],
        "codex": ["exec", "--json", "hi"],
    }
    played = 0
    for program, args in programs.items():
        for entry in scenarios.all():
            if entry.name in ("stuck", "spawn_missing"):  # never ends / nothing to spawn
                continue
            cli = install_cli(
                program, entry.build(), bin_dir=tmp_path / program / entry.name, time_scale=0
            )
            done = subprocess.run(
                [str(cli.path), *args],
                input=b"",
                capture_output=True,
                timeout=30,
                env={**os.environ, "IS_SANDBOX": "1"},
            )
            out = done.stdout.decode("utf-8", "replace").splitlines()
            err = done.stderr.decode("utf-8", "replace").splitlines(keepends=True)
            cassette = cli_run(program, args, out, err)
            assert scan_for_secrets(dumps_cassette(cassette), Scrubber(env={})) == [], (
                program,
                entry.name,
            )
            assert scrub_cassette(cassette, Scrubber(env={})) == cassette, (program, entry.name)
            played += 1
    assert played == 2 * (len(scenarios.all()) - 2)


def cli_run(program: str, argv: list[str], stdout: list[str], stderr: list[str]) -> Cassette:
    return Cassette(
        interactions=[
            Interaction(
                id="i-1",
                wire=f"{program}-cli",
                request=RecordedRequest(method="EXEC", path=program, body={"argv": argv}),
                response=RecordedResponse(
                    status=0,
                    frames=[Frame(t=0.0, data=line) for line in stdout],
                    body={"stderr": [{"t": 0.0, "data": line} for line in stderr]},
                ),
            )
        ]
    )


def test_a_shape_does_not_start_inside_a_longer_word() -> None:
    """The left boundary that also keeps the scan linear: ``task-…`` holds ``sk-`` and
    ``disk_live_…`` holds ``sk_live_``, neither is a key."""
    words = [
        "task-" + "a" * 30,
        "disk_" + "live_" + "a" * 20,
        "xeyJ" + "a" * 10 + ".eyJ" + "b" * 10 + "." + "c" * 10,
        "PAKIA" + "B" * 16,
        "thf_" + "a" * 32,
        "unbearer " + "t" * 20,
    ]
    assert [find_secrets(word) for word in words] == [[]] * len(words)
    apart = [
        "a " + w[len(prefix) :]
        for w, prefix in zip(words, ["ta", "di", "x", "P", "t", "un"], strict=True)
    ]
    assert [[h.kind for h in find_secrets(text)] for text in apart] == [
        ["openai-key"],
        ["stripe-key"],
        ["jwt"],
        ["aws-key"],
        ["huggingface-token"],
        ["bearer-token"],
    ]


def test_many_texts_are_searched_in_one_pass_each_hit_in_its_own_text() -> None:
    key = SECRETS["openai-key"]
    pem = SECRETS["private-key"].split("\n-----END")[0]  # a body with no end runs on
    texts = ["nothing", f"a {key}", "", pem, "after the key", key]
    found = find_many(texts, Scrubber(env={}).find)
    assert [[(h.start, h.end, h.kind) for h in hits] for hits in found] == [
        [],
        [(2, 2 + len(key), "openai-key")],
        [],
        [(0, len(pem), "private-key")],  # clipped to its own text
        [],
        [(0, len(key), "openai-key")],
    ]


def test_a_text_repeated_among_many_is_searched_once_and_answered_for_each() -> None:
    key = SECRETS["openai-key"]
    searched: list[str] = []

    def find(text: str) -> list[Hit]:
        searched.append(text)
        return Scrubber(env={}).find(text)

    texts = [f"a {key}", "gpt-4o", f"a {key}", "gpt-4o", "x"]
    found = find_many(texts, find)
    assert [[(h.start, h.kind) for h in hits] for hits in found] == [
        [(2, "openai-key")],
        [],
        [(2, "openai-key")],
        [],
        [],
    ]
    assert found[0] is not found[2]  # each its own list: a caller may change one
    assert len(searched) == 1
    assert searched[0].count(key) == 1


def test_overlapping_secrets_are_redacted_as_one_leaving_no_tail() -> None:
    """An unterminated private key runs on into the text after it; a key starting inside that
    run is covered to its own end (dropping it would leave its tail in place)."""
    key = SECRETS["openai-key"]
    pem = SECRETS["private-key"].split("\n-----END")[0]
    text = f"{pem}\nthen {key}. Done"
    (hit,) = find_secrets(text)
    assert (hit.start, hit.end, hit.kind) == (0, text.index(key) + len(key), "private-key")
    assert Scrubber(env={}).text(text) == "<scrubbed:private-key>. Done"
