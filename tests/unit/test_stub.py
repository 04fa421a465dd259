from __future__ import annotations

from typing import Protocol

import pytest

from stuntset.errors import UnstubbedCall, UsageError
from stuntset.stub import stub


class SessionStore(Protocol):
    root: str

    def load(self, key: str) -> bytes | None: ...

    def save(self, key: str, data: bytes) -> None: ...

    def delete(self, key: str) -> None: ...

    @property
    def size(self) -> int: ...


def use(store: SessionStore) -> bytes | None:
    return store.load("k")


def test_stubbed_methods_work_and_type_check_as_the_protocol() -> None:
    store = stub(SessionStore, load=lambda key: key.encode())
    assert use(store) == b"k"


def test_unstubbed_method_fails_when_called_naming_it() -> None:
    store = stub(SessionStore, load=lambda key: None)
    method = store.delete  # referencing is fine
    with pytest.raises(
        UnstubbedCall, match=r"SessionStore.delete\(\).*stub\(SessionStore, delete=...\)"
    ):
        method("k")


def test_unstubbed_attribute_fails_when_read() -> None:
    store = stub(SessionStore, root="/tmp")
    assert store.root == "/tmp"
    with pytest.raises(UnstubbedCall, match=r"read SessionStore.size"):
        _ = store.size


def test_unknown_member_is_a_usage_error_with_a_suggestion() -> None:
    with pytest.raises(UsageError, match=r"has no member 'lod'\. Did you mean 'load'"):
        stub(SessionStore, lod=lambda key: None)


def test_repr_names_what_is_provided() -> None:
    store = stub(SessionStore, load=lambda key: None, save=lambda k, d: None)
    assert repr(store) == "stub(SessionStore, load=..., save=...)"


def test_works_for_plain_classes_too() -> None:
    class Mailer:
        def send(self, to: str) -> None:
            raise NotImplementedError

        def close(self) -> None:
            raise NotImplementedError

    sent: list[str] = []
    mailer = stub(Mailer, send=sent.append)
    mailer.send("a@b")
    assert sent == ["a@b"]
    with pytest.raises(UnstubbedCall, match=r"Mailer.close\(\)"):
        mailer.close()


def test_only_classes_can_be_imitated() -> None:
    with pytest.raises(UsageError, match="takes a class or Protocol to imitate"):
        stub(len)
