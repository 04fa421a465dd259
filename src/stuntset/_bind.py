"""Checks on the address a foreground server binds (``stuntset serve``, ``stuntset record``):
a bad host or port, or one already in use, is one line naming the option, and a non-loopback
address needs ``--allow-remote`` (the doubles answer anyone who can reach them)."""

from __future__ import annotations

import errno
import ipaddress
import socket

from stuntset.errors import UsageError

__all__ = ["check_bind", "is_loopback", "listening_socket"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) resolves to loopback addresses only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    return all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


def check_bind(host: str, port: int, *, allow_remote: bool) -> str | None:
    """Refuse a bad port, a host that does not resolve, or a non-loopback host without
    ``allow_remote`` (``UsageError`` naming ``--host``/``--port``). Returns the warning to
    print when a non-loopback bind is allowed, else ``None``."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: not a TCP port (0-65535; 0 picks a free one)")
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise UsageError(f"--host {host!r}: cannot use this address ({reason})") from None
    if is_loopback(host):
        return None
    if not allow_remote:
        raise UsageError(
            f"--host {host!r} is not a loopback address: anyone who can reach it could use the "
            f"server; pass --allow-remote if that is what you want"
        )
    return (
        f"warning: serving on {host} (not loopback): anyone who can reach this address can use "
        f"the server"
    )


def listening_socket(host: str, port: int, *, backlog: int = 128) -> socket.socket:
    """A listening TCP socket with ``TCP_NODELAY`` (asyncio sets it on accepted sockets only
    when the listener was made with ``IPPROTO_TCP``); a port in use or an address that cannot
    be bound is a ``UsageError`` naming ``--host``/``--port``."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: not a TCP port (0-65535; 0 picks a free one)")
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except (OSError, UnicodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise UsageError(f"--host {host!r}: cannot use this address ({reason})") from None
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as error:
        sock.close()
        reason = error.strerror or str(error)
        if error.errno == errno.EADDRINUSE:
            raise UsageError(f"--port {port}: already in use on {host} ({reason})") from None
        raise UsageError(f"--host {host!r} --port {port}: cannot bind ({reason})") from None
    sock.set_inheritable(False)
    return sock
