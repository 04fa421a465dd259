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
from typing import Any

import msgspec

from stuntset.ids import IdGenerator, RandomIds
from stuntset.wires import Action, Plan, RenderContext, Reply, WireCodec, render

__all__ = [
    "BAD_HEADER_NAME",
    "BAD_HEADER_VALUE",
    "LaneTemplate",
    "StreamLane",
    "Template",
    "head_lines",
    "lane_template",
    "make_template",
]

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

    __slots__ = (
        "bodies",
        "encoded",
        "headers",
        "lane",
        "length",
        "plain",
        "plan",
        "prefixes",
        "reply",
        "stream",
    )

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
        #: The reply as the server's fast lane writes it, if it can (``lane_template``).
        self.lane = lane_template(self)
        #: The stream as the server's fast lane writes it, if it can (``stream_lane``).
        self.stream = stream_lane(self)

    def fill(self, ids: IdGenerator, created: int) -> Reply:
        """A fresh ``Reply`` with newly minted ids and ``created`` in place of the
        placeholders."""
        # per request: no comprehension (each is a function call of its own) and no
        # keyword arguments; ``map`` and plain loops
        return self.fill_minted(list(map(ids.new, self.prefixes)), created)

    def fill_minted(self, minted: list[str], created: int) -> Reply:
        """``fill`` with the ids already minted (in the order of ``prefixes``)."""
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


#: The characters uvicorn refuses in a header name / value (its ``send`` raises on them).
BAD_HEADER_NAME = re.compile(b'[\x00-\x1f\x7f()<>@,;:\\[\\]={} \t\\\\"]')
BAD_HEADER_VALUE = re.compile(b"[\x00-\x08\x0a-\x1f\x7f]")


class LaneTemplate:
    """A template's reply as the server's fast lane writes it (``_lane``): after uvicorn's
    status line and default headers, the reply's head lines and its body, each one
    %-format with the slots of the ids and the second, and ``content-length`` measured per
    fill. Made only for a whole ``200`` reply in one write whose headers uvicorn accepts
    (``lane_template``); the bytes are those uvicorn's path sends for ``Template.fill``.

    ``quick`` is ``fill`` for ids that need no JSON escaping and fit a header (``RandomIds``:
    our prefix, a dash, hex digits): a function made for this template's slots, a few
    statements long (per request, every call, list and lookup that a general loop needs
    costs more than the splicing itself: ≈ 10k instructions against ≈ 17k).
    """

    __slots__ = ("body", "body_order", "head", "head_slot", "prefixes", "quick", "template")

    def __init__(self, template: Template) -> None:
        self.template = template
        self.prefixes = template.prefixes
        action = template.reply.actions[0]
        assert isinstance(action, bytes)
        self.body, self.body_order = _format(action, len(self.prefixes))
        forms: list[bytes] = []
        slots: list[int] = []
        for name, value in template.reply.headers:
            form, found = _format(value.encode(), len(self.prefixes))
            forms.append(name.lower().encode() + b": " + form + b"\r\n")
            slots += found
        self.head = b"".join(forms) + b"content-length: %d\r\n\r\n"
        #: the id in the head (the request id header: ``lane_template`` wants exactly one)
        self.head_slot = slots[0]
        self.quick: Callable[[Callable[[str], str], int], tuple[bytes, bytes]] = _quick_fill(
            self.prefixes, self.body, self.body_order, self.head, self.head_slot
        )

    def fill(self, ids: IdGenerator, created: int) -> tuple[bytes, bytes] | Reply:
        """The head lines and the body, with newly minted ids and ``created`` in place; a
        ``Reply`` (``Template.fill_minted``, for uvicorn's path) when an id is not fit for a
        header (a custom id generator's control character: uvicorn refuses it)."""
        minted = list(map(ids.new, self.prefixes))
        values = []
        for value in minted:
            values.append(_escape(value)[1:-1])
        values.append(b"%d" % created)
        body = self.body % tuple(values[i] for i in self.body_order)
        value = minted[self.head_slot]
        if not value.isprintable():
            return self.template.fill_minted(minted, created)
        return self.head % (value.encode(), len(body)), body


