"""The public face: every exported name exists once, and the library imports only trio/attrs."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import types
from pathlib import Path

import actors
import actors.testing

PACKAGE = Path(actors.__file__).parent


def test_all_lists_exactly_the_public_names():
    public = {
        name
        for name, value in vars(actors).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert sorted(actors.__all__) == sorted(public)
    assert len(actors.__all__) == len(set(actors.__all__))


def test_exports_are_defined_in_private_modules():
    for name in actors.__all__:
        value = getattr(actors, name)
        if inspect.isclass(value) or inspect.isfunction(value):
            module = value.__module__
            assert module.startswith("actors._"), (name, module)


def test_expected_api_is_present():
    for name in (
        "open_system", "ActorSystem", "Actor", "Context", "ActorRef", "Supervisor", "ChildSpec",
        "Strategy", "Restart", "Overflow", "Status", "Outcome", "Terminated", "Backoff",
        "Supervision", "ActorEvent", "EventKind", "MailboxFull", "AskTimeout", "ActorDead",
    ):  # fmt: skip
        assert hasattr(actors, name), name
    for name in ("tell", "tell_nowait", "ask", "stop", "join", "status", "path", "name"):
        assert hasattr(actors.ActorRef, name), name
    for name in ("spawn", "lookup", "events", "shutdown", "actors", "children"):
        assert hasattr(actors.ActorSystem, name), name
    for name in ("self_ref", "spawn", "watch", "unwatch", "link", "unlink", "start_soon", "stop"):
        assert hasattr(actors.Context, name), name
    for name in ("Probe", "no_leaked_tasks", "live_tasks"):
        assert hasattr(actors.testing, name), name


def test_errors_share_one_base():
    errors = [getattr(actors, n) for n in actors.__all__ if n.endswith(("Error", "Full", "Timeout",
              "Dead", "Taken", "Closed", "Message", "Crash", "Exceeded"))]  # fmt: skip
    assert len(errors) == 9
    assert all(issubclass(e, actors.ActorError) for e in errors)
    assert issubclass(actors.AskTimeout, TimeoutError)


def test_library_imports_only_trio_attrs_and_stdlib():
    allowed = {"trio", "attrs"} | set(sys.stdlib_module_names)
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"


def test_import_does_not_load_nyzhi():
    code = (
        "import sys, actors, actors.testing; print(any(m.startswith('nyzhi') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
