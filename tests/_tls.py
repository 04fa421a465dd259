"""One TLS context for every client the tests make.

Each HTTP client an SDK builds loads certifi's bundle into a TLS context of its own: about
50 ms of CPU apiece (measured 2026-12-03), paid by every test that builds a client, for
doubles that speak plain HTTP (loopback) or no socket at all (in process). Before it was
shared, tests/interop, tests/unit/providers and tests/unit/doubles/model alone loaded the
bundle 290 times, 232 of them for Gemini clients (a ``genai.Client`` builds three: its httpx
clients', aiohttp's and its websocket's); the fast tier's Gemini module went from 18 s of
test time to 3. The clients take it through their public options
(``verify=`` for httpx, ``ssl`` for aiohttp, the SDKs' ``DefaultHttpxClient``), as a user
sharing one context passes it; nothing is patched.
"""

from __future__ import annotations

import functools
import ssl

import certifi


@functools.cache
def shared_tls() -> ssl.SSLContext:
    """The run's one default TLS context (certifi's bundle, as the SDKs build theirs)."""
    return ssl.create_default_context(cafile=certifi.where())
