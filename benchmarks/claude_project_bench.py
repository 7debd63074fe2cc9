"""The first request in a large Claude Code project against the same in an empty workspace.

Issue 31: a workspace holding 137 agent files and ~200 skills made every request cost ~31 k
tokens before the user said a word, because every skill and role was listed in full. Here the
generated project of that shape (``nyzhi.testing.claude_project``: 110 roles, 160 skills, 40
commands) and an empty git workspace each run one real ``open_runtime`` session against the
fake LLM (Anthropic wire); the first request's system prompt and tools are measured as the JSON
sent, in characters and in tokens estimated as characters / 4. The figure that matters is the
ratio, fixture over empty, measured in the same run; the target is system + tools <= 12,000
estimated tokens for the fixture. A third workspace, the fixture with
``listing_budget_chars`` set past any listing (entries still cut short), shows what the
budget itself saves.

Usage: ``python -m benchmarks claude_project [--json]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import trio

from benchmarks._isolated import isolated_home
from benchmarks.prompt_bench import first_request

TARGET_TOKENS = 12_000


def _size(root: Path) -> dict[str, int]:
    body = trio.run(first_request, root)["body"]
    return {"system": len(json.dumps(body["system"])), "tools": len(json.dumps(body["tools"]))}


def measure() -> dict[str, Any]:
    from nyzhi.core.loop.prompt import chars_to_tokens
    from nyzhi.testing.claude_project import write_claude_project

    sizes = {}
    with tempfile.TemporaryDirectory(prefix="nyzhi-claude-bench-") as tmp:
        base = Path(tmp).resolve()
        saved_state = os.environ.get("XDG_STATE_HOME")
        os.environ["XDG_STATE_HOME"] = str(base / "state")  # its notices-seen file
        try:
            with isolated_home(base / "home"):
                (base / "home").mkdir()
                for label in ("empty", "fixture", "unbudgeted"):
                    root = base / label
                    root.mkdir()
                    subprocess.run(["git", "init", "-q", str(root)], check=True)
                    if label != "empty":
                        write_claude_project(root)
                    if label == "unbudgeted":  # the listings as they were: every entry whole
                        (root / ".nyzhi").mkdir()
                        (root / ".nyzhi" / "config.toml").write_text(
                            "[agent]\nlisting_budget_chars = 100000000\n")
                    sizes[label] = _size(root)
        finally:
            if saved_state is None:
                os.environ.pop("XDG_STATE_HOME", None)
            else:
                os.environ["XDG_STATE_HOME"] = saved_state
    for row in sizes.values():
        row["total"] = row["system"] + row["tools"]
        row["tokens"] = chars_to_tokens(row["total"])
    return {**sizes, "ratio": sizes["fixture"]["total"] / sizes["empty"]["total"],
            "unbudgeted_ratio": sizes["unbudgeted"]["total"] / sizes["empty"]["total"],
            "target_tokens": TARGET_TOKENS}


def main(argv: list[str]) -> None:
    result = measure()
    if "--json" in argv:
        print(json.dumps(result, indent=2))
        return
    print("first request, system + tools (Anthropic wire JSON): chars / est. tokens")
    for label in ("empty", "fixture", "unbudgeted"):
        row = result[label]
        print(f"  {label:<11} system {row['system']:>7,}  tools {row['tools']:>7,}  "
              f"total {row['total']:>7,} / {row['tokens']:,} tokens")
    ok = "ok" if result["fixture"]["tokens"] <= result["target_tokens"] else "OVER"
    print(f"  fixture / empty: {result['ratio']:.2f}x  (fixture target <= "
          f"{result['target_tokens']:,} tokens: {ok}); without the listing budget: "
          f"{result['unbudgeted_ratio']:.2f}x")
