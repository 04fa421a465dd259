"""The model requests an app sent, read from wherever they were recorded.

``model_requests(source)`` turns a stand-in (anything with ``.requests``: ``StandIn``,
``ModelDouble``, ``ModelTransport``), a ``Cassette``, a cassette path, or an iterable of
journal entries / cassette interactions into ``ModelRequest`` values: the wire, the parsed
body, and where it came from. Only requests on the model wires with a JSON object body
are kept (a ``GET /v1/models`` is not a prompt). The wire comes from the journal or cassette
entry, else from the path's endpoint, so a ``/v1/...`` and an ``/openai/v1/...`` path read the
same.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from stuntset.errors import UsageError
from stuntset.wires import WIRE_NAMES

__all__ = ["MODEL_WIRES", "ModelRequest", "model_requests"]

#: The wire names a model request can have (``stuntset.wires.WIRE_NAMES``).
MODEL_WIRES = WIRE_NAMES


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request an app sent to a model API.

    ``index`` is its position among the kept requests, ``label`` says where it came from
    (``request 3`` of a journal, ``i-3`` of a cassette), ``session`` the cassette's session
    tag if any (used to tell conversations apart).
    """

    wire: str
    body: dict[str, Any]
    index: int = 0
    label: str = ""
    session: str | None = None

    def describe(self) -> str:
        return f"{self.label or f'request {self.index}'} ({self.wire})"


def _wire_of(path: str) -> str | None:
    from stuntset.cassettes.format import wire_of

    wire = wire_of(path)
    return wire if wire in MODEL_WIRES else None


def _entries(source: Any) -> tuple[list[Any], str]:
    from stuntset.cassettes.format import Cassette, load_cassette

    if isinstance(source, str | os.PathLike):
        cassette = load_cassette(source)
        return list(cassette.interactions), cassette.source
    if isinstance(source, Cassette):
        return list(source.interactions), source.source
    requests = getattr(source, "requests", None)
    if requests is not None and not callable(requests):
        return list(requests), "journal"
    if isinstance(source, Iterable) and not isinstance(source, bytes | dict):
        return list(source), "requests"
    raise UsageError(
        f"cannot read model requests from {source!r}: pass a stand-in (anything with "
        f".requests), a Cassette or a cassette path, or a list of journal entries, cassette "
        f"interactions or ModelRequest values"
    )


def _one(entry: Any, position: int, origin: str) -> ModelRequest | None:
    if isinstance(entry, ModelRequest):
        return entry
    request = getattr(entry, "request", None)
    if request is not None:  # a cassette interaction
        wire = entry.wire if entry.wire in MODEL_WIRES else _wire_of(request.path)
        body, label, session = request.body, entry.id, entry.session
    elif hasattr(entry, "body") and hasattr(entry, "path"):  # a journal entry
        wire = entry.wire if getattr(entry, "wire", None) in MODEL_WIRES else _wire_of(entry.path)
        body, label, session = entry.body, f"request {entry.index}", None
    else:
        raise UsageError(
            f"{origin} item {position}: {entry!r} is not a journal entry, a cassette "
            f"interaction or a ModelRequest"
        )
    if wire is None or not isinstance(body, dict):
        return None
    return ModelRequest(wire=wire, body=body, label=label, session=session)


def model_requests(source: Any) -> list[ModelRequest]:
    """The model requests recorded in ``source``, in the order they were sent."""
    entries, origin = _entries(source)
    kept: list[ModelRequest] = []
    for position, entry in enumerate(entries):
        request = _one(entry, position, origin)
        if request is not None:
            kept.append(dataclasses.replace(request, index=len(kept)))
    return kept
