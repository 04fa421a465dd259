"""One test's cassette, in one of four modes — the logic behind the ``cassette`` fixture,
usable without pytest.

``replay`` (default): the cassette must exist; requests are served from it.
``record``: record when the cassette is missing, else replay.
``refresh``: always record (re-record everything the test touches).
``off``: talk to the upstream directly; nothing is read or written.

When the ``CI`` environment variable is set, every mode but ``replay`` is refused and nothing is
ever written. Give HTTP clients ``client_options(...)``, and agent SDKs ``cli(name)`` in place
of the real executable::

    client = OpenAI(api_key=key, **session.client_options())
    options = ClaudeAgentOptions(cli_path=session.cli("claude"))

An HTTP cassette lives at ``path``; the transcript of a CLI beside it, at
``<stem>.<name>.jsonl`` (``cli_path(name)``). In ``record`` mode each file is recorded if it is
missing and replayed if it is there.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Collection, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from stuntset.cassettes.format import load_cassette
from stuntset.cassettes.record import Recording, record
from stuntset.cassettes.recording_file import FileState, write_recording
from stuntset.cassettes.replay import Replayer
from stuntset.errors import UsageError

if TYPE_CHECKING:
    from stuntset.cassettes.cli_replay import ReplayedCli
    from stuntset.cassettes.replay import Pace

__all__ = ["MODES", "CassetteSession", "Mode", "cassette_path", "default_path", "mode_from"]

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


def marker_cassette_path(spec: str | os.PathLike[str], base: Path) -> Path:
    """Where ``@pytest.mark.cassette("path")`` points: an absolute path as given; a relative
    one against ``base`` (the test file's folder), as every other marker path is. A cassette
    that exists only against the current directory (where earlier versions resolved it) is
    still found there, so existing suites keep their recordings."""
    path = Path(spec)
    if path.is_absolute():
        return path
    beside = base / path
    legacy = Path.cwd() / path
    if not beside.exists() and legacy.exists():
        return legacy
    return beside


def cassette_path(
    test_file: str | os.PathLike[str], test_name: str, *, migrate: bool = False
) -> Path:
    """The default cassette of a test: ``default_path`` when the test's name is file-safe as
    it is, else that name made file-safe plus 8 hex digits of the name's SHA-256 — so two
    ids that differ only in punctuation (``[what is 2+2?]``, ``[what is 2+2!]``) never share
    a file. A cassette recorded under the earlier name (``default_path``) is still used while
    none exists under the new one; ``migrate`` renames it to the new name (the
    ``--stuntset-migrate-paths`` option)."""
    legacy = default_path(test_file, test_name)
    if legacy.stem == test_name:
        return legacy
    digest = hashlib.sha256(test_name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    path = legacy.with_name(f"{legacy.stem}-{digest}.jsonl")
    if not path.exists() and legacy.exists():
        if not migrate:
            return legacy
        os.replace(legacy, path)
    return path


class CassetteSession:
    """The cassette of one test: replaying, recording or passing through."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: Mode = "replay",
        upstream: str | None = None,
        allow_unused: bool | Collection[str] = False,
        pace: Pace = "none",
        scale: float = 1.0,
    ) -> None:
        self.path = Path(path)
        self.pace: Pace = pace
        self.scale = scale
        self._server_url: str | None = None
        self.upstream = upstream
        self.allow_unused = allow_unused
        self.requested: Mode = mode
        self._stack = ExitStack()
        self._clients: list[Any] = []
        self._http_error: str | None = None
        self._bin_dir: Path | None = None
        self._replayed: list[ReplayedCli] = []
        #: (being written, where it goes, which file that was when recording began)
        self._recorded: list[tuple[Path, Path, FileState]] = []
        self.replayer: Replayer | None = None
        self.recording: Recording | None = None
        if mode == "record":
            mode = "replay" if self.path.exists() else "refresh"
        self.mode: Mode = mode
        if mode == "replay":
            if self.path.exists():
                self.replayer = Replayer(load_cassette(self.path), pace=pace, scale=scale)
            else:
                self._http_error = (
                    f"no cassette at {self.path}: record it once with --stuntset-mode=record "
                    f"(needs the real provider and its key), review it, and commit it"
                )
                if not self._cli_cassettes():
                    raise UsageError(self._http_error)
        elif mode in ("refresh", "off") and not upstream:
            self._http_error = (
                f"mode {mode!r} needs the real upstream: mark the test "
                f"@pytest.mark.cassette(upstream='https://api.openai.com/v1')"
            )
        elif mode == "refresh":
            assert upstream is not None
            self.recording = self._stack.enter_context(record(upstream, self.path))

    def _cli_cassettes(self) -> list[Path]:
        return sorted(self.path.parent.glob(f"{self.path.stem}.*.jsonl"))

    def _http(self) -> None:
        if self._http_error is not None:
            raise UsageError(self._http_error)

    @property
    def base_url(self) -> str:
        """The base URL to give the client under test."""
        self._http()
        if self.recording is not None:
            return self.recording.url
        if self.mode == "off":
            assert self.upstream is not None
            return self.upstream
        return REPLAY_BASE + "/v1"

    def server_url(self) -> str:
        """A base URL for clients in *other* processes (a real agent CLI, a non-Python client):
        replaying, a loopback server on this session's cassette (any prefix: ``/v1`` for
        OpenAI clients, none for Anthropic's); recording, the proxy; ``off``, the upstream."""
        self._http()
        if self.replayer is None:
            return self.base_url
        if self._server_url is None:
            from stuntset.cassettes.replay_server import replay_server

            server = self._stack.enter_context(replay_server(self.replayer))
            self._server_url = server.url
        return self._server_url

    def http_client(self, *, asynchronous: bool = False, library: str = "httpx2") -> Any:
        """An ``httpx2`` (or ``httpx``) client for the client library: replaying, it carries the
        cassette's transport; otherwise a plain client."""
        self._http()
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

    def cli_path(self, name: str) -> Path:
        """Where the transcript of CLI ``name`` is kept: ``<stem>.<name>.jsonl`` beside ``path``."""
        return self.path.with_name(f"{self.path.stem}.{name}.jsonl")

    def cli(
        self,
        name: str,
        real: str | os.PathLike[str] | None = None,
        *,
        pace: Pace | None = None,
        scale: float | None = None,
        ignore_args: Collection[str] = (),
    ) -> Path:
        """The executable to give the client in place of the real CLI ``name``.

        Replaying: a fake that plays ``cli_path(name)`` (``ignore_args`` as for
        ``install_cli_replay``; ``pace`` and ``scale`` default to the session's). Recording: the real program (``real``,
        else ``name`` on PATH) behind a tee that records every run; the transcript is written
        only if the test passes. ``off``: the real program itself.
        """
        cassette = self.cli_path(name)
        mode = self.requested
        if mode == "record":
            mode = "replay" if cassette.exists() else "refresh"
        if mode == "replay":
            from stuntset.cassettes.cli_replay import install_cli_replay

            if not cassette.exists():
                raise UsageError(
                    f"no {name} transcript at {cassette}: record it once with "
                    f"--stuntset-mode=record (runs the real {name}), review it, and commit it"
                )
            replayed = install_cli_replay(
                name,
                cassette,
                bin_dir=self._directory() / name,
                pace=self.pace if pace is None else pace,
                scale=self.scale if scale is None else scale,
                ignore_args=ignore_args,
            )
            self._replayed.append(replayed)
            return replayed.path
        program = Path(real) if real is not None else _which(name)
        if mode == "off":
            return program
        from stuntset.cassettes.cli_record import install_cli_recorder

        scratch = self._directory() / f"{name}.recording.jsonl"
        scratch.unlink(missing_ok=True)
        self._recorded.append((scratch, cassette, FileState.of(cassette)))
        return install_cli_recorder(name, program, scratch, bin_dir=self._directory() / name)

    def _directory(self) -> Path:
        if self._bin_dir is None:
            self._bin_dir = Path(tempfile.mkdtemp(prefix="stuntset-cassette-"))
        return self._bin_dir

    def close(self, *, failed: bool = False) -> None:
        """End the session: recordings are written only if the test passed; a replay fails on
        interactions never requested, and a CLI replay on anything that departed from its
        recording (even when the test failed: that is likely why)."""
        __tracebackhide__ = True
        try:
            self._close(failed)
        finally:
            if self._bin_dir is not None:
                shutil.rmtree(self._bin_dir, ignore_errors=True)

    def _close(self, failed: bool) -> None:
        __tracebackhide__ = True
        for client in self._clients:
            client.close()
        if failed:
            # stop the proxy as if the block had raised: the recording is dropped, not written
            error = RuntimeError("the test failed")
            self._stack.__exit__(RuntimeError, error, None)
            for replayed in self._replayed:
                replayed.verify(allow_unused=True)
            return
        self._stack.close()
        for scratch, cassette, since in self._recorded:
            if scratch.exists():  # under the cassette's lock, merged with another worker's
                write_recording(cassette, load_cassette(scratch), since=since)
        if self.replayer is not None:
            self.replayer.verify(allow_unused=self.allow_unused)
        for replayed in self._replayed:
            replayed.verify(allow_unused=self.allow_unused)


def _which(name: str) -> Path:
    found = shutil.which(name)
    if found is None:
        raise UsageError(
            f"recording {name} needs the real program: none on PATH; pass "
            f"cassette.cli({name!r}, real='/path/to/{name}')"
        )
    return Path(found)
