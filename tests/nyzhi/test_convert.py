"""nyzhi.convert: the format declarations, strict reading, and the one error form."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import attrs
import pytest

from nyzhi import convert, records


@records.frozen
class Inner:
    n: int
    tags: tuple[str, ...] = ()


@convert.wire(rename={"sender": "from"}, aliases={"when": ("timestamp",)},
              omit_if_none=("note",), null_is_missing=True, defaults={"when": ""},
              required=("items",), read={"size": lambda v: int(v) if isinstance(v, str) else v},
              write={"size": str})
@records.define
class Outer:
    sender: str
    when: str
    items: list[Inner] = attrs.field(factory=list)
    size: int = 0
    note: str | None = None
    flag: bool = False
    extra: dict[str, Any] = attrs.field(factory=dict)


@convert.wire(tag="kind")
@records.frozen
class Tagged:
    kind = "base"
    a: int = 0


@records.frozen
class Child(Tagged):
    kind = "child"
    b: str = ""


def test_the_declared_format_both_ways():
    obj = Outer("ann", "now", [Inner(1, ("x",))], size=3)
    data = convert.unstructure(obj)
    assert data == {"from": "ann", "when": "now", "items": [{"n": 1, "tags": ["x"]}],
                    "size": "3", "flag": False, "extra": {}}  # no "note" while None
    assert list(data)[0] == "from"
    assert convert.structure(data, Outer, "f") == obj
    older = {"from": "ann", "timestamp": "then", "items": [], "note": None, "flag": None}
    assert convert.structure(older, Outer, "f") == Outer("ann", "then")
    assert convert.structure({"from": "a", "items": []}, Outer, "f").when == ""  # a default


def test_a_tag_is_written_first_and_subclasses_share_the_declaration():
    assert list(convert.unstructure(Child(1, "x"))) == ["kind", "a", "b"]
    assert convert.unstructure(Child(1, "x"))["kind"] == "child"
    assert convert.structure({"kind": "child", "a": 2}, Child, "e") == Child(2)


@pytest.mark.parametrize(("data", "message"), [
    ({"from": "a"}, "f.json: 'items' is missing"),
    ({"from": 5, "items": []}, "f.json: 'from' must be a string, found 5"),
    ({"from": "a", "items": [], "flag": 1}, "f.json: 'flag' must be a boolean, found 1"),
    ({"from": "a", "items": "ab"}, "f.json: 'items' must be an array, found 'ab'"),
    ({"from": "a", "items": [{"n": True}]}, "f.json: 'items[0].n' must be an integer, found True"),
    ({"from": "a", "items": [{"n": 1, "tags": [1]}]},
     "f.json: 'items[0].tags[0]' must be a string, found 1"),
    ({"from": "a", "items": [], "extra": []}, "f.json: 'extra' must be an object, found []"),
    ({"from": 1, "items": [{"n": "1"}, {}]},
     "f.json: 'from' must be a string, found 1 (and 2 more problems)"),
    ([], "f.json: must be an object, found []"),
])
def test_strict_reading_with_one_line_naming_file_and_field(data, message):
    with pytest.raises(convert.RecordError) as info:
        convert.structure(data, Outer, "f.json")
    assert str(info.value) == message and "\n" not in str(info.value)


def test_the_caller_chooses_its_error_class():
    class StoreError(ValueError):
        pass

    with pytest.raises(StoreError, match="^x: 'n' is missing$"):
        convert.structure({}, Inner, "x", StoreError)


def test_cattrs_is_imported_at_the_first_conversion_only():
    code = ("import sys; from nyzhi import convert; from nyzhi.core import events; "
            "assert 'cattrs' not in sys.modules; convert.unstructure(events.TextDelta('x')); "
            "assert 'cattrs' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_first_use_from_many_threads_builds_one_converter():
    code = """
import threading
from nyzhi import convert
from nyzhi.core import events as ev
seen, go = [], threading.Barrier(8)
def use():
    go.wait()
    seen.append(convert.structure(convert.unstructure(ev.TextDelta("x")), ev.TextDelta, "t"))
    seen.append(convert._converter())
threads = [threading.Thread(target=use) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
assert len({id(c) for c in seen if not isinstance(c, ev.TextDelta)}) == 1, seen
assert [c for c in seen if isinstance(c, ev.TextDelta)] == [ev.TextDelta("x")] * 8
"""
    subprocess.run([sys.executable, "-c", code], check=True)