class StreamLane:
    """A template's stream as the server's fast lane writes it (``_lane``): after uvicorn's
    status line and default headers, the reply's head lines — a %-format with the slot of
    the request id — and its events, each a %-format with the slots of the ids and the
    second (or bytes without any). Made only for a fault-free ``200`` stream of writes whose
    headers uvicorn accepts and does not frame by (``stream_lane``); the bytes are those
    uvicorn's path sends for ``Template.fill``. ``transfer-encoding: chunked`` and the
    blank line are the lane's to add (after the rate limits' lines, as uvicorn's path)."""

    __slots__ = ("events", "head", "head_slot", "prefixes", "template")

    def __init__(self, template: Template) -> None:
        self.template = template
        self.prefixes = template.prefixes
        count = len(self.prefixes)
        #: per event: its bytes, or (its %-format, the values' order)
        self.events: list[bytes | tuple[bytes, tuple[int, ...]]] = []
        for action in template.reply.actions:
            assert isinstance(action, bytes)
            if not action:
                continue  # uvicorn's path writes nothing for it
            if _TOKEN_BYTES in action or _CREATED_BYTES in action:
                self.events.append(_format(action, count))
            else:
                self.events.append(action)
        forms: list[bytes] = []
        slots: list[int] = []
        for name, value in template.reply.headers:
            form, found = _format(value.encode(), count)
            forms.append(name.lower().encode() + b": " + form + b"\r\n")
            slots += found
        self.head = b"".join(forms)
        #: the id in the head (the request id header: ``stream_lane`` wants exactly one)
        self.head_slot = slots[0]

    def fill(self, ids: IdGenerator, created: int) -> tuple[bytes, list[bytes]] | Reply:
        """The head lines and the events, with newly minted ids and ``created`` in place; a
        ``Reply`` (``Template.fill_minted``, for uvicorn's path) when the request id is not
        fit for a header (a custom id generator's control character: uvicorn refuses it)."""
        minted = list(map(ids.new, self.prefixes))
        value = minted[self.head_slot]
        if type(ids) is RandomIds:  # our prefixes, a dash and hex digits: nothing to escape
            values = [m.encode() for m in minted]
        else:
            if not value.isprintable():
                return self.template.fill_minted(minted, created)
            values = [_escape(m)[1:-1] for m in minted]
        values.append(b"%d" % created)
        take = values.__getitem__
        events = []
        for event in self.events:
            if isinstance(event, bytes):
                events.append(event)
            else:
                form, order = event
                events.append(form % tuple(map(take, order)))
        return self.head % value.encode(), events


def stream_lane(template: Template) -> StreamLane | None:
    """``template`` as the fast lane streams it, or ``None`` where uvicorn's path must play
    it (not a ``200`` stream, pauses, a fault, a wait, a header uvicorn refuses or one that
    changes the framing or the connection) or ``Template.fill`` fill it (a head whose ids are
    not just the request id)."""
    reply = template.reply
    if (
        reply.status != 200
        or not reply.streaming
        or reply.wait
        or not all(isinstance(a, bytes) for a in reply.actions)
    ):
        return None
    slots = 0
    for name, value in reply.headers:
        slots += len(_SLOT.findall(value))
        if str(CREATED) in value:
            return None
        check = _TOKEN.join(_SLOT.split(value)[::2])  # the ids' slots are checked per fill
        if (
            name.lower() in ("connection", "content-length", "transfer-encoding")
            or BAD_HEADER_NAME.search(name.encode())
            or BAD_HEADER_VALUE.search(check.encode())
        ):
            return None
    return StreamLane(template) if slots == 1 else None  # the request id, and only it


def _quick_fill(
    prefixes: tuple[str, ...], body: bytes, order: tuple[int, ...], head: bytes, head_slot: int
) -> Callable[[Callable[[str], str], int], tuple[bytes, bytes]]:
    """``LaneTemplate.fill`` for ids that need no escaping, as a function written for these
    slots: ``quick(new, created)`` mints the ids with ``new`` in the order of ``prefixes``.
    The source holds names only; the constants come in through its namespace."""
    names = {f"P{i}": prefix for i, prefix in enumerate(prefixes)}
    lines = ["def quick(new, created):"]
    lines += [f"    v{i} = new(P{i}).encode()" for i in range(len(prefixes))]
    if len(prefixes) in order:
        lines.append('    c = b"%d" % created')
    values = ", ".join("c" if i == len(prefixes) else f"v{i}" for i in order)
    lines.append(f"    body = BODY % ({values}{',' if len(order) == 1 else ''})")
    lines.append(f"    return HEAD % (v{head_slot}, len(body)), body")
    namespace: dict[str, Any] = {**names, "BODY": body, "HEAD": head}
    exec("\n".join(lines), namespace)  # our own source: names and slot numbers only
    quick: Callable[[Callable[[str], str], int], tuple[bytes, bytes]] = namespace["quick"]
    return quick


def head_lines(headers: list[tuple[str, str]]) -> bytes | None:
    """``headers`` as the head lines uvicorn writes for them (names lower-cased), or
    ``None`` if uvicorn would refuse one (its ``send`` raises: ``handle``'s path says so)."""
    lines = []
    for name, value in headers:
        raw_name, raw_value = name.lower().encode(), value.encode()
        if BAD_HEADER_NAME.search(raw_name) or BAD_HEADER_VALUE.search(raw_value):
            return None
        lines.append(raw_name + b": " + raw_value + b"\r\n")
    return b"".join(lines)


def lane_template(template: Template) -> LaneTemplate | None:
    """``template`` as the fast lane writes it, or ``None`` where uvicorn's path must play
    it (a stream, pauses, a fault, a wait, a declared length, a header uvicorn refuses or one
    that changes the connection) or ``Template.fill`` fill it (a head whose ids are not just
    the request id)."""
    reply = template.reply
    if (
        reply.status != 200
        or reply.streaming
        or reply.wait
        or reply.content_length is not None
        or len(reply.actions) != 1
        or not isinstance(reply.actions[0], bytes)
    ):
        return None
    slots = 0
    for name, value in reply.headers:
        slots += len(_SLOT.findall(value))
        if str(CREATED) in value:
            return None
        check = _TOKEN.join(_SLOT.split(value)[::2])  # the ids' slots are checked per fill
        if (
            name.lower() in ("connection", "content-length", "transfer-encoding")
            or BAD_HEADER_NAME.search(name.encode())
            or BAD_HEADER_VALUE.search(check.encode())
        ):
            return None
    return LaneTemplate(template) if slots == 1 else None  # the request id, and only it


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
