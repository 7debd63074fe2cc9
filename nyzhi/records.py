"""``frozen`` and ``define``: ``attrs.frozen`` / ``attrs.define`` with shared dunder methods.

attrs writes ``__repr__``, ``__eq__``/``__ne__`` and (frozen) ``__hash__`` as source code for
each class and compiles it: with ~180 nyzhi classes created on the way to ``nyz run``'s first
request, that compiling was the largest single cost of start-up after the interpreter and
trio (measured ~0.25 ms of a ~0.45 ms class creation). Here attrs generates only ``__init__``
and the methods above are closures over the class's fields, made without compiling anything.

They behave as attrs' own: the same repr text (``Name(a=1, b='x')``, per-field ``repr=False``
or a custom repr callable, ``...`` for a recursive reference), ``__eq__`` only between
instances of exactly the same class over the fields with ``eq=True`` (``eq_key`` honoured),
hashing over the same fields as ``__eq__`` for frozen classes, unhashable mutable ones. A class
that defines any of those methods itself, an exception class, or options beyond the simple ones
(order, hash, cache_hash, ...) is left to attrs entirely.
"""

from __future__ import annotations

import threading
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

_ATTRS_ONLY = frozenset(
    {"repr", "hash", "unsafe_hash", "order", "cache_hash", "auto_detect", "these", "str", "cmp"}
)
_OWN = ("__repr__", "__eq__", "__ne__", "__hash__")
_repring = threading.local()


def _make_repr(cls: type) -> Callable[[Any], str]:
    shown = [
        (a.name, repr if a.repr is True else a.repr, a.init)
        for a in attrs.fields(cls) if a.repr is not False
    ]

    def __repr__(self: Any) -> str:
        seen = getattr(_repring, "ids", None)
        if seen is None:
            seen = _repring.ids = set()
        if id(self) in seen:
            return "..."
        seen.add(id(self))
        try:
            parts = ", ".join(
                f"{name}={show(getattr(self, name) if init else getattr(self, name, attrs.NOTHING))}"
                for name, show, init in shown
            )
            return f'{self.__class__.__qualname__.rsplit(">.", 1)[-1]}({parts})'
        finally:
            seen.discard(id(self))

    return __repr__


def _make_eq(cls: type) -> tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]:
    compared = [(a.name, a.eq_key) for a in attrs.fields(cls) if a.eq]

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        result: Any = True
        for name, key in compared:  # ``a == a' and b == b' and ...``, as attrs writes it
            mine, theirs = getattr(self, name), getattr(other, name)
            result = key(mine) == key(theirs) if key else mine == theirs
            if not result:
                return result
        return result

    def __ne__(self: Any, other: Any) -> Any:
        result = __eq__(self, other)
        return NotImplemented if result is NotImplemented else not result

    return __eq__, __ne__


def _make_hash(cls: type) -> Callable[[Any], int]:
    hashed = [
        (a.name, a.eq_key) for a in attrs.fields(cls)
        if a.hash is True or (a.hash is None and a.eq is True)
    ]
    salt = hash(f"{cls.__module__}.{cls.__qualname__}")

    def __hash__(self: Any) -> int:
        return hash((salt, *(
            key(getattr(self, name)) if key else getattr(self, name) for name, key in hashed
        )))

    return __hash__


def _finish(cls: type, make: Callable[..., type], frozen: bool, kwargs: dict[str, Any]) -> type:
    if (
        _ATTRS_ONLY & kwargs.keys()
        or any(name in cls.__dict__ for name in _OWN)
        or issubclass(cls, BaseException)
    ):
        return make(cls, **kwargs)
    frozen = frozen or bool(kwargs.get("frozen"))
    # A copy: ``kwargs`` is the decorator's own dict, and ``records.define(eq=False)`` kept in
    # a variable decorates every class it is applied to with the same one.
    kwargs = dict(kwargs)
    eq = kwargs.pop("eq", None) is not False
    cls = make(cls, repr=False, eq=False, **kwargs)
    methods: dict[str, Any] = {"__repr__": _make_repr(cls)}
    if eq:
        methods["__eq__"], methods["__ne__"] = _make_eq(cls)
        methods["__hash__"] = _make_hash(cls) if frozen else None
    for name, method in methods.items():
        if method is not None:
            method.__qualname__ = f"{cls.__qualname__}.{name}"
            method.__module__ = cls.__module__
        setattr(cls, name, method)
    return cls


@typing.dataclass_transform(eq_default=True, frozen_default=True, field_specifiers=(attrs.field,))
def frozen(maybe_cls: type | None = None, **kwargs: Any) -> Any:
    """``attrs.frozen`` (same arguments), with shared ``__repr__``/``__eq__``/``__hash__``."""
    if maybe_cls is None:
        return lambda cls: _finish(cls, attrs.frozen, True, kwargs)
    return _finish(maybe_cls, attrs.frozen, True, kwargs)


@typing.dataclass_transform(eq_default=True, field_specifiers=(attrs.field,))
def define(maybe_cls: type | None = None, **kwargs: Any) -> Any:
    """``attrs.define`` (same arguments), with shared ``__repr__``/``__eq__``."""
    if maybe_cls is None:
        return lambda cls: _finish(cls, attrs.define, False, kwargs)
    return _finish(maybe_cls, attrs.define, False, kwargs)


# ---- converters ----------------------------------------------------------------------------
# attrs reads each converter's signature when it writes ``__init__``. For a builtin type that
# is ~0.15 ms a field, and the first one ~1.5 ms (``inspect`` tokenizes the type's text
# signature): ~4 ms of ``nyz run``'s start-up over its ~26 such fields. A plain function's is
# read in microseconds. The value parameter is left unannotated on purpose: attrs copies that
# annotation onto ``__init__``, where ``tuple`` and friends put none.


def as_tuple(value) -> tuple[Any, ...]:
    """``converter=records.as_tuple``: ``tuple(value)``."""
    return tuple(value)


def as_frozenset(value) -> frozenset[Any]:
    """``converter=records.as_frozenset``: ``frozenset(value)``."""
    return frozenset(value)


def as_path(value) -> Path:
    """``converter=records.as_path``: ``Path(value)``."""
    return Path(value)
