"""``nyz replay ID --rerun``: run a recorded session again, tools and all.

The session's user prompts go, one by one, to a fresh ephemeral runtime whose model is the
recorded model output (``RecordedProvider``), so the tools run again for real and the printed
answers can be compared with the recording.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import attrs
import trio

from nyzhi.core.runtime.runtime import open_runtime
from nyzhi.front.flags import runtime_options


def rerun_session(prompts: list[str], recorded_cwd: Path | None, provider: Any,
                  args: argparse.Namespace) -> int:
    """Print each prompt and the answer the rerun gives; 1 if any turn failed. ``cli`` read
    the saved session: its user ``prompts``, the folder it ran in (None: unknown) and its
    recorded model output (``provider``: a ``RecordedProvider``, given to the runtime as
    ``RuntimeOptions.provider_instance`` and not otherwise used here)."""
    options = attrs.evolve(
        runtime_options(args, interactive=False), provider_instance=provider, ephemeral=True,
        continue_latest=False, session=None,
        **({"cwd": recorded_cwd} if recorded_cwd and recorded_cwd.is_dir() else {}),
    )

    async def main() -> int:
        failed = False
        async with open_runtime(options) as rt:
            for prompt in prompts:
                handle = await rt.submit(prompt)
                outcome = await handle.wait()
                if outcome is None or outcome.is_error:
                    failed = True
                print(f"> {prompt}\n{outcome.text if outcome else '(no answer)'}\n")
                sys.stdout.flush()
        return 1 if failed else 0

    return trio.run(main)
