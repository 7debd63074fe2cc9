"""Executors: where and how shell commands run (local, SSH, monitored read-only)."""

from nyzhi.tools.executors.base import DEFAULT_OUTPUT_CAP as DEFAULT_OUTPUT_CAP
from nyzhi.tools.executors.base import CappedOutput as CappedOutput
from nyzhi.tools.executors.base import CommandRefused as CommandRefused
from nyzhi.tools.executors.base import ExecResult as ExecResult
from nyzhi.tools.executors.base import Executor as Executor
from nyzhi.tools.executors.base import ExecutorError as ExecutorError
from nyzhi.tools.executors.local import LocalExecutor as LocalExecutor
from nyzhi.tools.executors.monitored import MonitoredExecutor as MonitoredExecutor
from nyzhi.tools.executors.monitored import classify as classify
from nyzhi.tools.executors.ssh import SshExecutor as SshExecutor
