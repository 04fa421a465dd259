"""Where a foreground server may bind: bad ports and hosts, ports in use, and non-loopback
addresses are refused with one line naming the option."""

from __future__ import annotations

import socket

import pytest

from stuntset._bind import check_bind, is_loopback, listening_socket
from stuntset.errors import UsageError


def test_loopback_binds_pass_quietly() -> None:
    assert check_bind("127.0.0.1", 0, allow_remote=False) is None
    assert check_bind("localhost", 8080, allow_remote=False) is None
    assert is_loopback("::1")
    assert not is_loopback("0.0.0.0")


def test_a_non_loopback_host_needs_allow_remote_and_then_warns() -> None:
    with pytest.raises(
        UsageError, match=r"^--host '0.0.0.0' is not a loopback address.*--allow-remote"
    ):
        check_bind("0.0.0.0", 0, allow_remote=False)
    warning = check_bind("0.0.0.0", 0, allow_remote=True)
    assert warning is not None
    assert warning.startswith("warning: serving on 0.0.0.0 (not loopback)")


@pytest.mark.parametrize(
    ("host", "port", "words"),
    [
        ("127.0.0.1", 70000, "--port 70000: not a TCP port"),
        ("127.0.0.1", -1, "--port -1: not a TCP port"),
        ("no such host!", 0, "--host 'no such host!': cannot use this address"),
        ("", 0, "--host ''"),
    ],
)
def test_bad_ports_and_hosts_are_one_line_naming_the_option(
    host: str, port: int, words: str
) -> None:
    with pytest.raises(UsageError) as raised:
        check_bind(host, port, allow_remote=False)
    assert str(raised.value).startswith(words)
    assert "\n" not in str(raised.value)


def test_a_host_that_cannot_be_bound_names_it() -> None:
    with pytest.raises(UsageError, match=r"^--host 'no such host!': cannot use this address"):
        listening_socket("no such host!", 0)
    with pytest.raises(UsageError, match=r"^--host '192.0.2.1' --port 0: cannot bind"):
        listening_socket("192.0.2.1", 0)  # TEST-NET-1: no interface here has it


def test_a_port_in_use_names_the_port() -> None:
    with listening_socket("127.0.0.1", 0) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(UsageError, match=rf"^--port {port}: already in use on 127.0.0.1"):
            listening_socket("127.0.0.1", port)
    with listening_socket("127.0.0.1", 0) as fresh:
        assert fresh.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_a_loopback_address_written_in_short_form_still_passes_quietly() -> None:
    # "127.1" is not an address ipaddress parses, but the resolver reads it as 127.0.0.1
    # (inet_aton's shorthand, no DNS asked): it binds loopback, so no --allow-remote needed.
    assert is_loopback("127.1")
    assert check_bind("127.1", 0, allow_remote=False) is None
    # the same shorthand for a routable address is not loopback and still needs the flag
    assert not is_loopback("10.1")
    with pytest.raises(UsageError, match=r"^--host '10.1' is not a loopback address"):
        check_bind("10.1", 0, allow_remote=False)


def test_a_name_that_does_not_resolve_is_not_loopback() -> None:
    assert not is_loopback("no such host!")
