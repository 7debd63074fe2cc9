"""Start-up with 20 installed Claude Code plugins against none (issue 52).

``nyz run --ephemeral hi`` from spawning the process to the fake LLM receiving its first
request, in one workspace, alternating: no plugin installed, then 20 installed plugins (each
with a command, an agent, a skill and an approved PreToolUse hook, so every part is read and
every digest computed at start). Also the first request's size (system + tools), since the
plugins' agents and skills are listed in it. Target: <= 1.15x the time with none.

Usage: ``python -m benchmarks plugins [--json] [--runs=N]``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TARGET_RATIO = 1.15
PLUGINS = 20


def _plugin(root: Path, i: int) -> None:
    name = f"p{i:02d}"
    files = {
        ".claude-plugin/plugin.json": json.dumps({"name": name, "version": "1.0.0"}),
        f"commands/do-{i}.md": f"---\ndescription: command {i}\n---\nDo thing {i}: $ARGUMENTS\n",
        f"agents/helper-{i}.md": f"---\nname: helper-{i}\ndescription: helper {i}\n---\nHelp.\n",
        f"skills/skill-{i}/SKILL.md": f"---\nname: skill-{i}\ndescription: skill {i}\n---\nDo.\n",
        "hooks/hooks.json": json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/check.sh"}]}]}}),
        "hooks/check.sh": "#!/bin/sh\nexit 0\n",
    }
    for rel, text in files.items():
        (root / name / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / name / rel).write_text(text)


def _install(tmp: Path, env: dict[str, str]) -> None:
    market = tmp / "market"
    (market / ".claude-plugin").mkdir(parents=True)
    entries = []
    for i in range(PLUGINS):
        _plugin(market / "plugins", i)
        entries.append({"name": f"p{i:02d}", "source": f"./plugins/p{i:02d}"})
    (market / ".claude-plugin" / "marketplace.json").write_text(
        json.dumps({"name": "bench", "owner": {"name": "b"}, "plugins": entries}))
    code = ("import sys; from nyzhi.core.runtime.plugins import store; store.marketplace_add(sys.argv[1])\n"
            f"for i in range({PLUGINS}): store.install(f'p{{i:02d}}@bench', approve=True)")
    subprocess.run([sys.executable, "-c", code, str(market)], env=env, check=True)


def measure(runs: int) -> dict[str, Any]:
    import trio

    from benchmarks.startup_bench import _timed_run
    from nyzhi.testing.fake_llm import open_fake_llm

    nyz = [sys.executable, "-m", "nyzhi", "run", "--ephemeral", "hi"]

    async def both(ws: Path, plain: dict[str, str], loaded: dict[str, str]) -> dict[str, Any]:
        none, twenty, sizes = [], [], {}
        async with open_fake_llm() as server:
            for env in (plain, loaded):  # the user's own config: a project's base_url and
                user = Path(env["HOME"]) / ".config" / "nyzhi" / "config.toml"  # key are gated
                user.parent.mkdir(parents=True, exist_ok=True)
                user.write_text(
                    f'[provider]\ndefault = "fake"\n[provider.fake]\napi_style = "openai"\n'
                    f'base_url = "{server.url_for("openai")}"\nmodel = "m"\napi_key = "k"\n'
                    "context_window = 65536\n")
            for label, env in (("none", plain), ("twenty", loaded)):  # warm-up, and sizes
                await _timed_run(server, nyz, ws, env)
                body = server.requests[-1].json if server.requests else {}
                sizes[label] = len(json.dumps(body.get("messages", [])[:1])) + len(
                    json.dumps(body.get("tools", [])))
            for _ in range(runs):
                none.append((await _timed_run(server, nyz, ws, plain))["first_request"])
                twenty.append((await _timed_run(server, nyz, ws, loaded))["first_request"])
        a, b = statistics.median(none) * 1000, statistics.median(twenty) * 1000
        return {"none_ms": a, "twenty_ms": b, "ratio": b / a, "target_ratio": TARGET_RATIO,
                "first_request_chars": sizes, "runs": runs}

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        ws = base / "ws"
        (ws / ".nyzhi").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
        plain = {**os.environ, "HOME": str(base / "h0"), "XDG_DATA_HOME": str(base / "d0")}
        loaded = {**os.environ, "HOME": str(base / "h1"), "XDG_DATA_HOME": str(base / "d1")}
        for env in (plain, loaded):
            for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
                env.pop(var, None)
        _install(base, loaded)
        return trio.run(both, ws, plain, loaded)


def main(argv: list[str]) -> None:
    runs = next((int(a.split("=", 1)[1]) for a in argv if a.startswith("--runs=")), 7)
    result = measure(runs)
    if "--json" in argv:
        print(json.dumps(result, indent=2))
        return
    print(f"time to first request, median of {runs}: no plugins {result['none_ms']:.0f} ms, "
          f"{PLUGINS} plugins {result['twenty_ms']:.0f} ms: {result['ratio']:.2f}x "
          f"(target <= {TARGET_RATIO}x)")
    sizes = result["first_request_chars"]
    print(f"first request system + tools: {sizes['none']} chars without, {sizes['twenty']} with")


if __name__ == "__main__":
    main(sys.argv[1:])
