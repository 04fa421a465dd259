"""The daemon's WebSocket messages, fuzzed (issue #33): Hypothesis draws requests of every
op with fields of every JSON type (huge numbers, NUL bytes, lone surrogates, deep nesting),
JSON that is not a request, and text that is not JSON, each sent to a real daemon (the
``daemon`` fixture, over the in-memory transport). Each gets one reply, ``ok`` or an
``error`` naming what is wrong — never the daemon's catch-all ("<op> failed: SomeError"),
which is what a traceback looks like on this wire — and the connection and the daemon live
on. Derandomized (the suite's profile), a small ``max_examples``: the slow tier runs it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stuntset.runtime.daemon import DaemonHandle

pytestmark = pytest.mark.slow

OPS = [
    "create_task",
    "create_session",
    "start_turn",
    "interrupt",
    "respond",
    "close",
    "subscribe",
    "unsubscribe",
    "shutdown",
    "",
]
FIELDS = [
    "workdir",
    "task_id",
    "provider",
    "session_id",
    "prompt",
    "reason",
    "request_id",
    "decision",
    "after",
    "epoch",
]

hostile = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.sampled_from([-1, 2**63, 10**400]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "\x00", "a\x00b", "\ud800", "../..", "/", "x" * 5000]),
    st.text(max_size=8),
)
values = st.recursive(
    hostile,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)

#: The fields each op takes (the first ones required).
OP_FIELDS = {
    "create_task": ("workdir",),
    "create_session": ("task_id", "provider"),
    "start_turn": ("session_id", "prompt"),
    "interrupt": ("session_id", "reason"),
    "respond": ("session_id", "request_id", "decision"),
    "close": ("session_id",),
    "subscribe": ("session_id", "after", "epoch"),
    "unsubscribe": ("session_id",),
}

#: What the daemon's catch-all says when something below it raised (not the client's fault).
CATCH_ALL = re.compile(r"^\w+ failed: (?!ProviderBroke)")


@st.composite
def messages(draw: st.DrawFn, session_id: str, task_id: str, workdir: str) -> str:
    kind = draw(st.integers(0, 5))
    if kind == 0:  # any JSON at all
        return json.dumps(draw(values))
    if kind == 1:  # not JSON
        return draw(st.sampled_from(["", "{", "[" * 10_000, '{"op": ', "null", "\ud800x"]))
    op = draw(st.sampled_from(OPS))
    strings = st.text(max_size=8) | st.sampled_from(["", "\x00", "a\x00b", "\ud800", "x" * 5000])
    counts = st.integers(0, 10) | st.sampled_from([-1, 2**63, 10**400])
    known = {
        "session_id": st.sampled_from([session_id, session_id, "nope"]) | strings,
        "task_id": st.sampled_from([task_id, task_id, "nope"]) | strings,
        "provider": st.sampled_from(["happy_path", "stuck", "nope"]) | strings,
        "workdir": st.sampled_from([workdir, "relative", "/nowhere/x", "/dev/null"]) | strings,
        "after": counts,
        "epoch": counts | st.none(),
    }
    wanted = OP_FIELDS.get(op, ())
    names = [n for n in wanted if draw(st.sampled_from([True] * 9 + [False]))]  # or missing
    names += draw(st.lists(st.sampled_from(FIELDS), max_size=1))  # now and then one too many
    fields = {}
    for name in names:
        right = known.get(name, strings)
        fields[name] = draw(st.one_of(right, right, right, right, values))  # or any type
    message = {"op": op, **fields}
    if draw(st.booleans()):
        message["id"] = draw(st.text(max_size=4) | st.integers() | values)
    return json.dumps(message)


def text(message: str) -> str:
    return message.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


@pytest.fixture
def seeded(daemon: DaemonHandle, tmp_path: Path) -> tuple[DaemonHandle, str, str, str]:
    with daemon.client() as client:
        task = client.call("create_task", workdir=str(tmp_path))
        session = client.call("create_session", task_id=task["task_id"], provider="stuck")
    return daemon, session["session_id"], task["task_id"], str(tmp_path)


@settings(max_examples=120, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_generated_message_gets_one_reply_and_the_daemon_serves_on(
    seeded: tuple[DaemonHandle, str, str, str], data: st.DataObject
) -> None:
    daemon, session_id, task_id, workdir = seeded
    message = data.draw(messages(session_id, task_id, workdir))
    with daemon.client("memory", timeout=30) as client:
        client.send_raw(text(message))
        client.send_raw(json.dumps({"op": "unsubscribe", "session_id": "x", "id": "sentinel"}))
        client.reply("sentinel")  # both answered, in order: the connection lives on
        replies = []
        while not replies:  # the message's own reply, past any events it subscribed to
            got = client.next_message()
            assert got["type"] in ("ok", "error", "event", "stale"), got
            if got["type"] in ("ok", "error"):
                replies.append(got)
    [reply] = replies
    if reply["type"] == "error":
        assert not CATCH_ALL.match(reply["message"]), (message[:300], reply)
        assert reply["message"], reply
