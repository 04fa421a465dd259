"""One test's cassette, in one of four modes — the logic behind the ``cassette`` fixture,
usable without pytest.

``replay`` (default): the cassette must exist; requests are served from it.
``record``: record when the cassette is missing, else replay.
``refresh``: always record (re-record everything the test touches).
``off``: talk to the upstream directly; nothing is read or written.

When the ``CI`` environment variable is set, every mode but ``replay`` is refused and nothing is
ever written. Give clients ``client_options(...)``::

    client = OpenAI(api_key=key, **session.client_options())
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Literal

from stuntset.cassettes.format import load_cassette
from stuntset.cassettes.record import Recording, record
from stuntset.cassettes.replay import Replayer
from stuntset.errors import UsageError

__all__ = ["MODES", "CassetteSession", "Mode", "default_path", "mode_from"]

Mode = Literal["replay", "record", "refresh", "off"]
MODES: tuple[Mode, ...] = ("replay", "record", "refresh", "off")
#: Where a replayed client is pointed: a name that cannot resolve, so nothing leaks out.
REPLAY_BASE = "http://cassette.invalid"


def mode_from(option: str | None, environ: Mapping[str, str] = os.environ) -> Mode:
    """The mode from ``--stuntset-mode``, else ``STUNTSET_MODE``, else ``replay``; refused
    under ``CI`` unless it is ``replay``."""
    value = option or environ.get("STUNTSET_MODE") or "replay"
    if value not in MODES:
        raise UsageError(f"stuntset mode {value!r}: use one of {', '.join(MODES)}")
    if value != "replay" and environ.get("CI"):
        raise UsageError(
            f"stuntset mode {value!r} is refused because CI is set: CI only replays committed "
            f"cassettes and never writes one. Record locally, review, commit."
        )
    return value


def default_path(test_file: str | os.PathLike[str], test_name: str) -> Path:
    """``cassettes/<module>/<test>.jsonl`` beside the test file (parameters made file-safe)."""
    module = Path(test_file)
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", test_name).strip("_")
    return module.parent / "cassettes" / module.stem / f"{safe}.jsonl"


class CassetteSession:
    """The cassette of one test: replaying, recording or passing through."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: Mode = "replay",
        upstream: str | None = None,
        allow_unused: bool | Collection[str] = False,
    ) -> None:
        self.path = Path(path)
        self.upstream = upstream
        self.allow_unused = allow_unused
        self._stack = ExitStack()
        self._clients: list[Any] = []
        self.replayer: Replayer | None = None
        self.recording: Recording | None = None
        if mode == "record":
            mode = "replay" if self.path.exists() else "refresh"
        self.mode: Mode = mode
        if mode == "replay":
            if not self.path.exists():
                raise UsageError(
                    f"no cassette at {self.path}: record it once with --stuntset-mode=record "
                    f"(needs the real provider and its key), review it, and commit it"
                )
            self.replayer = Replayer(load_cassette(self.path))
        elif mode in ("refresh", "off") and not upstream:
            raise UsageError(
                f"mode {mode!r} needs the real upstream: mark the test "
                f"@pytest.mark.cassette(upstream='https://api.openai.com/v1')"
            )
        elif mode == "refresh":
            assert upstream is not None
            self.recording = self._stack.enter_context(record(upstream, self.path))

    @property
    def base_url(self) -> str:
        """The base URL to give the client under test."""
        if self.recording is not None:
            return self.recording.url
        if self.mode == "off":
            assert self.upstream is not None
            return self.upstream
        return REPLAY_BASE + "/v1"

    def http_client(self, *, asynchronous: bool = False, library: str = "httpx2") -> Any:
        """An ``httpx2`` (or ``httpx``) client for the client library: replaying, it carries the
        cassette's transport; otherwise a plain client."""
        module = __import__(library)
        cls = module.AsyncClient if asynchronous else module.Client
        client = cls(transport=self.replayer.transport()) if self.replayer is not None else cls()
        if not asynchronous:
            self._clients.append(client)  # closed with the session (async ones: by their owner)
        return client

    def client_options(
        self, *, asynchronous: bool = False, library: str = "httpx2"
    ) -> dict[str, Any]:
        """``base_url`` and ``http_client`` for an SDK constructor."""
        return {
            "base_url": self.base_url,
            "http_client": self.http_client(asynchronous=asynchronous, library=library),
        }

    def close(self, *, failed: bool = False) -> None:
        """End the session: a recording is written only if the test passed; a replay fails on
        interactions never requested."""
        __tracebackhide__ = True
        for client in self._clients:
            client.close()
        if failed:
            # stop the proxy as if the block had raised: the recording is dropped, not written
            error = RuntimeError("the test failed")
            self._stack.__exit__(RuntimeError, error, None)
            return
        self._stack.close()
        if self.replayer is not None:
            self.replayer.verify(allow_unused=self.allow_unused)
