"""Typed stubs for wide interfaces where a test cares about two methods.

``stub(SessionStore, load=lambda key: None)`` returns an object that type-checks as a
``SessionStore``; touching any member the test did not provide fails with ``UnstubbedCall``
naming it (methods fail when called, other attributes when read).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, TypeVar

from stuntset.errors import UnstubbedCall, UsageError

__all__ = ["stub"]

T = TypeVar("T")

_IGNORED = frozenset(vars(object)) | {
    "__annotations__",
    "__dict__",
    "__weakref__",
    "__module__",
    "__qualname__",
    "__parameters__",
    "__orig_bases__",
    "__protocol_attrs__",
    "__non_callable_proto_members__",
    "__abstractmethods__",
    "__slots__",
    "__static_attributes__",
    "__firstlineno__",
    "__type_params__",
    "_is_protocol",
    "_is_runtime_protocol",
    "__callable_proto_members_only__",
    "__subclasshook__",
    "__init_subclass__",
    "__class_getitem__",
    "__test__",
    "_abc_impl",
}


def _members(interface: type) -> dict[str, bool]:
    """Public members of ``interface``: name → is it a method."""
    members: dict[str, bool] = {}
    for klass in reversed(interface.__mro__):
        if klass is object or klass.__module__ in ("typing", "typing_extensions", "abc"):
            continue
        for name in getattr(klass, "__annotations__", {}):
            members.setdefault(name, False)
        for name, value in vars(klass).items():
            if name in _IGNORED:
                continue
            members[name] = callable(value) or isinstance(value, staticmethod | classmethod)
    return members


def stub(interface: Callable[..., T], /, **members: Any) -> T:
    """An object of type ``interface`` that provides only ``members``.

    Naming a member the interface does not have is a ``UsageError`` (with a did-you-mean).
    (The parameter is typed as a callable so that type checkers accept a Protocol class.)
    """
    __tracebackhide__ = True
    if not isinstance(interface, type):
        raise UsageError(f"stub() takes a class or Protocol to imitate, got {interface!r}")
    known = _members(interface)
    title = interface.__qualname__
    for name in members:
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise UsageError(
                f"stub({title}, {name}=...): {title} has no member {name!r}.{hint} "
                f"Members: {', '.join(sorted(known)) or 'none'}"
            )

    namespace: dict[str, Any] = {"__slots__": ()}
    for name, is_method in known.items():
        if name not in members:
            namespace[name] = (
                _missing_method(title, name) if is_method else _missing_attribute(title, name)
            )
    for name, value in members.items():
        # plain functions must not be bound to the stub: the test wrote them without `self`
        namespace[name] = staticmethod(value) if callable(value) else value
    provided = ", ".join(f"{name}=..." for name in sorted(members))
    namespace["__repr__"] = lambda self: f"stub({title}, {provided})"
    stub_class = type(f"Stub{interface.__name__}", (), namespace)
    result: T = stub_class()
    return result


def _missing_method(title: str, name: str) -> Any:
    def missing(*args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        raise UnstubbedCall(
            f"the code under test called {title}.{name}(), which this stub does not provide. "
            f"Stub it: stub({title}, {name}=...)"
        )

    return staticmethod(missing)


def _missing_attribute(title: str, name: str) -> Any:
    def getter(self: object) -> Any:
        __tracebackhide__ = True
        raise UnstubbedCall(
            f"the code under test read {title}.{name}, which this stub does not provide. "
            f"Stub it: stub({title}, {name}=...)"
        )

    return property(getter)
