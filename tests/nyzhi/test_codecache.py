"""The cache of attrs' generated methods (``nyzhi.codecache``): used only for the exact source,
only from a file as trusted as nyzhi's own bytecode, rewritten when a class changes.

Each case runs a fresh interpreter with ``PYTHONPYCACHEPREFIX`` pointing at a temporary
directory, so the cache (kept where Python keeps nyzhi's bytecode) is the test's own.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

# Creates two attrs classes (one through nyzhi.records, one plain attrs with a generated
# __hash__, whose source differs in every process), uses them, and reports what was compiled.
SCRIPT = """
import json, sys
from nyzhi import codecache
codecache.install()
compiled = []
real = codecache._real_compile
def spy(source, filename, mode, *a, **k):
    compiled.append(filename)
    return real(source, filename, mode, *a, **k)
codecache._real_compile = spy
import attrs
from nyzhi import records

@records.frozen
class Point:
    x: int
    {second}: int = 2

@attrs.frozen
class Hashed:
    a: int

p = Point(1)
assert (p.x, p.{second}) == (1, 2), p
assert Point(1) == Point(1) and hash(Hashed(2)) == hash(Hashed(2))
codecache.save()
print(json.dumps({{"compiled": [n for n in compiled if "__main__" in n],
                  "dir": codecache.cache_dir()}}))
"""


def files(result: dict) -> list[Path]:
    return sorted(Path(result["dir"]).glob("attrs-*.bin"))


def run(tmp_path: Path, *, second: str = "y", write_bytecode: bool = True) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    if not write_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    proc = subprocess.run([sys.executable, "-c", SCRIPT.format(second=second)], env=env,
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_second_start_compiles_nothing_and_a_changed_class_is_compiled_again(tmp_path):
    first = run(tmp_path)
    assert len(first["compiled"]) == 2  # Point's __init__, Hashed's methods
    assert Path(first["dir"]).is_relative_to(tmp_path / "pycache")
    # one file per group of modules: __main__.Point, __main__.Hashed (and attrs' own)
    assert {"attrs-__main__.Point", "attrs-__main__.Hashed"} <= {
        p.name.rsplit(".", 2)[0] for p in files(first)}
    assert run(tmp_path)["compiled"] == []  # both from the cache, the salted hash included
    # a renamed field changes Point's generated __init__: compiled, not the stale code (the
    # script reads the new field), and only that class
    changed = run(tmp_path, second="z")
    assert changed["compiled"] == ["<attrs generated methods __main__.Point>"]
    assert run(tmp_path, second="z")["compiled"] == []


def test_nothing_is_written_where_python_writes_no_bytecode(tmp_path):
    first = run(tmp_path, write_bytecode=False)
    assert files(first) == []
    assert len(run(tmp_path)["compiled"]) == 2


@pytest.mark.parametrize("damage", ["garbage", "truncated", "other-python", "empty"])
def test_a_damaged_cache_is_compiled_around_and_replaced(tmp_path, damage):
    for path in files(run(tmp_path)):
        data = path.read_bytes()
        path.write_bytes({"garbage": b"\x00not marshal" * 10, "truncated": data[: len(data) // 2],
                          "other-python": b"\x00\x00\r\n" + data[4:], "empty": b""}[damage])
    assert len(run(tmp_path)["compiled"]) == 2
    assert run(tmp_path)["compiled"] == []


@pytest.mark.parametrize("who", ["file-group", "file-world", "dir-world"])
def test_a_cache_others_may_write_is_not_read(tmp_path, who):
    found = files(run(tmp_path))
    extra = stat.S_IWGRP if who == "file-group" else stat.S_IWOTH
    for target in found if who.startswith("file") else [found[0].parent]:
        target.chmod(target.stat().st_mode | extra)
    assert len(run(tmp_path)["compiled"]) == 2  # not trusted: compiled as usual


# A dataclass of this script's own (its methods are the standard library's generated source),
# used, and whether any of its methods was compiled (not spied on: a compile called from this
# script would take the script's compiler flags, not those the cache compiles with).
DATACLASS_SCRIPT = """
import json
from nyzhi import codecache
codecache.install()
import dataclasses, typing

@dataclasses.dataclass(frozen=True)
class Pair:
    a: int
    {second}: int = 2

p = Pair(1)
assert (p.a, p.{second}) == (1, 2) and p == Pair(1) and hash(p) == hash(Pair(1)), p
assert "Pair(a=1" in repr(p)
assert typing.get_type_hints(Pair.__init__) == {{"a": int, "{second}": int, "return": type(None)}}
compiled = "dataclasses.__main__" in codecache._dirty
codecache.save()
print(json.dumps({{"compiled": compiled, "dir": codecache.cache_dir()}}))
"""


def run_dataclass(tmp_path: Path, *, second: str = "b") -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp_path / "pycache")
    proc = subprocess.run([sys.executable, "-c", DATACLASS_SCRIPT.format(second=second)],
                          env=env, capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_dataclass_methods_are_kept_too_and_a_changed_class_is_compiled_again(tmp_path):
    first = run_dataclass(tmp_path)
    assert first["compiled"]
    assert "attrs-dataclasses.__main__" in {p.name.rsplit(".", 2)[0] for p in files(first)}
    # every method from the cache, its annotations still objects (get_type_hints resolves them)
    assert not run_dataclass(tmp_path)["compiled"]
    changed = run_dataclass(tmp_path, second="c")  # the new field is read: not stale code
    assert changed["compiled"] and not run_dataclass(tmp_path, second="c")["compiled"]
