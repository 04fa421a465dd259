"""Clients left unclosed over loopback, reported at the test that leaked them.

An async client (``openai.AsyncOpenAI``, ``anthropic.AsyncAnthropic``, an ``httpx2``/``httpx``
``AsyncClient``) made in a test and never closed keeps its pooled connection to the stand-in's
loopback server after the test's event loop is closed. Nothing notices until the garbage
collector finalises it, at some later moment, inside some later test: its transport's
finaliser then warns ``unclosed transport`` (an error under ``filterwarnings = error``) or
raises ``RuntimeError: Event loop is closed``, and that unrelated test fails.

The ``stand_in`` fixture notes the server's open connections when the test starts. At
teardown, a connection opened during the test and still open after a short wait belongs to a
client the test did not close. Collecting garbage there and then finalises such a client if
nothing holds it any more (a leak: its finaliser's warnings and errors are captured here, so
no later test sees them), and the test fails naming it. A client still referenced (a
module-level client reused across tests, on purpose) keeps its connection and is left alone.
"""

from __future__ import annotations

from collections.abc import Callable

from stuntset._resources import Finalised
from stuntset.errors import HarnessFailure, WaitTimeout
from stuntset.waiting import wait_for

__all__ = ["UNCLOSED_HELP", "check_unclosed_clients"]

UNCLOSED_HELP = (
    "close it in the test: `async with AsyncOpenAI(...) as client:` (or AsyncAnthropic, "
    "httpx2.AsyncClient), or `await client.close()` at the end (`await client.aclose()` for a "
    "bare httpx client); a sync client: `with OpenAI(...) as client:` or `client.close()`"
)

#: How long, twice, closed clients' connections get to reach the server (real time; a closed
#: client's FIN arrives in well under a millisecond, so this is spent only when something
#: leaked or a client is kept open on purpose: once per such client, not per test).
SETTLE_SECONDS = 0.5


def check_unclosed_clients(
    open_connections: Callable[[], frozenset[tuple[str, int]]],
    before: frozenset[tuple[str, int]],
    where: str,
    *,
    settle: float = SETTLE_SECONDS,
) -> None:
    """``HarnessFailure`` naming ``where`` if a client connection opened since ``before`` was
    left open by a client nobody holds any more (see the module docstring)."""
    __tracebackhide__ = True

    def opened() -> frozenset[tuple[str, int]]:
        return open_connections() - before

    if not opened():
        return
    try:
        wait_for(lambda: not opened(), timeout=settle)
        return
    except WaitTimeout:
        pass
    leaked = opened()
    finalised = Finalised()
    finalised.collect()
    try:
        wait_for(lambda: not (opened() & leaked), timeout=settle)
    except WaitTimeout:
        finalised.replay()
        return  # still held by something: a client kept on purpose, not a leak
    if not finalised.unclosed():
        finalised.replay()
        return  # closed late by itself, not by the collector
    peers = ", ".join(f"{host}:{port}" for host, port in sorted(leaked))
    raise HarnessFailure(
        f"{where}: the test left {len(leaked)} client connection(s) to the stand_in's loopback "
        f"server open (from {peers}) and dropped the client without closing it (its finaliser "
        f"said: {'; '.join(finalised.messages())}). An unclosed async client outlives the "
        f"test's event loop and fails a later test with 'Event loop is closed' or an "
        f"unclosed-transport warning; {UNCLOSED_HELP}"
    )
