"""Files read into a prompt never carry a secret out of the workspace (issue 29 §4).

An attacker plants a file the prompt reads (a cloned repository, or the agent itself through
bash) as a link to a secret: ``/proc/self/environ`` (nyz's environment, keys included), an SSH
private key. ``nyz run`` is driven as a user drives it (real subprocess, the fake LLM over
loopback HTTP); the evidence is every byte the "model" received: the planted secret is never
in it, and stderr names the refused file. The markers are under names no redaction knows, so
only the refusal can keep them out.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import trio

from nyzhi.testing.cli import nyz_env
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

NYZ = [sys.executable, "-m", "nyzhi"]
KEY_MARKER = "leakmarker-ssh-7f3a9c"
ENV_MARKER = "leakmarker-env-91c2d4"
API_KEY = "sk-openai-leaktest-0123456789abcdef"


@pytest.fixture
def secrets(home: Path) -> dict[str, Path]:
    """The user's secrets outside the workspace: an SSH key and a private notes folder."""
    ssh = home / ".ssh"
    ssh.mkdir()
    key = ssh / "id_ed25519"
    key.write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY_MARKER}\n"
                   "-----END OPENSSH PRIVATE KEY-----\n")
    notes = home / "private-notes"
    notes.mkdir()
    (notes / "team.md").write_text(f"Private note: {KEY_MARKER}\n")
    skill = home / "outside-skills" / "helper"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: helper\ndescription: {KEY_MARKER}\n---\n"
                                    f"{KEY_MARKER}\n")
    return {"key": key, "notes": notes, "skill": skill}


async def nyz_run(ws: Path, home: Path, *args: str):
    env = {**nyz_env(home), "NYZ_LEAK_MARKER": ENV_MARKER, "OPENAI_API_KEY": API_KEY}
    return await trio.run_process([*NYZ, "run", *args], cwd=ws, env=env, capture_stdout=True,
                                  capture_stderr=True, check=False)


def sent(server) -> str:
    """Everything the model was sent, every request."""
    return "".join(r.body.decode("utf-8", "replace") for r in server.requests)


def assert_kept_out(server, proc) -> None:
    assert proc.returncode == 0, proc.stderr.decode()
    assert server.requests, "the model was never asked"
    body = sent(server)
    for secret in (KEY_MARKER, ENV_MARKER, API_KEY):
        assert secret not in body


