"""The corpus of credential shapes the recorders and ``verify`` are held to (issue 32): each a
generator of a realistic secret (random characters from a seeded generator, so this file holds
no secret verbatim) and the text it sits in. Grow it: a shape that reached disk once gets a
line here.

``SHAPES`` holds the 23 shapes the issue found on disk and the 18 the earlier tests used.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from typing import NamedTuple

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"


class Shape(NamedTuple):
    """A credential shape: ``make(rng)`` gives a secret, ``context`` the text around it (``{}``
    is the secret), ``core`` the part that must never reach disk (default: the last 16
    characters of the secret)."""

    name: str
    make: Callable[[random.Random], str]
    context: str = "{}"
    core: Callable[[str], str] | None = None


def run(alphabet: str, size: int) -> Callable[[random.Random], str]:
    return lambda rng: "".join(rng.choice(alphabet) for _ in range(size))


def pre(prefix: str, alphabet: str, size: int, suffix: str = "") -> Callable[[random.Random], str]:
    body = run(alphabet, size)
    return lambda rng: prefix + body(rng) + suffix


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _docker(rng: random.Random) -> str:
    return _b64("deploy-bot:" + run(ALNUM, 28)(rng))


def _pem(rng: random.Random) -> str:
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + run(B64, 64 * 6)(rng)
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN " + "PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"


def _service_account(rng: random.Random) -> str:
    """A GCP service-account file as a Read tool returns it: JSON text, the key's newlines
    written as ``\\n`` escapes."""
    return json.dumps({"type": "service_account", "private_key": _pem(rng)}, indent=2)


def _basic(rng: random.Random) -> str:
    return "Bas" + "ic " + _b64("alice:" + run(ALNUM, 16)(rng))


def _jwt(rng: random.Random) -> str:
    head = _b64('{"alg":"HS256","typ":"JWT"}').rstrip("=")
    claims = _b64('{"sub":"' + run(ALNUM, 12)(rng) + '"}').rstrip("=")
    return head + "." + claims + "." + run(URLSAFE, 43)(rng)


def _telegram(rng: random.Random) -> str:
    return run(string.digits, 10)(rng) + ":AA" + run(URLSAFE, 33)(rng)


def _slack_webhook(rng: random.Random) -> str:
    return (
        "https://hooks.slack.com/services/T"
        + run(string.ascii_uppercase + string.digits, 10)(rng)
        + "/B"
        + run(string.ascii_uppercase + string.digits, 10)(rng)
        + "/"
        + run(ALNUM, 24)(rng)
    )


def _azure_storage(rng: random.Random) -> str:
    return (
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey="
        + run(B64, 86)(rng)
        + "==;EndpointSuffix=core.windows.net"
    )


def _after(marker: str) -> Callable[[str], str]:
    return lambda secret: secret.split(marker, 1)[1][:16]


#: The 23 shapes of issue 32 (some in two contexts), and those found since.
NEW: tuple[Shape, ...] = (
    Shape("groq", pre("gs" + "k_", ALNUM, 52)),
    Shape("xai", pre("xa" + "i-", ALNUM, 80)),
    Shape("replicate", pre("r8" + "_", ALNUM, 37)),
    Shape("npm", pre("np" + "m_", ALNUM, 36)),
    Shape("gitlab", pre("glp" + "at-", URLSAFE, 20)),
    Shape("sendgrid", lambda r: "S" + "G." + run(URLSAFE, 22)(r) + "." + run(URLSAFE, 43)(r)),
    Shape("google-oauth", pre("ya" + "29.", URLSAFE, 120)),
    Shape("pypi", pre("py" + "pi-AgEIcHlwaS5vcmc", URLSAFE, 70)),
    Shape("digitalocean", pre("do" + "p_v1_", HEX, 64)),
    Shape("langsmith", lambda r: "lsv" + "2_pt_" + run(HEX, 32)(r) + "_" + run(HEX, 10)(r)),
    Shape("tavily", pre("tv" + "ly-", ALNUM, 32)),
    Shape("vault", pre("hv" + "s.", URLSAFE, 95)),
    Shape("slack-webhook", _slack_webhook),
    Shape("telegram-bot", _telegram, "bot token: {}"),
    Shape("azure-storage", _azure_storage, core=_after("AccountKey=")),
    Shape("docker-config-auth", _docker, '{{"auths": {{"ghcr.io": {{"auth": "{}"}}}}}}'),
    Shape("base64-wrapped-key", lambda r: _b64("sk-" + "ant-api03-" + run(URLSAFE, 40)(r))),
    Shape("azure-openai (no prefix)", run(HEX, 32), "AZURE_OPENAI_API_KEY={}"),
    Shape("mistral (no prefix)", run(ALNUM, 32), "my Mistral key is {}"),
    Shape("cohere (no prefix)", run(ALNUM, 40), "COHERE_API_KEY={}"),
    Shape("aws-secret (bare)", run(B64, 40), "signature {} end"),
    Shape("nested X-Api-Key", run(ALNUM, 32), '{{"headers": {{"X-Api-Key": "{}"}}}}'),
    Shape("api_key in text", run(URLSAFE, 30), '"api_key": "{}"'),
    Shape("--token echoed", run(ALNUM, 36), "running with --token {}"),
    Shape("service-account file", _service_account, core=_after("ASC")),
    # grown since
    Shape(
        "discord-webhook",
        lambda r: (
            "https://discord.com/api/web"
            + "hooks/"
            + run(string.digits, 18)(r)
            + "/"
            + run(URLSAFE, 68)(r)
        ),
    ),
)

#: The 18 shapes the earlier tests used (test_secrets.SECRETS).
EARLIER: tuple[Shape, ...] = (
    Shape("openai", pre("sk-" + "proj-", URLSAFE, 48)),
    Shape("openai (legacy)", pre("sk-", ALNUM, 48)),
    Shape("anthropic", pre("sk-" + "ant-api03-", URLSAFE, 60)),
    Shape("aws-key", pre("AK" + "IA", string.ascii_uppercase + "234567", 16)),
    Shape("aws-key (session)", pre("AS" + "IA", string.ascii_uppercase + "234567", 16)),
    Shape("aws-secret", run(B64, 40), "aws_secret_access_key={}"),
    Shape("github", pre("gh" + "p_", ALNUM, 36)),
    Shape("github (fine-grained)", pre("github" + "_pat_", ALNUM + "_", 60)),
    Shape("google-api-key", pre("AI" + "za", URLSAFE, 35)),
    Shape("huggingface", pre("h" + "f_", string.ascii_letters, 34)),
    Shape("slack", lambda r: "xo" + "xb-" + run(string.digits, 12)(r) + "-" + run(ALNUM, 24)(r)),
    Shape("stripe", pre("sk" + "_live_", ALNUM, 40)),
    Shape("jwt", _jwt),
    Shape("bearer", pre("Bear" + "er ", URLSAFE, 32)),
    Shape("basic-auth", _basic),
    Shape("private-key", _pem, core=_after("ASC")),
    Shape("url-credentials", run(ALNUM, 16), "postgres://alice:{}@db.example.com/app"),
    Shape("env-value", lambda r: "plain-" + run(ALNUM, 20)(r)),
)

SHAPES: tuple[Shape, ...] = NEW + EARLIER


def planted(shape: Shape, seed: int = 0) -> tuple[str, str, str]:
    """(secret, the text holding it, its core) for ``shape``."""
    rng = random.Random(f"{shape.name}/{seed}")
    secret = shape.make(rng)
    text = shape.context.format(secret)
    core = shape.core(secret) if shape.core else secret[-16:]
    return secret, text, core


def encodings(core: str) -> list[str]:
    """How a core may be written in a cassette's bytes: as is, JSON-escaped, percent-encoded,
    and (for a core with ``/`` or ``+``) either escaped."""
    from urllib.parse import quote

    out = {core, json.dumps(core)[1:-1], quote(core, safe=""), quote(core, safe="/")}
    return sorted(out)
