"""Events are checked at the door of a log: what is stored must read back exactly as given.

``checked_batch`` encodes a batch (the bytes a store keeps), decodes it again with the typed
decoder (one call for the whole batch) and compares: an event with a field of the wrong type
(``ts="now"``), a value outside its literal (``kind="network"``), ``NaN`` or infinity (JSON has
neither: they would come back as ``null``), or a payload that JSON changes (a tuple, a
non-string key) is refused with one ``InvalidEvent`` naming the batch index and the field.
The check costs one decode per event: both stores and the session host use it, so the memory
and SQLite logs agree on what they accept and on what they hand back.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import NoReturn

import msgspec

from stuntset.errors import InvalidEvent
from stuntset.events import Event, EventBase, type_of, with_seq

__all__ = ["check_event", "checked_batch"]

_encoder = msgspec.json.Encoder(order="deterministic")
_one = msgspec.json.Decoder(Event)
_many = msgspec.json.Decoder(list[Event])
_AT = re.compile(r"at `\$\.?([^`]*)`")


def checked_batch(
    events: Sequence[object], *, where: str, first_seq: int | None = None
) -> tuple[list[Event], list[bytes]]:
    """``events`` as they will read back, and their JSON; ``InvalidEvent`` if any would not.

    With ``first_seq`` they are numbered ``first_seq, first_seq + 1…`` (what a store does);
    without it they keep whatever ``seq`` they carry.
    """
    typed: Sequence[Event] = events  # type: ignore[assignment]  # checked on the slow path
    try:
        if first_seq is not None:
            typed = [with_seq(event, seq) for seq, event in enumerate(typed, first_seq)]
        encoded = [_encoder.encode(event) for event in typed]
        decoded = _many.decode(b"[" + b",".join(encoded) + b"]")
    except (TypeError, ValueError, RecursionError, msgspec.MsgspecError):
        _raise_refused(events, where, first_seq)
    if decoded != (typed if isinstance(typed, list) else list(typed)):
        _check_types(events, where)
        _raise_changed(typed, decoded, where)
    return decoded, encoded


def _check_types(events: Sequence[object], where: str) -> None:
    for index, event in enumerate(events):
        if not isinstance(event, EventBase):
            raise InvalidEvent(
                f"{where}: events[{index}] is a {type(event).__name__}, not a stuntset event "
                "(build it from stuntset.events, or decode it with stuntset.events.decode); "
                "nothing of this batch was stored",
                index=index,
                field=None,
            )


def _raise_refused(events: Sequence[object], where: str, first_seq: int | None) -> NoReturn:
    """The slow path of a batch that did not encode or decode: say which event and why."""
    _check_types(events, where)
    typed: Sequence[Event] = events  # type: ignore[assignment]
    if first_seq is not None:
        typed = [with_seq(event, seq) for seq, event in enumerate(typed, first_seq)]
    try:
        encoded = [_encoder.encode(event) for event in typed]
    except (TypeError, ValueError, msgspec.EncodeError):
        _raise_unencodable(typed, where)
    _raise_undecodable(typed, encoded, where)


def check_event(event: object, *, where: str) -> Event:
    """One event as it will read back (``checked_batch`` of one)."""
    return checked_batch([event], where=where)[0][0]


def _fail(where: str, index: int, event: Event, field: str | None, why: str) -> InvalidEvent:
    place = f"events[{index}] ({type_of(event)})"
    if field is not None:
        place += f" field {field!r}"
    return InvalidEvent(
        f"{where}: {place}: {why}; nothing of this batch was stored", index=index, field=field
    )


def _raise_unencodable(events: Sequence[Event], where: str) -> NoReturn:
    for index, event in enumerate(events):
        for name in event.__struct_fields__:
            try:
                _encoder.encode(getattr(event, name))
            except (TypeError, ValueError, msgspec.EncodeError) as error:
                raise _fail(
                    where, index, event, name, f"cannot be stored as JSON: {error}"
                ) from None
    raise AssertionError("unreachable: the batch encoded field by field")  # pragma: no cover


def _raise_undecodable(events: Sequence[Event], encoded: list[bytes], where: str) -> NoReturn:
    for index, (event, data) in enumerate(zip(events, encoded, strict=True)):
        try:
            _one.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as error:
            found = _AT.search(str(error))
            field = found.group(1) if found and found.group(1) else None
            value = getattr(event, field, None) if field and field.isidentifier() else None
            if isinstance(value, float) and not math.isfinite(value):
                why = f"{value!r} is not a number JSON can hold (use a finite float)"
            else:
                why = f"would not read back: {error}"
            raise _fail(where, index, event, field, why) from None
    raise AssertionError("unreachable: each event decoded alone")  # pragma: no cover


def _raise_changed(events: Sequence[Event], decoded: list[Event], where: str) -> NoReturn:
    for index, (event, back) in enumerate(zip(events, decoded, strict=True)):
        if event == back:
            continue
        for name in event.__struct_fields__:
            given, read = getattr(event, name), getattr(back, name)
            if given != read:
                raise _fail(
                    where,
                    index,
                    event,
                    name,
                    f"would read back as {_short(read)}, not {_short(given)} (JSON has no NaN, "
                    "infinity, tuple or non-string key)",
                )
        raise _fail(where, index, event, None, "would not read back as given")
    raise AssertionError("unreachable: the batch differed")  # pragma: no cover


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
