"""The SDK's ``CodexClient``, hardened: a request cannot outlive its transport."""

from __future__ import annotations

import queue
import uuid
from collections.abc import Callable
from typing import Any

from openai_codex.client import CodexClient
from openai_codex.errors import TransportClosedError
from openai_codex.models import JsonObject, JsonValue, UnknownNotification

__all__ = ["Client", "params_of"]

#: How often a waiting request checks that the SDK's reader thread is still there (seconds).
_READER_CHECK = 0.1


class Client(CodexClient):
    """``CodexClient`` whose requests cannot outlive its transport.

    The SDK's reader thread fails every response waiter when the transport breaks, but a
    request made *after* that (an interrupt racing a cut stream, a turn started as the process
    dies) would wait for ever. Here a request also ends, with ``TransportClosedError``, once
    the reader thread is gone.
    """

    #: Called once a ``turn/interrupt`` request is written (before its answer is awaited).
    interrupt_written: Callable[[], None] | None = None

    def _request_raw(self, method: str, params: JsonObject | None = None) -> JsonValue:
        request_id = str(uuid.uuid4())
        waiter = self._router.create_response_waiter(request_id)
        try:
            message: JsonObject = {"id": request_id, "method": method}
            if params is not None:
                message["params"] = params
            self._write_message(message)
        except BaseException:
            self._router.discard_response_waiter(request_id)
            raise
        if method == "turn/interrupt" and self.interrupt_written is not None:
            self.interrupt_written()
        while True:
            try:
                item = waiter.get(timeout=_READER_CHECK)
                break
            except queue.Empty:
                reader = self._reader_thread
                if reader is not None and reader.is_alive():
                    continue
                try:
                    item = waiter.get_nowait()
                    break
                except queue.Empty:
                    self._router.discard_response_waiter(request_id)
                    raise TransportClosedError(
                        f"{method}: the Codex app-server transport is closed"
                    ) from None
        if isinstance(item, BaseException):
            raise item
        return item


def params_of(payload: Any) -> dict[str, Any]:
    if isinstance(payload, UnknownNotification):
        return dict(payload.params)
    dumped = payload.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped if isinstance(dumped, dict) else {}
