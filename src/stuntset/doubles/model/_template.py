"""Replies made once and filled in per request: the fast path of ``stuntset serve`` and of
the in-process transport for fault-free responses.

What a fault-free reply holds of the request is the model name and the stream options (part
of the key), the ``created`` second and the ids the double mints for it (response, request,
tool call and item ids). A template is the reply rendered with placeholder ids (a fixed
random token plus the mint's sequence number) and a placeholder second (``CREATED``), made
once per script, model and options. Filling it mints the real ids in the same order (a
``SequentialIds`` counts exactly as a fresh render would) and puts them and the second where
the placeholders were, JSON-escaped in bodies. The bytes are those a fresh render gives
(tests/unit/doubles/model/test_model_template.py checks this over the catalog, every wire,
streamed and not).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

import msgspec

from stuntset.ids import IdGenerator

from ._common import Plan, RenderContext, WireCodec, render
from ._reply import Action, Reply

__all__ = ["Template", "make_template"]

_TOKEN = "stuntsetid" + os.urandom(6).hex()
_TOKEN_BYTES = _TOKEN.encode()
#: The ``created`` second a template is rendered with: 17 random digits (no real second
#: has that many), replaced by the request's second when the template is filled.
CREATED = int("9" + "".join(str(b % 10) for b in os.urandom(16)))
_CREATED_BYTES = b"%d" % CREATED
_escape: Callable[[str], bytes] = msgspec.json.Encoder().encode


def _placeholder(n: int) -> str:
    return f"{_TOKEN}{n:04d}z"


class _RecordingIds:
    """Hands out placeholders and remembers the prefixes asked for, in order."""

    def __init__(self) -> None:
        self.prefixes: list[str] = []

    def new(self, prefix: str) -> str:
        self.prefixes.append(prefix)
        return _placeholder(len(self.prefixes) - 1)


class Template:
    """A rendered reply with placeholder ids, cut where they are (so filling is one join).

    It also holds the reply's head as the bytes an ASGI server sends (``Reply.encoded``):
    a filled reply goes out without its headers being listed, measured and encoded again.
    """

    __slots__ = ("bodies", "encoded", "headers", "length", "plain", "plan", "prefixes", "reply")

    def __init__(self, plan: Plan, reply: Reply, prefixes: list[str]) -> None:
        self.plan = plan  # kept: the key holds its id()
        self.reply = reply
        self.prefixes = tuple(prefixes)
        #: (action index, %-format of the bytes, the ids' sequence numbers in order; the
        #: number ``len(prefixes)`` stands for the ``created`` second)
        self.bodies = tuple(
            (i, *_format(a, len(prefixes)))
            for i, a in enumerate(reply.actions)
            if isinstance(a, bytes) and (_TOKEN_BYTES in a or _CREATED_BYTES in a)
        )
        self.headers = tuple(
            (i, _cut_text(v)) for i, (_, v) in enumerate(reply.headers) if _TOKEN in v
        )
        #: the head as bytes; ``content-length`` (last, when the reply declares one) is
        #: measured per fill, as the ids' length may vary
        self.length = not reply.streaming and reply.status is not None
        #: every action a write (no pauses): the body's length is the sum of theirs
        self.plain = all(isinstance(a, bytes) for a in reply.actions)
        if self.length and reply.content_length is not None:
            self.length = False
            self.encoded = [(k.encode(), v.encode()) for k, v in reply.header_list()]
        else:
            self.encoded = [(k.encode(), v.encode()) for k, v in reply.headers]

    def fill(self, ids: IdGenerator, created: int) -> Reply:
        """A fresh ``Reply`` with newly minted ids and ``created`` in place of the
        placeholders."""
        # per request: no comprehension (each is a function call of its own) and no
        # keyword arguments; ``map`` and plain loops
        minted = list(map(ids.new, self.prefixes))
        reply = self.reply
        actions = reply.actions
        if self.bodies:
            escaped = []
            for value in minted:
                escaped.append(_escape(value)[1:-1])
            escaped.append(b"%d" % created)
            take = escaped.__getitem__
            actions = actions.copy()
            for i, form, order in self.bodies:
                actions[i] = form % tuple(map(take, order))
        headers = reply.headers
        encoded = self.encoded.copy()
        if self.headers:
            headers = headers.copy()
            for i, parts in self.headers:
                text = []
                for part in parts:
                    text.append(part if isinstance(part, str) else minted[part])
                value = "".join(text)
                headers[i] = (headers[i][0], value)
                encoded[i] = (encoded[i][0], value.encode())
        else:
            headers = headers.copy()
        if self.length:
            # ``plain``: every action is bytes
            size = sum(map(len, actions)) if self.plain else reply_length(actions)  # type: ignore[arg-type]
            encoded.append((b"content-length", b"%d" % size))
        if actions is reply.actions:
            actions = actions.copy()
        return Reply(
            reply.status,
            headers,
            actions,
            reply.streaming,
            reply.content_length,
            reply.wait,
            encoded,
        )


def reply_length(actions: list[Action]) -> int:
    """The number of body bytes ``actions`` write."""
    return sum([len(a) for a in actions if isinstance(a, bytes)])


_SLOT = re.compile(re.escape(_TOKEN) + r"(\d{4})z")
_SLOT_BYTES = re.compile(re.escape(_TOKEN_BYTES) + rb"(\d{4})z|" + _CREATED_BYTES)


def _format(data: bytes, created: int) -> tuple[bytes, tuple[int, ...]]:
    """``data`` as a ``%b`` format (literal ``%`` doubled) and the values that fill it, in
    order: ids by sequence number, ``created`` for the second."""
    parts = _SLOT_BYTES.split(data)  # text, number (None: the second), text, ..., text
    form = b"%b".join(part.replace(b"%", b"%%") for part in parts[::2])
    return form, tuple(created if n is None else int(n) for n in parts[1::2])


def _cut_text(text: str) -> list[str | int]:
    parts = _SLOT.split(text)
    return [int(p) if i % 2 else p for i, p in enumerate(parts) if i % 2 or p]


def make_template(
    codec: WireCodec,
    plan: Plan,
    streaming: bool,
    ctx: RenderContext,
    id_prefix: str,
) -> Template:
    """Render ``plan`` once with placeholder ids (``ctx`` gives model, created, options)."""
    recording = _RecordingIds()
    ctx.created = CREATED
    ctx.response_id = recording.new(id_prefix)
    ctx.request_id = recording.new("req")
    ctx.ids = recording
    reply = render(codec, plan, streaming, ctx)
    return Template(plan, reply, recording.prefixes)
