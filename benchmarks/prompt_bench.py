"""The size of the first request: what every session pays before the model reads a word.

Runs a real ``open_runtime`` session against the fake LLM on the Anthropic wire (the one with
explicit cache breakpoints) in a small temporary git project, and measures the first request
by part: ``system``, ``tools`` and ``messages``, as the JSON sent, in characters and in tokens
estimated as characters / 4. Beside each figure: the same part as it was before issue 20 (the
533-character prompt and the terse tool descriptions), rebuilt from ``data/prompt_before.json``
(taken from commit 4eb2655) with the same workspace, date and model, so the two differ only in
the prompt text. Target: system + tools <= 8,000 estimated tokens (the budget
``tests/nyzhi/core/loop/test_prompt.py`` enforces).

Usage: ``python -m benchmarks prompt [--json]``.
"""

from __future__ import annotations

import datetime
import json
import platform
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import trio

BEFORE = Path(__file__).parent / "data" / "prompt_before.json"
EPHEMERAL = {"type": "ephemeral"}
PROMPT = "list the python files"


def old_system_prompt(base: str, root: Path, cwd: Path, model: str) -> str:
    """The system prompt as 4eb2655 built it: the base text, then the environment block."""
    env = (
        "<environment>\n"
        f"workspace root: {root}\n"
        f"working directory: {cwd}\n"
        f"platform: {platform.system()} {platform.machine()}\n"
        f"date: {datetime.date.today().isoformat()}\n"
        f"model: {model}\n"
        "</environment>"
    )
    return f"{base}\n\n{env}"


def old_request_parts(root: Path, model: str, messages: Any) -> dict[str, str]:
    """The previous first request's parts, in the Anthropic wire shape the adapter sends."""
    before = json.loads(BEFORE.read_text())
    system = [{"type": "text", "text": old_system_prompt(before["base_prompt"], root, root, model),
               "cache_control": EPHEMERAL}]
    tools = [{"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
             for t in before["tools"]]
    tools[-1]["cache_control"] = EPHEMERAL
    return {"system": json.dumps(system), "tools": json.dumps(tools),
            "messages": json.dumps(messages)}


async def first_request(root: Path) -> dict[str, Any]:
    from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
    from nyzhi.provider import build_provider
    from nyzhi.provider.spec import ProviderSpec
    from nyzhi.testing.fake_llm import open_fake_llm, reply

    async with open_fake_llm(script=[reply("ok")]) as server:
        spec = ProviderSpec(name="bench", api_style="anthropic",
                            base_url=server.url_for("anthropic"), model="bench-model")
        async with build_provider(spec) as provider:
            options = RuntimeOptions(cwd=root, provider_instance=provider, ephemeral=True)
            async with open_runtime(options) as rt:
                await (await rt.submit(PROMPT)).wait()
                reported = rt.session_start.prompt
    return {"body": server.requests[0].json, "reported": reported}


def make_project(root: Path) -> None:
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0.1"\n')
    (root / "demo.py").write_text("print('hi')\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def measure() -> dict[str, Any]:
    from nyzhi.core.loop.prompt import FIRST_REQUEST_TOKEN_BUDGET
    from nyzhi.core.loop.prompt import chars_to_tokens as tokens

    with tempfile.TemporaryDirectory(prefix="nyzhi-prompt-bench-") as tmp:
        root = Path(tmp).resolve()
        make_project(root)
        got = trio.run(first_request, root)
        body = got["body"]
        after = {"system": json.dumps(body["system"]), "tools": json.dumps(body["tools"]),
                 "messages": json.dumps(body["messages"])}
        before = old_request_parts(root, body["model"], body["messages"])
    rows = {}
    for part in ("system", "tools", "messages"):
        rows[part] = {"before_chars": len(before[part]), "after_chars": len(after[part])}
    rows["total"] = {k: sum(r[k] for r in rows.values()) for k in ("before_chars", "after_chars")}
    for row in rows.values():
        row["before_tokens"] = tokens(row["before_chars"])
        row["after_tokens"] = tokens(row["after_chars"])
        row["ratio"] = row["after_chars"] / row["before_chars"]
    prefix = tokens(rows["system"]["after_chars"] + rows["tools"]["after_chars"])
    return {"parts": rows, "prefix_tokens": prefix, "target_tokens": FIRST_REQUEST_TOKEN_BUDGET,
            "sections": got["reported"].get("sections", [])}


def main(argv: list[str]) -> None:
    result = measure()
    if "--json" in argv:
        print(json.dumps(result, indent=2))
        return
    print("first request, Anthropic wire JSON: chars / est. tokens (chars/4)")
    print(f"  {'part':<9}{'before (4eb2655)':>20}{'after':>20}{'ratio':>9}")
    for part, row in result["parts"].items():
        before = f"{row['before_chars']:,} / {row['before_tokens']:,}"
        after = f"{row['after_chars']:,} / {row['after_tokens']:,}"
        print(f"  {part:<9}{before:>20}{after:>20}{row['ratio']:>8.2f}x")
    ok = "ok" if result["prefix_tokens"] <= result["target_tokens"] else "OVER"
    print(f"  system + tools: {result['prefix_tokens']:,} est. tokens "
          f"(target <= {result['target_tokens']:,}: {ok})")
    print(f"  sections: {', '.join(result['sections'])}")
