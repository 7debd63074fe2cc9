"""How often the offline model makes the right call (issue 33): a figure, not a test.

    python scripts/offline_call_rate.py [--runs 20] [--url http://127.0.0.1:PORT/v1]

For each request below, in two throwaway workspaces (a Python project and a docs folder),
``nyz run`` is pointed at the scripted fake LLM once to record the exact first request nyz
sends the offline model (its call decision); that request is then sent ``--runs`` times to
the real model (llama.cpp's server, started here unless ``--url`` names a running one) and
each reply is checked. Sampling is at nyz's temperature for the model, so runs differ.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
from pathlib import Path

import httpx
import trio

from nyzhi.provider.llama_server import find_default_model, run_llama_server
from nyzhi.provider.offline_model import OFFLINE_MODEL
from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply

#: request -> the right call (tool, argument, value), or None for no call.
CASES: dict[str, tuple[str, str, str] | None] = {
    "list the files here": ("list_dir", "path", "."),
    "what files are here?": ("list_dir", "path", "."),
    "which files are in this directory?": ("list_dir", "path", "."),
    "show me the files": ("list_dir", "path", "."),
    "read README.md": ("read", "file_path", "README.md"),
    "show me README.md": ("read", "file_path", "README.md"),
    "hello, what can you do?": None,
}

WORKSPACES = {
    "python project": {"README.md": "# shop\n", "pyproject.toml": "[project]\nname = 'shop'\n",
                       "src/shop/cart.py": "class Cart: ...\n", "tests/test_cart.py": ""},
    "docs folder": {"README.md": "# Docs\n", "index.md": "# Handbook\n",
                    "guide/install.md": "# Install\n", "images/logo.png": "x"},
}


def _right(content: str, want: tuple[str, str, str] | None) -> bool:
    inner = content.strip().removeprefix("<tool_call>").removesuffix("</tool_call>")
    try:
        calls = json.loads(inner)
    except ValueError:
        return False
    if want is None:
        return calls == []
    return (len(calls) == 1 and calls[0].get("name") == want[0]
            and calls[0].get("arguments", {}).get(want[1]) == want[2])


async def _decisions(root: Path) -> dict[tuple[str, str], dict]:
    """The first request nyz sends for each case in each workspace."""
    home = root / "home"
    (home / ".config" / "nyzhi").mkdir(parents=True)
    bodies = {}
    async with open_fake_llm(None, script=lambda request: reply("ok")) as server:
        (home / ".config" / "nyzhi" / "config.toml").write_text(
            f'[provider]\ndefault = "fake"\n[provider.fake]\napi_style = "llama-cpp"\n'
            f'base_url = "{server.url_for("llama-cpp")}"\nmodel = "{OFFLINE_MODEL}"\n'
            'api_key = "unused"\n')
        for name, files in WORKSPACES.items():
            ws = root / name.replace(" ", "-")
            for path, text in files.items():
                (ws / path).parent.mkdir(parents=True, exist_ok=True)
                (ws / path).write_text(text)
            for prompt in CASES:
                seen = len(server.requests)
                proc = await run_nyz(ws, home, "run", "--ephemeral", prompt)
                if proc.returncode != 0:
                    sys.exit(f"nyz run failed: {proc.stderr.decode()}")
                bodies[(name, prompt)] = server.requests[seen].json
    return bodies


async def _measure(bodies: dict, url: str, runs: int) -> None:
    async with httpx.AsyncClient(timeout=300) as client:
        for (workspace, prompt), body in bodies.items():
            right = 0
            for _ in range(runs):
                response = await client.post(f"{url}/chat/completions", json=body)
                response.raise_for_status()
                right += _right(response.json()["choices"][0]["message"]["content"],
                                CASES[prompt])
            print(f"{workspace:15} {prompt!r:38} {right:3}/{runs}", flush=True)


async def main(runs: int, url: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bodies = await _decisions(Path(tmp))
    if url is not None:
        await _measure(bodies, url, runs)
        return
    model = find_default_model()
    if model is None:
        sys.exit("the offline model is not installed (make install)")
    async with trio.open_nursery() as nursery:
        url = await nursery.start(functools.partial(run_llama_server, model))
        await _measure(bodies, url, runs)
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--url", help="a running llama.cpp server's base URL (…/v1)")
    args = parser.parse_args()
    trio.run(main, args.runs, args.url)
