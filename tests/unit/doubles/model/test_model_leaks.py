"""An async client left unclosed over loopback is reported at the test that leaked it, and
the next test is unaffected (it used to fail there with an unclosed-transport warning or
'Event loop is closed')."""

from __future__ import annotations

import gc
import warnings

import pytest

import stuntset.doubles.model._pytest  # noqa: F401 - one module identity with the inner run
from stuntset.doubles.model._leaks import check_unclosed_clients
from stuntset.errors import HarnessFailure

TESTS = """
import asyncio, gc
import httpx2, openai, pytest

MESSAGES = [{"role": "user", "content": "hi"}]
KEPT = httpx2.Client()  # a long-lived client, held on purpose

async def ask(client):
    reply = await client.chat.completions.create(model="m", messages=MESSAGES)
    return reply.choices[0].message.content

@pytest.mark.stand_in("happy_path")
def test_leaks_an_async_client(stand_in):
    client = openai.AsyncOpenAI(base_url=stand_in.url("openai"), api_key="k")
    assert asyncio.run(ask(client))

def test_the_next_test_is_unaffected():
    gc.collect()
    asyncio.run(asyncio.sleep(0))

@pytest.mark.stand_in("happy_path")
def test_closes_its_client(stand_in):
    async def main():
        async with openai.AsyncOpenAI(base_url=stand_in.url("openai"), api_key="k") as client:
            return await ask(client)
    assert asyncio.run(main())

@pytest.mark.stand_in("happy_path")
def test_keeps_a_client_on_purpose(stand_in):
    body = {"model": "m", "messages": MESSAGES}
    assert KEPT.post(stand_in.url("openai") + "/chat/completions", json=body).status_code == 200

def test_last_closes_the_kept_client():
    KEPT.close()
"""


# Tests real time: the leaking test waits out the check's settle period (1 s of real time,
# not configurable from pytest) before its open connection counts.
@pytest.mark.slow
def test_the_leaking_test_is_named_and_the_next_is_unaffected(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TESTS)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "-W", "error")
    result.assert_outcomes(passed=5, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaks_an_async_client*",
            "*test_leaks_an_async_client: the test left 1 client connection(s) to the "
            "stand_in's loopback server open*dropped the client without closing it*",
        ]
    )
    result.stdout.fnmatch_lines(["*async with AsyncOpenAI(...) as client*await client.close()*"])
    result.stdout.no_fnmatch_line("*RuntimeError: Event loop is closed*")
    result.stdout.no_fnmatch_line("*PytestUnraisableExceptionWarning*")


@pytest.fixture(autouse=True)
def _no_garbage_from_earlier_tests() -> None:
    """Earlier tests' garbage finalised now, so the checks below see only their own."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gc.collect()


@pytest.mark.slow
def test_a_connection_that_closes_by_itself_passes() -> None:
    states = iter([frozenset({("127.0.0.1", 1)}), frozenset()])
    check_unclosed_clients(lambda: next(states, frozenset()), frozenset(), "t::a", settle=1.0)


@pytest.mark.slow
def test_a_connection_held_open_by_a_live_client_passes() -> None:
    check_unclosed_clients(lambda: frozenset({("127.0.0.1", 1)}), frozenset(), "t::a", settle=0.01)


def test_connections_open_before_the_test_are_not_its_leaks() -> None:
    peer = frozenset({("127.0.0.1", 1)})
    check_unclosed_clients(lambda: peer, peer, "t::a", settle=0.01)


@pytest.mark.slow
def test_a_connection_that_closes_late_without_a_finaliser_warning_passes() -> None:
    open_until_collected = [frozenset({("127.0.0.1", 8)})]

    class Client:  # in a reference cycle; its finaliser closes quietly (no ResourceWarning)
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            open_until_collected.append(frozenset())

    Client()
    gc.disable()
    try:  # open through the first settle; closed once collected, by nothing the collector said
        check_unclosed_clients(lambda: open_until_collected[-1], frozenset(), "t::a", settle=0.05)
    finally:
        gc.enable()


@pytest.mark.slow
def test_a_connection_that_closes_only_when_collected_fails() -> None:
    open_until_collected = [frozenset({("127.0.0.1", 9)})]

    def connections() -> frozenset[tuple[str, int]]:
        return open_until_collected[-1]

    class Client:  # a dropped client in a reference cycle: only gc finalises it
        def __init__(self) -> None:
            self.me = self

        def __del__(self) -> None:
            open_until_collected.append(frozenset())
            warnings.warn("unclosed transport <fake>", ResourceWarning, stacklevel=1)

    Client()
    gc.disable()
    try:
        with pytest.raises(HarnessFailure, match=r"t::a: .*from 127\.0\.0\.1:9\)"):
            check_unclosed_clients(connections, frozenset(), "t::a", settle=0.05)
    finally:
        gc.enable()