def link(path: Path, target: Path | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


# Each plants one file the system prompt reads (a skill: its index entry there, its body
# through load_skill); returns the name stderr must give.
def agents_md_to_environ(ws: Path, home: Path, s: dict[str, Path]) -> str:
    link(ws / "AGENTS.md", "/proc/self/environ")  # the example
    return "AGENTS.md"


def symlink_chain(ws: Path, home: Path, s: dict[str, Path]) -> str:
    link(home / "hop2", s["key"])
    link(ws / ".nyzhi" / "hop1", home / "hop2")
    link(ws / "CLAUDE.md", ws / ".nyzhi" / "hop1")  # in, out, to the key
    return "CLAUDE.md"


def symlinked_parent_directory(ws: Path, home: Path, s: dict[str, Path]) -> str:
    link(ws / ".nyzhi" / "rules", s["notes"])  # the file itself is no link
    return "team.md"


def hard_link(ws: Path, home: Path, s: dict[str, Path]) -> str:
    os.link(s["key"], ws / "AGENTS.md")
    return "hard links"


def proc_self_root(ws: Path, home: Path, s: dict[str, Path]) -> str:
    link(ws / ".nyzhi" / "rules.md", f"/proc/self/root{s['key']}")
    return "rules.md"


def relative_escape(ws: Path, home: Path, s: dict[str, Path]) -> str:
    link(ws / ".cursorrules", os.path.relpath(s["key"], ws))  # ../home/.ssh/id_ed25519
    return ".cursorrules"


def local_rules_to_environ(ws: Path, home: Path, s: dict[str, Path]) -> str:
    link(ws / "NYZHI.local.md", "/proc/self/root/proc/self/environ")
    return "NYZHI.local.md"


def skill_md_to_key(ws: Path, home: Path, s: dict[str, Path]) -> str:
    link(ws / ".nyzhi" / "skills" / "leak" / "SKILL.md", s["key"])  # the example
    return "SKILL.md"


def skill_directory_symlinked(ws: Path, home: Path, s: dict[str, Path]) -> str:
    link(ws / ".claude" / "skills" / "helper", s["skill"])
    return "SKILL.md"


def flat_skill_to_key(ws: Path, home: Path, s: dict[str, Path]) -> str:
    link(ws / ".nyzhi" / "skills" / "deploy.md", s["key"])  # nyzhi 3.x layout
    return "deploy.md"


def user_memory_to_key(ws: Path, home: Path, s: dict[str, Path]) -> str:
    link(home / ".local" / "share" / "nyzhi" / "MEMORY.md", s["key"])
    return "MEMORY.md"


VECTORS = [agents_md_to_environ, symlink_chain, symlinked_parent_directory, hard_link,
           proc_self_root, relative_escape, local_rules_to_environ, skill_md_to_key,
           skill_directory_symlinked, flat_skill_to_key, user_memory_to_key]
SKILLS = ("leak", "helper", "deploy")


@pytest.mark.parametrize("plant", VECTORS, ids=[v.__name__ for v in VECTORS])
async def test_a_planted_link_never_reaches_the_system_prompt(
        workspace, home, configure, secrets, plant):
    named = plant(workspace, home, secrets)
    load = [tool_call("load_skill", {"name": name}) for name in SKILLS]
    async with open_fake_llm(script=[reply(tool_calls=load), reply("ok")]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await nyz_run(workspace, home, "hi")
    assert_kept_out(server, proc)
    assert server.requests[0].system_text(), "no system prompt was sent"
    assert len(server.requests[1].tool_results()) == len(SKILLS)
    assert all(r.startswith("no skill named") for r in server.requests[1].tool_results())
    err = proc.stderr.decode()
    if named:
        assert "not read into the prompt" in err and named in err, err


async def test_links_inside_the_workspace_are_still_read(workspace, home, configure, secrets):
    """The control: the check refuses escapes, not symlinks (CLAUDE.md -> AGENTS.md is common)."""
    (workspace / "docs").mkdir()
    (workspace / "docs" / "rules.md").write_text("Always run the linter. rule-marker-55\n")
    link(workspace / "AGENTS.md", workspace / "docs" / "rules.md")
    (workspace / ".nyzhi" / "commands").mkdir()
    (workspace / ".nyzhi" / "commands" / "real.md").write_text("Lint it. command-marker-66\n")
    link(workspace / ".nyzhi" / "commands" / "alias.md", "real.md")
    async with open_fake_llm(script=[reply("ok")]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await nyz_run(workspace, home, "/alias")
    assert proc.returncode == 0, proc.stderr.decode()
    assert "rule-marker-55" in server.requests[0].system_text()
    assert "command-marker-66" in server.requests[0].last_user_text()
    assert "not read into the prompt" not in proc.stderr.decode()


async def test_a_command_file_linked_to_a_key_is_not_expanded(workspace, home, configure, secrets):
    """A command file that resolves outside the workspace is refused, so its name is an
    unknown command: nyz run says so, names the file and exits 1, and nothing is sent (an
    unknown /x is never sent as typed, the one rule for commands)."""
    link(workspace / ".nyzhi" / "commands" / "leak.md", secrets["key"])  # the example
    link(workspace / ".claude" / "commands" / "env.md", "/proc/self/environ")
    async with open_fake_llm(script=[reply("ok"), reply("ok")]) as server:
        configure(workspace, server.url_for("openai"))
        for command, name in (("/leak", "leak.md"), ("/env", "env.md")):
            proc = await nyz_run(workspace, home, command)
            err = proc.stderr.decode()
            assert proc.returncode == 1, err
            assert f"unknown command {command}" in err and name in err, err
            assert "not read into the prompt" in err, err
    body = sent(server)
    for secret in (KEY_MARKER, ENV_MARKER, API_KEY):
        assert secret not in body
    assert not any(r.last_user_text().strip() in ("/leak", "/env") for r in server.requests)


async def test_files_swapped_for_links_mid_session_are_refused_to_the_tools(
        workspace, home, configure, secrets):
    """The agent itself (here with full access) replaces a skill, a notepad and its plan with
    links to the key after the session started; the tools that read them refuse."""
    skill = workspace / ".nyzhi" / "skills" / "deploy" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: deploy\ndescription: how to deploy\n---\nRun make deploy.\n")
    notepad = workspace / ".nyzhi" / "notepads" / "p" / "learnings.md"
    swap = (f"ln -sf {secrets['key']} {skill} && mkdir -p {notepad.parent} && "
            f"ln -sf {secrets['key']} {notepad} && echo swapped")
    calls = [tool_call("load_skill", {"name": "deploy"}),
             tool_call("notepad_read", {"plan": "p"}),
             tool_call("notepad_write", {"plan": "p", "category": "learnings",
                                         "content": "more"})]
    script = [reply(tool_calls=[tool_call("bash", {"command": swap})]),
              reply(tool_calls=calls), reply("ok")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"),
                  extra='[agent.sandbox]\nlevel = "full-access"\n')
        proc = await nyz_run(workspace, home, "--trust", "full", "go")
    assert_kept_out(server, proc)
    assert "swapped" in server.requests[1].tool_results()[0]
    load, read, write = server.requests[2].tool_results()[-3:]
    assert load == "no skill named 'deploy' (skills: none)"  # dropped when rediscovered
    assert "SKILL.md: not read into the prompt" in proc.stderr.decode()
    for result in (read, write):
        assert "not read into the prompt" in result and str(secrets["key"]) in result
    assert notepad.is_symlink()  # the refused append wrote nothing through the link


async def test_a_role_file_outside_the_workspace_is_refused_when_spawned(
        workspace, home, configure, secrets):
    extra = f'[agent.agents.roles.spy]\nconfig_file = "{secrets["key"]}"\n'
    spawn = tool_call("spawn_agent", {"message": "look around", "agent_type": "spy"})
    async with open_fake_llm(script=[reply(tool_calls=[spawn]), reply("ok")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc = await nyz_run(workspace, home, "--trust", "full", "go")
    assert_kept_out(server, proc)
    [result] = server.requests[1].tool_results()
    assert "not read into the prompt" in result and "spy" in result


def test_console_file_mentions_are_refused_outside_the_workspace(workspace, home, secrets):
    """``@path`` in the console attaches a file to the prompt: the same check applies."""
    from nyzhi.tui.app import attach_files

    (workspace / "notes.txt").write_text("inside-marker-77\n")
    link(workspace / "key.txt", secrets["key"])
    text = attach_files(f"see @notes.txt @key.txt @{secrets['key']} @/proc/self/environ",
                        workspace)
    assert "inside-marker-77" in text
    assert KEY_MARKER not in text and ENV_MARKER not in text
    assert text.count("not read into the prompt") == 3


async def test_mcp_serve_knowledge_tools_refuse_planted_links(workspace, home, secrets):
    """The same files through ``nyz mcp serve``, as an MCP client calls its tools: a skill
    swapped for a link to the key while the server runs, user memory linked to the key, a
    flat skill linked to /proc/self/environ."""
    from mcp import Client, StdioServerParameters

    skill = workspace / ".nyzhi" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: deploy it\n---\nbody\n")
    user_memory_to_key(workspace, home, secrets)
    link(workspace / ".nyzhi" / "skills" / "env.md", "/proc/self/environ")
    env = {**nyz_env(home), "NYZ_LEAK_MARKER": ENV_MARKER}
    params = StdioServerParameters(command=sys.executable, args=["-m", "nyzhi", "mcp", "serve"],
                                   env=env, cwd=str(workspace))
    async with Client(params) as client:
        (skill / "SKILL.md").unlink()
        (skill / "SKILL.md").symlink_to(secrets["key"])  # swapped while the server runs
        texts = {}
        for name, args in [("load_skill", {"name": "deploy"}), ("load_skill", {"name": "env"}),
                           ("memory_read", {})]:
            result = await client.call_tool(name, args)
            texts[f"{name} {args}"] = result.content[0].text
    for text in texts.values():
        assert KEY_MARKER not in text and ENV_MARKER not in text
    assert texts["load_skill {'name': 'deploy'}"].startswith("no skill named")
    assert "(no user memory)" in texts["memory_read {}"]
    assert texts["load_skill {'name': 'env'}"].startswith("no skill named")
