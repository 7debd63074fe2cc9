"""``nyzhi.records`` classes repr, compare and hash exactly as attrs' own would."""

from __future__ import annotations

import attrs
import pytest

from nyzhi import records


def _pair(kind: str, **options):
    """The same class body made by attrs and by records."""

    def body(deco):
        @deco
        class Item:
            name: str
            size: int = 0
            secret: str = attrs.field(default="s", repr=False)
            shown: str = attrs.field(default="x", repr=lambda v: f"<{v}>")
            cache: int = attrs.field(default=0, eq=False)
            folded: str = attrs.field(default="A", eq=str.lower)
            later: int = attrs.field(init=False, default=5)

        return Item

    a = getattr(attrs, kind)(**options) if options else getattr(attrs, kind)
    r = getattr(records, kind)(**options) if options else getattr(records, kind)
    return body(a), body(r)


@pytest.mark.parametrize("kind", ["frozen", "define"])
def test_repr_eq_and_hash_match_attrs(kind: str) -> None:
    a_cls, r_cls = _pair(kind)
    for args in [("n",), ("n", 2), ("n", 2, "t", "y", 9, "a")]:
        a, r = a_cls(*args), r_cls(*args)
        assert repr(a) == repr(r)
    same = [r_cls("n", 1, cache=1, folded="B"), r_cls("n", 1, cache=2, folded="b")]
    other = r_cls("m", 1)
    assert (same[0] == same[1]) is True and (same[0] != same[1]) is False
    assert (same[0] == other) is False and (same[0] != other) is True
    assert same[0].__eq__(a_cls("n", 1)) is NotImplemented  # another class
    if kind == "frozen":
        assert hash(same[0]) == hash(same[1]) and hash(same[0]) != hash(other)
    else:
        assert r_cls.__hash__ is None and a_cls.__hash__ is None


def test_a_recursive_repr_is_cut_like_attrs() -> None:
    @records.define
    class Node:
        child: object = None

    @attrs.define
    class Plain:
        child: object = None

    n, p = Node(), Plain()
    n.child, p.child = n, p
    assert repr(n) == "Node(child=...)" and repr(p) == "Plain(child=...)"


def test_eq_false_keeps_identity_and_subclasses_compare_their_own_fields() -> None:
    @records.define(eq=False)
    class Handle:
        x: int = 0

    assert Handle() != Handle() and hash(Handle()) is not None

    @records.frozen
    class Base:
        x: int = 0

    @records.frozen
    class Sub(Base):
        y: int = 0

    assert Sub(1, 2) == Sub(1, 2) and Sub(1, 2) != Sub(1, 3) and Sub(1) != Base(1)
    assert repr(Sub(1, 2)).endswith("Sub(x=1, y=2)")


def test_own_methods_and_exceptions_are_left_to_attrs() -> None:
    @records.frozen
    class Own:
        x: int = 0

        def __repr__(self) -> str:
            return "own"

    assert repr(Own()) == "own" and Own() == Own()

    @records.define
    class Failure(Exception):
        why: str = ""

    assert Failure("a") != Failure("a")  # attrs compares exceptions by identity


@pytest.mark.parametrize("make", [records.define, records.frozen])
def test_a_decorator_object_reused_keeps_its_options_for_every_class(make) -> None:
    by_identity = make(eq=False)

    @by_identity
    class First:
        x: int

    @by_identity
    class Second:  # the second class once got equality back: eq was popped from the options
        x: int

    for cls in (First, Second):
        assert cls(1) != cls(1), cls.__name__
        one = cls(1)
        assert one == one and hash(one) == object.__hash__(one)
