"""The one mapping from parsed command-line flags to ``RuntimeOptions``.

Every front end that opens a runtime (``nyz run``, the line chat, the console, ``nyz replay
--rerun``) goes through ``runtime_options``, so a flag means the same thing everywhere. Flags
a command does not define are simply absent from its namespace and stay "as configured". It
lives in ``core``, below the front ends that share it (the console may not import ``cli``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nyzhi.core.runtime.runtime import RuntimeOptions


def runtime_options(args: argparse.Namespace, *, interactive: bool) -> RuntimeOptions:
    from nyzhi.core.runtime.runtime import Limits, RuntimeOptions

    budget = Limits(
        tokens=getattr(args, "budget_tokens", None), usd=getattr(args, "budget_usd", None),
        time=getattr(args, "budget_time", None),
    )
    return RuntimeOptions(
        cwd=Path.cwd(),
        provider=getattr(args, "provider", None),
        model=getattr(args, "model", None),
        thinking=getattr(args, "thinking", None),
        output_schema=getattr(args, "output_schema", None),
        trust=getattr(args, "trust", None),
        approve_project_config=getattr(args, "approve_project_config", False),
        sandbox=getattr(args, "sandbox", None),
        network=getattr(args, "network", None),
        max_steps=getattr(args, "max_steps", None),
        ephemeral=getattr(args, "ephemeral", False),
        continue_latest=getattr(args, "continue_", False),
        session=getattr(args, "session", None),
        interactive=interactive,
        budget=None if budget.empty else budget,
        plan=getattr(args, "plan", False),
        team=getattr(args, "team_name", None),
        teammate_mode=getattr(args, "teammate_mode", None),
    )
