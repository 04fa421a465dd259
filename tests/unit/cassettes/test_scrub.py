from __future__ import annotations

import pytest

from stuntset.cassettes.scrub import Scrubber, scan_for_secrets

SHAPES = {
    "anthropic-key": "sk-" + "ant-api03-" + "a" * 40,
    "openai-key": "sk-" + "proj-" + "b" * 40,
    "aws-key": "AKIA" + "ABCDEFGHIJKLMNOP",
    "github-token": "ghp_" + "c" * 36,
    "slack-token": "xoxb-" + "1234567890-abc",
    "jwt": "eyJ" + "hbGciOiJIUzI1" + ".eyJ" + "zdWIiOiIxMjM0" + ".abcdefghijkl",
    "bearer-token": "Bearer " + "d" * 32,
}


@pytest.mark.parametrize(("kind", "secret"), SHAPES.items())
def test_each_shape_is_found_and_scrubbed(kind: str, secret: str) -> None:
    findings = scan_for_secrets(f'{{"x": "{secret}"}}\n'.encode(), Scrubber(env={}))
    assert [f.kind for f in findings][:1] == [kind]
    assert findings[0].line == 1
    scrubbed = Scrubber(env={}).text(f"before {secret} after")
    assert secret not in scrubbed
    assert f"<scrubbed:{kind}>" in scrubbed
    assert scan_for_secrets(scrubbed.encode(), Scrubber(env={})) == []


def test_env_values_are_replaced_wherever_they_appear() -> None:
    scrubber = Scrubber(env={"OPENAI_API_KEY": "not-shaped-like-a-key-123"})
    assert scrubber.text("k=not-shaped-like-a-key-123;") == "k=<scrubbed:env-value>;"
    findings = scan_for_secrets(b"line one\nk=not-shaped-like-a-key-123\n", scrubber)
    assert [(f.line, f.column, f.kind) for f in findings] == [(2, 3, "env-value")]
    assert findings[0].describe() == "line 2, column 3: looks like a env-value (not-sh…)"


def test_headers_are_allow_listed_and_denied_ones_never_kept() -> None:
    scrubber = Scrubber(env={})
    scrubber.allow_header("X-Acme-Trace")
    scrubber.allow_header("Authorization")
    kept = scrubber.headers(
        {"Authorization": "x", "X-Acme-Trace": "t", "Content-Type": "a/b", "Server": "s"}
    )
    assert kept == {"x-acme-trace": "t", "content-type": "a/b"}


def test_secret_fields_are_scrubbed_at_any_depth() -> None:
    data = {"a": [{"token": "t0ps3cret", "n": 1}], "password": "", "key": 5}
    assert Scrubber(env={}).value(data) == {
        "a": [{"token": "<scrubbed:token>", "n": 1}],
        "password": "",
        "key": 5,
    }


def test_placeholders_do_not_look_like_secrets() -> None:
    text = " ".join(f"<scrubbed:{kind}>" for kind in SHAPES)
    assert scan_for_secrets(text.encode(), Scrubber(env={})) == []
