"""``nyz run`` imports only what its path needs, and leaves through the fast exit (issue 14 §11).

The child runs the real ``python -m nyzhi`` entry through a small wrapper that records
``sys.modules`` when the process ends through ``os._exit``: so the test also proves the run
took the fast exit (after flushing its answer), not the interpreter's teardown.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import trio

from nyzhi.testing.fake_llm import open_fake_llm, reply

WRAPPER = """
import json, os, runpy, sys
out, sys.argv = sys.argv[1], ["nyz", "run", *sys.argv[2:]]
real_exit = os._exit
def _exit(code):
    with open(out, "w") as fh:
        json.dump(sorted(sys.modules), fh)
    real_exit(code)
os._exit = _exit
runpy.run_module("nyzhi", run_name="__main__")
"""

# Heavy or unrelated modules a plain `nyz run` against one provider must not import. Each was
# measured on the start-up path (python -X importtime) or is a known heavy dependency.
NOT_ON_THE_RUN_PATH = (
    "mcp", "urwid", "tomlkit", "trio_websocket", "onnxruntime", "numpy", "hnswlib",
    "click", "rich", "pygments",  # httpx's command-line client
    "h2", "hpack", "hyperframe",  # httpcore's HTTP/2, which no client of nyz asks for
    "nyzhi.provider.anthropic", "nyzhi.provider.gemini", "nyzhi.provider.ollama",
    "nyzhi.provider.openai_responses",  # other wire formats than the one configured
    "nyzhi.tools.executors.ssh", "nyzhi.tools.executors.monitored",  # no nodes configured
    "nyzhi.team_files.store", "nyzhi.team_files.board", "nyzhi.team_files.inbox",  # no team in this run
    # the index service starts, but only a build, a search or a status reads the index
    "nyzhi.index.store", "nyzhi.index.indexer", "nyzhi.index.chunking",
    "nyzhi.core.runtime.teams.member", "nyzhi.core.runtime.teams.process",
    # a session is written and read, never exported or replayed, by a run
    "nyzhi.core.runtime.sessions.export", "nyzhi.core.runtime.sessions.recorded",
    # The one converter (nyzhi.convert) imports cattrs at the first record or event it
    # converts; a text run that saves no session converts nothing (the config is structured by
    # nyzhi.config.convert). stream-json output and a saved session do import it.
    "cattrs",
    "yaml",  # front matter is parsed only when a skill, command or role file has some
    "PIL",  # Pillow: only when an image is sent
    "ast_grep_py",  # structural tools (ast_search, batch_apply, instrument): on first use
    # the built-in tools' modules: the request needs only the manifest (nyzhi.tools.lazy)
    "nyzhi.tools.builtin.files_read", "nyzhi.tools.builtin.files_write",
    "nyzhi.tools.builtin.bash", "nyzhi.tools.builtin.search", "nyzhi.tools.builtin.team",
    "nyzhi.tools.builtin.browser", "nyzhi.tools.builtin.lsp", "nyzhi.tools.builtin.pr",
    "nyzhi.tools.builtin.agents",  # the core raises nyzhi.tools.base.AgentControlError
    "difflib",  # only to suggest a name for a wrong config key or role
    "nyzhi.tools.builtin.web_search",  # the key variables: nyzhi.tools.search_backends
    # language servers start (and lsprotocol is imported) on the first lsp_* call or edit
    "lsprotocol", "nyzhi.core.runtime.lsp.client", "nyzhi.core.runtime.lsp.ops",
    # only the given subcommand's module (nyzhi.cli.main.COMMANDS)
    "nyzhi.cli.cmd_chat", "nyzhi.cli.cmd_config", "nyzhi.cli.cmd_init", "nyzhi.cli.cmd_auth",
    "nyzhi.cli.cmd_sessions", "nyzhi.cli.cmd_index", "nyzhi.cli.cmd_mcp", "nyzhi.cli.cmd_memory",
    "nyzhi.cli.cmd_models", "nyzhi.cli.cmd_team",
)


async def _run_modules(args: list[str], workspace, home, configure, tmp_path) -> tuple[bytes, set]:
    modules_file = tmp_path / "modules.json"
    async with open_fake_llm(script=[reply("the answer")]) as server:
        configure(workspace, server.url_for("openai"))
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env["HOME"] = str(home)
        with trio.fail_after(60):
            result = await trio.run_process(
                [sys.executable, "-c", WRAPPER, str(modules_file), *args], cwd=workspace,
                env=env, stdin=subprocess.DEVNULL, capture_stdout=True, capture_stderr=True,
                check=False,
            )
    assert result.returncode == 0, result.stderr.decode()
    loaded = set(json.loads(modules_file.read_text()))
    assert "nyzhi.provider.openai_chat" in loaded  # the wrapper saw a real run
    return result.stdout, loaded


async def test_nyz_run_imports_only_its_path_and_exits_fast(workspace, home, configure, tmp_path):
    out, loaded = await _run_modules(["--ephemeral", "hi"], workspace, home, configure, tmp_path)
    assert out == b"the answer\n"  # flushed before the fast exit
    assert sorted(m for m in NOT_ON_THE_RUN_PATH if m in loaded) == []


async def test_stream_json_pays_only_for_the_converter(workspace, home, configure, tmp_path):
    """Events on the wire go through nyzhi.convert, so this run imports cattrs, and nothing
    else of the list."""
    out, loaded = await _run_modules(
        ["--ephemeral", "--output-format", "stream-json", "hi"], workspace, home, configure,
        tmp_path)
    assert json.loads(out.splitlines()[-1])["result"] == "the answer"
    assert "cattrs" in loaded and "nyzhi.convert" in loaded
    assert sorted(m for m in NOT_ON_THE_RUN_PATH if m in loaded and m != "cattrs") == []


async def test_the_run_keeps_attrs_compiled_methods_for_the_next_start(workspace, home,
                                                                       configure, tmp_path):
    """``nyz`` installs nyzhi.codecache: the run's classes are written where Python keeps
    nyzhi's bytecode (here a PYTHONPYCACHEPREFIX of the test's own), and the next start
    reads them from there."""
    from nyzhi.codecache import _magic

    prefix = tmp_path / "pycache"
    async with open_fake_llm(script=[reply("one"), reply("two")]) as server:
        configure(workspace, server.url_for("openai"))
        env = {k: v for k, v in os.environ.items()
               if not k.endswith("_API_KEY") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(HOME=str(home), PYTHONPYCACHEPREFIX=str(prefix))
        for expected in (b"one\n", b"two\n"):
            with trio.fail_after(60):
                result = await trio.run_process(
                    [sys.executable, "-m", "nyzhi", "run", "--ephemeral", "hi"], cwd=workspace,
                    env=env, stdin=subprocess.DEVNULL, capture_stdout=True,
                    capture_stderr=True, check=False)
            assert result.returncode == 0, result.stderr.decode()
            assert result.stdout == expected
            caches = {p.name: p.stat().st_mtime_ns for p in prefix.rglob("attrs-*.bin")}
            if expected == b"one\n":
                written = caches
    import marshal

    [core] = prefix.rglob("attrs-nyzhi.core.*.bin")
    entries = marshal.loads(core.read_bytes()[len(_magic()):])
    assert "<attrs generated methods nyzhi.core.events.TextDelta>" in entries
    assert {"attrs-trio._core", "attrs-nyzhi.config"} <= {n.rsplit(".", 2)[0] for n in written}
    assert caches == written  # the second start compiled nothing new
