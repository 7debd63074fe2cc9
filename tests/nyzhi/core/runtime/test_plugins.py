"""Claude Code plugins and marketplaces (issue 52): a local marketplace with a plugin that uses
every part, a git marketplace from a local bare repository, trust by digest, and a project's
``enabledPlugins``. Real files, real git, a real MCP server, the real runtime."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import trio

from nyzhi.config.plugins import active_plugins, plugins_dir
from nyzhi.core.runtime.plugins import store
from nyzhi.core.runtime.plugins.parts import plugin_hooks
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.knowledge.commands import load_commands
from nyzhi.knowledge.skills import discover_skills
from nyzhi.testing.cli import run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

HELPER = Path(__file__).parents[2] / "mcp" / "helper_server.py"
GUARD = """\
import json, sys
data = json.load(sys.stdin)
if data.get("tool_name") == "Bash" and "forbidden" in data["tool_input"].get("command", ""):
    print("the kit plugin refuses that", file=sys.stderr)
    sys.exit(2)
"""


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def make_plugin(root: Path, name: str = "kit") -> None:
    write(root / ".claude-plugin" / "plugin.json",
          json.dumps({"name": name, "version": "1.0.0", "description": "every part"}))
    write(root / "commands" / "hello.md",
          "---\ndescription: greet someone\nallowed-tools: Bash(echo:*)\n---\n"
          "Say hello to $ARGUMENTS, first $1.\n")
    write(root / "commands" / "status.md",
          "---\ndescription: where we are\nallowed-tools: Bash(echo:*), Bash(git status:*)\n"
          "---\nShell says: !`echo shell-said-$1`\nRefused: !`touch nope`\n"
          "Read @notes.txt for context.\n")
    write(root / "agents" / "reviewer.md",
          "---\nname: reviewer\ndescription: reviews diffs\ntools: Read, Grep\n---\n"
          "You review code.\n")
    write(root / "skills" / "greeting" / "SKILL.md",
          "---\nname: greeting\ndescription: how to greet people\n---\nWave.\n")
    write(root / "hooks" / "guard.py", GUARD)
    write(root / "hooks" / "hooks.json", json.dumps({"hooks": {"PreToolUse": [{
        "matcher": "Bash", "hooks": [{"type": "command",
                                      "command": f"{sys.executable} ${{CLAUDE_PLUGIN_ROOT}}/hooks/guard.py"}]}]}}))
    shutil.copy(HELPER, root / "server.py")
    write(root / ".mcp.json", json.dumps({"mcpServers": {"kithelper": {
        "command": sys.executable, "args": ["${CLAUDE_PLUGIN_ROOT}/server.py"]}}}))
    write(root / "output-styles" / "terse.md",
          "---\nname: terse\ndescription: short answers\n---\nAnswer in one line.\n")


def make_marketplace(root: Path) -> Path:
    write(root / ".claude-plugin" / "marketplace.json", json.dumps({
        "name": "acme", "owner": {"name": "Acme"},
        "plugins": [{"name": "kit", "source": "./plugins/kit", "description": "every part"}]}))
    make_plugin(root / "plugins" / "kit")
    return root


async def ask(rt, prompt):
    return await (await rt.submit(prompt)).wait()


async def test_install_list_disable_enable_uninstall(tmp_path, home, workspace):
    market = make_marketplace(tmp_path / "market")
    proc = await run_nyz(workspace, home, "plugin", "marketplace", "add", str(market))
    assert proc.returncode == 0 and b"added marketplace acme" in proc.stdout, proc.stderr
    proc = await run_nyz(workspace, home, "plugin", "install", "kit@acme", "--yes")
    out = proc.stdout.decode()
    assert proc.returncode == 0, proc.stderr
    # installing shows what it will run, with ${CLAUDE_PLUGIN_ROOT} expanded
    installed = plugins_dir() / "installed" / "acme" / "kit"
    assert f"hook PreToolUse(Bash): {sys.executable} {installed}/hooks/guard.py" in out
    assert f"MCP server kithelper: {sys.executable} {installed}/server.py" in out
    assert (installed / "commands" / "hello.md").is_file()
    proc = await run_nyz(workspace, home, "plugin", "list")
    assert "kit@acme\t1.0.0\tenabled\tapproved" in proc.stdout.decode()
    assert "kit:hello" in load_commands(workspace)
    assert "kit:greeting" in {s.name for s in discover_skills(workspace)}
    store.set_enabled("kit@acme", False)
    assert active_plugins(workspace) == []
    assert "kit:hello" not in load_commands(workspace)
    store.set_enabled("kit", True)
    assert [p.ident for p in active_plugins(workspace)] == ["kit@acme"]
    store.uninstall("kit@acme")
    assert not installed.exists() and store.installed() == {}
    assert "kit:hello" not in load_commands(workspace)


async def test_every_part_in_a_session(tmp_path, workspace, configure):
    make_marketplace(tmp_path / "market")
    store.marketplace_add(str(tmp_path / "market"))
    store.install("kit@acme", approve=True)
    script = [
        reply(tool_calls=[tool_call("bash", {"command": "touch forbidden"})]),
        reply(tool_calls=[tool_call("mcp__kithelper__echo", {"text": "from the plugin"})]),
        reply("done"),
        reply("reviewed"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            # a namespaced command, with $ARGUMENTS and $1
            assert rt.knowledge.expand("/kit:hello Ann and Bo") == (
                "Say hello to Ann and Bo, first Ann.")
            # the agent is a role spawn_agent can use; the skill is listed
            assert rt.agents.catalog.resolve("kit:reviewer").name == "kit:reviewer"
            assert ("kit:greeting", "how to greet people") in rt.knowledge.skills
            await rt.mcp.wait_started(60)
            await ask(rt, "go")
            # the plugin's agent, as spawn_agent starts it
            got = await rt.agents.spawn("/agents/main", "review this", "kit:reviewer")
            assert got["agent_id"].startswith("/agents/main/kit-reviewer") and got["role"] == "kit:reviewer"
            with trio.fail_after(60):
                await server.wait_for_requests(4)
    assert "You review code." in server.requests[3].system_text()
    assert not (workspace / "forbidden").exists()  # the plugin's PreToolUse hook
    assert "the kit plugin refuses that" in server.requests[1].tool_results()[0]
    assert server.requests[2].tool_results()[-1] == "from the plugin"  # its MCP server


async def test_an_unapproved_plugin_runs_nothing_until_approved(tmp_path, workspace, configure):
    make_marketplace(tmp_path / "market")
    store.marketplace_add(str(tmp_path / "market"))
    store.install("kit@acme")  # not approved
    script = [reply(tool_calls=[tool_call("bash", {"command": "touch forbidden"})]),
              reply("ran"),
              reply(tool_calls=[tool_call("bash", {"command": "touch forbidden-2"})]),
              reply("refused")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            assert any("kit@acme" in n and "not used" in n for n in rt.notices)
            assert rt.knowledge.expand("/kit:hello x").startswith("Say hello")  # text loads
            await ask(rt, "go")
        assert (workspace / "forbidden").exists()  # the hook did not run
        store.approve("kit@acme")
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await ask(rt, "again")
    assert not (workspace / "forbidden-2").exists()
    # a change to what it runs asks again
    guard = plugins_dir() / "installed" / "acme" / "kit" / "hooks" / "guard.py"
    guard.write_text(GUARD + "# changed\n")
    specs, notes = plugin_hooks(workspace)
    assert specs == [] and "kit@acme" in notes[0] and "approve" in notes[0]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd,
                   check=True, capture_output=True)


def rev(cwd: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                          text=True, check=True).stdout.strip()


def test_git_marketplace_from_a_local_bare_repository(tmp_path, workspace, monkeypatch):
    # a plugin repository with two commits; the marketplace pins the first by sha
    plugins = tmp_path / "plugins-src"
    make_plugin(plugins / "tools" / "sub", "subkit")
    git(plugins, "init", "-q", "-b", "main")
    git(plugins, "add", "-A")
    git(plugins, "commit", "-q", "-m", "one")
    first = rev(plugins)
    write(plugins / "tools" / "sub" / "commands" / "hello.md", "Second version.\n")
    git(plugins, "commit", "-q", "-am", "two")
    plugins_bare = tmp_path / "plugins.git"
    git(tmp_path, "clone", "-q", "--bare", str(plugins), str(plugins_bare))
    # the marketplace itself is a git repository too, added from its bare clone
    work = tmp_path / "work"
    make_marketplace(work)
    data = json.loads((work / ".claude-plugin" / "marketplace.json").read_text())
    data["plugins"].append({"name": "subkit", "source": {
        "source": "git-subdir", "url": plugins_bare.as_uri(), "path": "tools/sub",
        "sha": first}})
    (work / ".claude-plugin" / "marketplace.json").write_text(json.dumps(data))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "market")
    bare = tmp_path / "market.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    # a post-checkout hook the user's git template would install: the clone runs no hook
    template = tmp_path / "template"
    marker = tmp_path / "hook-ran"
    write(template / "hooks" / "post-checkout", f"#!/bin/sh\ntouch {marker}\n")
    (template / "hooks" / "post-checkout").chmod(0o755)
    monkeypatch.setenv("GIT_TEMPLATE_DIR", str(template))
    market = store.marketplace_add(str(bare))
    assert market.name == "acme"
    clone = plugins_dir() / "marketplaces" / "acme"
    assert (clone / ".claude-plugin" / "marketplace.json").is_file()
    store.install("kit@acme")
    store.install("subkit@acme")
    sub = plugins_dir() / "installed" / "acme" / "subkit"
    assert "Say hello to $ARGUMENTS" in (sub / "commands" / "hello.md").read_text()  # pinned
    assert not (sub / ".git").exists()
    assert {"kit:hello", "subkit:hello"} <= set(load_commands(workspace))
    assert not marker.exists()
    # update: the marketplace is fetched again and its plugins reinstalled
    assert store.marketplace_update("acme") == []


async def test_project_enabled_plugins_load_it(tmp_path, workspace, configure):
    make_marketplace(tmp_path / "market")
    store.marketplace_add(str(tmp_path / "market"))
    store.install("kit@acme")
    store.set_enabled("kit@acme", False)
    assert active_plugins(workspace) == []
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(
        json.dumps({"enabledPlugins": {"kit@acme": True}}))
    async with open_fake_llm(script=[reply("hi")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert "kit:hello" in rt.knowledge.commands
            await ask(rt, "hi")
    assert [p.ident for p in active_plugins(workspace)] == ["kit@acme"]


async def test_command_file_runs_its_shell_lines_and_reads_its_files(tmp_path, workspace,
                                                                    configure):
    make_marketplace(tmp_path / "market")
    store.marketplace_add(str(tmp_path / "market"))
    store.install("kit@acme")
    (workspace / "notes.txt").write_text("NOTES-CONTENT-42\n")
    async with open_fake_llm(script=[reply("ok"), reply("ok")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="full")) as rt:
            await ask(rt, rt.knowledge.expand("/kit:status now"))
            await ask(rt, "typed: !`echo typed-not-run` @notes.txt")
    sent = server.requests[0].last_user_text()
    assert "Shell says: shell-said-now" in sent
    assert "`touch nope` not run" in sent and not (workspace / "nope").exists()
    assert '<file path="notes.txt">' in sent and "NOTES-CONTENT-42" in sent
    typed = server.requests[1].last_user_text()
    assert "!`echo typed-not-run`" in typed and "NOTES-CONTENT" not in typed  # as typed


async def test_project_declares_its_marketplace_and_plugin(tmp_path, workspace, configure):
    market = make_marketplace(tmp_path / "market")
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps({
        "extraKnownMarketplaces": {"acme": {"source": {"source": "directory",
                                                       "path": str(market)}}},
        "enabledPlugins": {"kit@acme": True}}))
    async with open_fake_llm(script=[reply("a"), reply("b")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert any("enables plugin kit@acme, which is not installed" in n
                       for n in rt.notices)
        store.install("kit@acme", workspace_root=workspace)  # the marketplace is added first
        assert "acme" in store.marketplaces()
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert "kit:hello" in rt.knowledge.commands
            assert not any("not installed" in n for n in rt.notices)


def test_bad_marketplace_is_one_line(tmp_path, home):
    from nyzhi.core.runtime.plugins.manifest import PluginError

    write(tmp_path / "m" / ".claude-plugin" / "marketplace.json",
          json.dumps({"name": "m", "plugins": [{"name": "x", "source": "../../etc"}]}))
    try:
        store.marketplace_add(str(tmp_path / "m"))
    except PluginError as exc:
        assert "plugins[0].source" in str(exc) and "leaves the marketplace" in str(exc)
    else:
        raise AssertionError("accepted a source outside the marketplace")




async def test_output_style_from_a_plugin_and_from_the_project(tmp_path, workspace, configure):
    make_marketplace(tmp_path / "market")
    store.marketplace_add(str(tmp_path / "market"))
    store.install("kit@acme")
    (workspace / ".claude").mkdir()
    settings = workspace / ".claude" / "settings.json"
    settings.write_text(json.dumps({"outputStyle": "terse"}))
    write(workspace / ".claude" / "output-styles" / "teacher.md",
          "---\nname: teacher\ndescription: explains\nkeep-coding-instructions: true\n---\n"
          "Explain each step as you go.\n")
    async with open_fake_llm(script=[reply("a"), reply("b"), reply("c")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            await ask(rt, "hi")
        settings.write_text(json.dumps({"outputStyle": "teacher"}))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            await ask(rt, "hi")
        settings.write_text(json.dumps({"outputStyle": "nope"}))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert any("outputStyle 'nope'" in n for n in rt.notices)
            await ask(rt, "hi")
    terse, teacher, default = (r.system_text() for r in server.requests)
    assert "Answer in one line." in terse and "# Communicating" not in terse
    assert "# Communicating" in default and "Answer in one line." not in default
    assert "Explain each step" in teacher and "# Communicating" not in teacher
    # the coding sections go with a style, unless it keeps the coding instructions
    assert "# Code quality" in default and "# How to work" in default
    assert "# Code quality" not in terse and "# How to work" not in terse
    assert "# Code quality" in teacher and "# How to work" in teacher


async def test_a_plugin_on_only_by_an_unapproved_project_runs_nothing(tmp_path, workspace,
                                                                     configure):
    make_marketplace(tmp_path / "market")
    store.marketplace_add(str(tmp_path / "market"))
    store.install("kit@acme", approve=True)
    store.set_enabled("kit@acme", False)  # you turned it off
    async with open_fake_llm(script=[reply("a"), reply("b")]) as server:
        # the provider in the user's config: the project's (gated) waits with its settings
        configure(workspace, server.url_for("openai"), approve=False)
        (workspace / ".claude").mkdir()
        (workspace / ".claude" / "settings.json").write_text(json.dumps({  # not approved
            "enabledPlugins": {"kit@acme": True},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert "kit:hello" in rt.knowledge.commands  # its text loads
            assert any("on only by the project's enabledPlugins" in n for n in rt.notices)
            assert not any(s.source.startswith("plugin ") for s in rt.hooks.specs)
            await ask(rt, "go")
        configure(workspace, server.url_for("openai"))  # the project approved now
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert any(s.source == "plugin kit@acme" for s in rt.hooks.specs)


def test_console_plugin_and_output_style_commands(tmp_path, workspace):
    from nyzhi.core.runtime.commands import COMMANDS
    from nyzhi.core.runtime.commands.plugins import output_style_text, plugin_text

    assert {"plugin", "output-style"} <= set(COMMANDS)
    market = make_marketplace(tmp_path / "market")
    kind, text = plugin_text(f"marketplace add {market}", workspace)
    assert kind == "body" and "added acme: kit" in text
    kind, text = plugin_text("install kit@acme", workspace)
    assert "installed kit@acme" in text and "hook PreToolUse(Bash)" in text
    assert plugin_text("list", workspace)[1] == "kit@acme  enabled  programs off"
    assert "approve with: /plugin approve kit yes" in plugin_text("approve kit", workspace)[1]
    assert plugin_text("approve kit yes", workspace)[1].startswith("approved kit@acme")
    assert plugin_text("disable kit", workspace)[1].startswith("disabled kit@acme")
    assert plugin_text("list", workspace)[1] == "kit@acme  disabled  approved"
    assert plugin_text("enable nope", workspace)[0] == "error"
    plugin_text("enable kit", workspace)
    assert "terse" in output_style_text("", workspace)[1]
    assert output_style_text("missing", workspace)[0] == "error"
    output_style_text("terse", workspace)
    local = json.loads((workspace / ".claude" / "settings.local.json").read_text())
    assert local == {"outputStyle": "terse"}
    assert "* terse" in output_style_text("", workspace)[1]
    assert plugin_text("uninstall kit", workspace)[1].startswith("uninstalled kit@acme")
