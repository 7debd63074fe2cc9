"""What an embedding program imports from ``nyzhi``: pinned, and cheap to import."""

from __future__ import annotations

import subprocess
import sys

import nyzhi

EXPORTS = ["AgentSpec", "ApprovalAnswer", "Runtime", "RuntimeOptions", "__version__", "events",
           "open_runtime"]


def test_all_lists_exactly_the_exports():
    assert sorted(nyzhi.__all__) == EXPORTS


def test_every_export_resolves_to_the_runtime_object():
    from nyzhi.core import events
    from nyzhi.core.loop.tool_step import ApprovalAnswer
    from nyzhi.core.runtime.agent_factory import AgentSpec
    from nyzhi.core.runtime.runtime import Runtime, RuntimeOptions, open_runtime

    assert nyzhi.open_runtime is open_runtime and nyzhi.RuntimeOptions is RuntimeOptions
    assert nyzhi.Runtime is Runtime and nyzhi.events is events
    assert nyzhi.AgentSpec is AgentSpec and nyzhi.ApprovalAnswer is ApprovalAnswer


def test_unknown_names_are_attribute_errors():
    try:
        nyzhi.open_runtim  # noqa: B018
    except AttributeError as exc:
        assert "open_runtim" in str(exc)
    else:
        raise AssertionError("a misspelt export must not resolve")


def test_importing_nyzhi_loads_nothing_heavy():
    code = ("import sys, nyzhi; heavy = [m for m in ('trio', 'httpx', 'attrs', 'nyzhi.core',"
            " 'nyzhi.core.runtime.runtime') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
