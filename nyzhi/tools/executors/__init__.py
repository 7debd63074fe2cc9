"""Executors: where and how shell commands run (local, SSH, monitored read-only)."""

from nyzhi.tools.executors.base import DEFAULT_OUTPUT_CAP as DEFAULT_OUTPUT_CAP
from nyzhi.tools.executors.base import CappedOutput as CappedOutput
from nyzhi.tools.executors.base import CommandRefused as CommandRefused
from nyzhi.tools.executors.base import ExecResult as ExecResult
from nyzhi.tools.executors.base import Executor as Executor
from nyzhi.tools.executors.base import ExecutorError as ExecutorError
from nyzhi.tools.executors.local import LocalExecutor as LocalExecutor

# Imported on first use (start-up time): most runs never configure an SSH node or a monitor.
_LAZY = {
    "MonitoredExecutor": "nyzhi.tools.executors.monitored",
    "classify": "nyzhi.tools.executors.monitored",
    "SshExecutor": "nyzhi.tools.executors.ssh",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nyzhi.tools.executors' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
