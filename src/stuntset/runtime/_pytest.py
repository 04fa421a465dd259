"""The bodies of the host fixtures of the pytest plugin (``log_seam``, ``session_service``,
``daemon``), kept here so the plugin stays thin and these work without pytest too.

The ``daemon`` and ``session_service`` markers take the user's providers (``providers=``: a
registry, a mapping of name to provider factory, or one factory, registered as
``"default"``); without it they get ``scenario_registry()``. The ``daemon`` marker also
takes ``allowed_origins=``. The daemon serves the ``event_log`` fixture's file, so what
``log_seam`` seeds is what the daemon reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from stuntset.errors import UsageError
from stuntset.log.sqlite import SqliteEventLog
from stuntset.runtime.daemon import DaemonHandle, start_daemon
from stuntset.runtime.service import ProviderFactory, SessionService
from stuntset.runtime.store import SessionStore
from stuntset.runtime.testing import LogSeam, scenario_registry

__all__ = [
    "DEFAULT_PROVIDER",
    "open_log_seam",
    "open_session_service",
    "providers_from",
    "running_daemon",
]

#: The name one provider factory given as ``providers=`` is registered under.
DEFAULT_PROVIDER = "default"


def providers_from(given: object, *, where: str) -> Mapping[str, ProviderFactory]:
    """The registry ``providers=`` names: ``None`` = ``scenario_registry()``; a mapping of
    name to zero-argument factory as it is; one factory as ``{"default": factory}``.
    Anything else is a ``UsageError`` naming ``where``."""
    if given is None:
        return scenario_registry()
    if isinstance(given, Mapping):
        for name, factory in given.items():
            if not isinstance(name, str) or not name:
                raise UsageError(f"{where}: providers: a provider name is a string, got {name!r}")
            if not callable(factory):
                raise UsageError(
                    f"{where}: providers[{name!r}] is {type(factory).__name__}, not a provider "
                    "factory (a class or function that takes no argument and returns a provider)"
                )
        if not given:
            raise UsageError(f"{where}: providers is empty; name at least one provider")
        return given
    if callable(given):
        return {DEFAULT_PROVIDER: given}
    raise UsageError(
        f"{where}: providers= takes a registry (a mapping of name to provider factory) or one "
        f"provider factory, got {type(given).__name__}"
    )


def marker_options(
    kwargs: Mapping[str, Any], known: Iterable[str], *, where: str, args: tuple[Any, ...] = ()
) -> dict[str, Any]:
    """The marker's keyword options, refusing positional ones and unknown names."""
    allowed = tuple(known)
    if args:
        raise UsageError(f"{where}: takes keyword options only ({', '.join(allowed)})")
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise UsageError(
            f"{where}: unknown option {', '.join(unknown)}; known: {', '.join(allowed)}"
        )
    return dict(kwargs)


@contextmanager
def open_log_seam(log: SqliteEventLog) -> Iterator[LogSeam]:
    """A ``LogSeam`` over ``log`` and a ``SessionStore`` in the same database file."""
    store = SessionStore(log.path)
    try:
        yield LogSeam(log, store)
    finally:
        store.close()


@contextmanager
def open_session_service(
    log: SqliteEventLog, providers: Mapping[str, ProviderFactory] | None = None
) -> Iterator[SessionService]:
    """An unstarted ``SessionService`` over ``log`` with ``providers`` (default
    ``scenario_registry()``)."""
    store = SessionStore(log.path)
    try:
        yield SessionService(
            log=log, store=store, providers=scenario_registry() if providers is None else providers
        )
    finally:
        store.close()


@contextmanager
def running_daemon(
    db: Path,
    directory: Path,
    providers: Mapping[str, ProviderFactory] | None = None,
    allowed_origins: Iterable[str] = (),
) -> Iterator[DaemonHandle]:
    """A daemon over ``db`` with ``providers`` (default ``scenario_registry()``), its token
    file in ``directory``, stopped after."""
    handle = start_daemon(
        db=db,
        providers=scenario_registry() if providers is None else providers,
        token_file=directory / "stuntset-daemon.json",
        allowed_origins=allowed_origins,
    )
    try:
        yield handle
    finally:
        handle.stop()
