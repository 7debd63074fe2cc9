"""Known secrets leave by no way out (issue 29 §5, §6, §7).

The ways out: the model's requests (every part, the system prompt too), events (``nyz run
--output-format stream-json``), session files, offloaded tool output (and so git commits), and
``nyz mcp serve`` results. Each test drives the real ``nyz`` as an attacker would (the fake
LLM scripting the model's tool calls, or an MCP client calling tools) and reads every exit
for the secret: provider keys in the config, a key variable passed down on purpose, a token
in an MCP server's headers, a hook's env token, auth.json's entries.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from nyzhi.testing.cli import json_lines, nyz_env
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

NYZ = [sys.executable, "-m", "nyzhi"]
CONFIG_KEY = "sk-config-leaktest-0a1b2c3d4e5f6a7b"  # [provider.fake] api_key
ENV_KEY = "sk-openai-leaktest-99887766554433"  # OPENAI_API_KEY, passed down on purpose
HEADER_TOKEN = "mcp-header-leaktest-5f5f5f5f5f"  # an MCP server's Authorization header
HOOK_TOKEN = "hook-env-leaktest-31415926535"  # a hook's env table
AUTH_KEY = "sk-auth-json-leaktest-27182818284"  # an auth.json account
ALL = (CONFIG_KEY, ENV_KEY, HEADER_TOKEN, HOOK_TOKEN, AUTH_KEY)

EXTRA = f"""
[shell.env]
inherit = "all"
exclude = []

[mcp.servers.remote]
url = "http://127.0.0.1:9/mcp"
headers = {{ Authorization = "Bearer {HEADER_TOKEN}" }}

[[agent.hooks]]
event = "session_end"
command = "true"
env = {{ DEPLOY_TOKEN = "{HOOK_TOKEN}" }}
"""


@pytest.fixture
def setup(workspace: Path, home: Path, configure, approve_project):
    """``setup(server, extra="")``: the project config with every kind of secret in it, and
    auth.json with an account."""
    from nyzhi.config.paths import auth_path

    auth = auth_path({"HOME": str(home)})
    auth.parent.mkdir(parents=True, exist_ok=True)
    auth.write_text(json.dumps({"openai": [{"label": "work", "key": AUTH_KEY, "active": True}]}))

    def write(server, extra: str = "") -> Path:
        configure(workspace, server.url_for("openai"), extra=EXTRA + extra)
        config = workspace / ".nyzhi" / "config.toml"
        config.write_text(config.read_text().replace('"sk-test-key"', f'"{CONFIG_KEY}"'))
        approve_project(workspace)  # the key is a gated key (issue 49): approved as it is now
        return config

    return write


async def nyz(ws: Path, home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**nyz_env(home), "OPENAI_API_KEY": ENV_KEY}
    return await trio.run_process([*NYZ, *args], cwd=ws, env=env, capture_stdout=True,
                                  capture_stderr=True, check=False)


async def run_json(ws: Path, home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    proc = await nyz(ws, home, "run", "--trust", "full", "--output-format", "stream-json", *args)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc


def sent(server) -> str:
    return "".join(r.body.decode("utf-8", "replace") for r in server.requests)


def on_disk(root: Path) -> str:
    """Every file nyz wrote under ``root`` (sessions and their index, state, offloaded
    output), as text; auth.json, where the user keeps the keys, aside."""
    return "".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file()
                   and p.suffix in (".jsonl", ".json", ".txt", ".md") and p.name != "auth.json")


async def git(ws: Path, *args: str) -> str:
    proc = await trio.run_process(["git", "-C", str(ws), "-c", "user.name=t",
                                   "-c", "user.email=t@t", *args], capture_stdout=True)
    return proc.stdout.decode()


def assert_nowhere(text: str, *secrets: str) -> None:
    for secret in secrets or ALL:
        assert secret not in text, f"{secret} leaked"
        assert base64.b64encode(secret.encode()).decode()[:16] not in text


def bash(command: str):
    return tool_call("bash", {"command": command})


# ---- §6: every prompt part and every exit of nyz run -----------------------------------------


async def test_every_part_of_the_request_is_redacted(workspace, home, setup):
    """Rules file, user prompt and tool results all carry secrets; the model gets none, nor do
    stream-json and the session file."""
    (workspace / "AGENTS.md").write_text(f"Deploy with key {CONFIG_KEY}. Token {HOOK_TOKEN}.\n")
    (workspace / "notes.txt").write_text(f"auth={AUTH_KEY}\nheader={HEADER_TOKEN}\n")
    calls = [tool_call("read", {"file_path": "notes.txt"}), bash('echo "env=$OPENAI_API_KEY"'),
             tool_call("read", {"file_path": ".nyzhi/config.toml"})]
    async with open_fake_llm(script=[reply(tool_calls=calls), reply("done")]) as server:
        setup(server)
        proc = await run_json(workspace, home, f"use {ENV_KEY} and {AUTH_KEY}")
    body = sent(server)
    assert_nowhere(body)
    system = server.requests[0].system_text()
    assert "[redacted: provider.fake.api_key]" in system and "Deploy with key" in system
    assert "[redacted: OPENAI_API_KEY]" in server.requests[0].last_user_text()
    notes, echo, config = server.requests[1].tool_results()
    assert "[redacted: auth.json openai/work]" in notes
    assert "[redacted: mcp.servers.remote.headers.Authorization]" in notes
    assert "env=[redacted: OPENAI_API_KEY]" in echo
    assert "[redacted: provider.fake.api_key]" in config
    assert "[redacted: agent.hooks.0.env.DEPLOY_TOKEN]" in config
    assert_nowhere(proc.stdout.decode() + proc.stderr.decode())
    assert_nowhere(on_disk(home / ".local"))


async def test_encoded_secrets_are_redacted(workspace, home, setup):
    """base64 (of a file holding the key, at any offset), the key folded over lines, hex
    dumps and reversed lines."""
    commands = ["base64 -w 0 .nyzhi/config.toml", "base64 .nyzhi/config.toml",
                "printf %s \"$OPENAI_API_KEY\" | fold -w 7", "xxd -p .nyzhi/config.toml",
                "rev .nyzhi/config.toml",
                "printf '%s' \"$OPENAI_API_KEY\" | base64 | fold -w 5"]
    async with open_fake_llm(script=[reply(tool_calls=[bash(c) for c in commands]),
                                     reply("done")]) as server:
        setup(server)
        proc = await run_json(workspace, home, "encode")
    results = server.requests[1].tool_results()
    assert len(results) == len(commands)
    labels = ["as base64", "as base64", "OPENAI_API_KEY]", "as hex", "reversed", "as base64"]
    for result, label in zip(results, labels, strict=True):
        assert f"{label}" in result, result
    everything = sent(server) + proc.stdout.decode() + on_disk(home / ".local")
    for secret in (CONFIG_KEY, ENV_KEY):
        assert secret not in everything.replace("\n", "")
        assert secret.encode().hex() not in everything.replace("\n", "")
        assert secret[::-1] not in everything
        for r in range(3):  # the secret's own base64 characters, at each alignment
            core = base64.b64encode(b"\0" * r + secret.encode()).decode()[4:-4]
            assert core not in everything.replace("\n", "").replace("\\n", "")


# ---- §7: secrets in pieces on the stream ----------------------------------------------------


def deltas(proc, kind: str) -> list[str]:
    return [e["text"] for e in json_lines(proc.stdout) if e.get("type") == kind]


@pytest.mark.parametrize(("before", "chunk"), [
    (3, 20),    # two pieces: the chunk boundary in the middle of the key
    (5, 12),    # three pieces
    (0, 35),    # the boundary exactly at the key's end
    (11, 11),   # the boundary exactly at the key's start
    (0, 1),     # one character per delta
])
async def test_a_key_streamed_in_pieces_never_appears(workspace, home, setup, before, chunk):
    """The model's text deltas and thinking deltas cut the key at chosen places (the fake
    server sends ``chunk`` characters per delta)."""
    assert len(CONFIG_KEY) == 35
    text = "x" * before + CONFIG_KEY + " and " + ENV_KEY + " end"
    script = [reply(text, thinking=text, chunk_size=chunk)]
    answer = workspace / "answer.txt"
    async with open_fake_llm(script=script) as server:
        setup(server)
        proc = await run_json(workspace, home, "--output", str(answer), "say it")
    out = proc.stdout.decode()
    assert_nowhere(out, CONFIG_KEY, ENV_KEY)
    assert answer.read_text().endswith("[redacted: OPENAI_API_KEY] end")  # --output too
    for kind in ("text_delta", "thinking_delta"):
        pieces = deltas(proc, kind)
        assert len(pieces) > 2  # it really was streamed in pieces
        joined = "".join(pieces)  # nothing lost: the stream is the redacted text, in order
        assert joined == ("x" * before + "[redacted: provider.fake.api_key] and "
                          "[redacted: OPENAI_API_KEY] end")
    assert_nowhere(on_disk(home / ".local"), CONFIG_KEY, ENV_KEY)


async def test_tool_output_in_pieces_never_appears(workspace, home, setup):
    """A command prints the key in three pieces (a pause between them, so they come as
    separate reads), a base64 form in two, and a key split over lines."""
    command = ('k="$OPENAI_API_KEY"; printf %s "${k:0:9}"; sleep 0.3; printf %s "${k:9:9}"; '
               'sleep 0.3; printf "%s\\n" "${k:18}"; b=$(printf %s "$k" | base64 -w 0); '
               'printf %s "${b:0:13}"; sleep 0.3; printf "%s\\n" "${b:13}"; '
               'printf "%s\\n%s\\n" "${k:0:16}" "${k:16}"')
    async with open_fake_llm(script=[reply(tool_calls=[bash(command)]), reply("ok")]) as server:
        setup(server)
        proc = await run_json(workspace, home, "print")
    streamed = "".join(deltas(proc, "tool_output_delta"))
    assert streamed.count("[redacted: OPENAI_API_KEY") == 3, streamed
    assert_nowhere(proc.stdout.decode().replace("\\n", ""), ENV_KEY)
    assert_nowhere(sent(server), ENV_KEY)


# ---- §5: offloaded output --------------------------------------------------------------------


async def test_offloaded_output_is_redacted_outside_the_workspace_and_never_committed(
        workspace, home, setup):
    """The issue's example (bash output over the offload limit with the key in it), plus the
    read tool, base64 and a folded key over the limit; the model pages the saved file back
    with read, and git_commit commits none of it."""
    from nyzhi.tools.output import results_dir

    (workspace / "big.log").write_text("".join(f"line {i}\n" for i in range(600))
                                       + f"key={CONFIG_KEY}\n")
    await git(workspace, "config", "user.name", "t")
    await git(workspace, "config", "user.email", "t@t")
    await git(workspace, "add", "big.log")
    await git(workspace, "commit", "-qm", "log")
    filler = "seq 1 1500; "
    calls = [bash(filler + 'echo "key=$OPENAI_API_KEY"'),
             tool_call("read", {"file_path": "big.log"}),
             bash(filler + "base64 .nyzhi/config.toml"),
             bash(filler + 'printf %s "$OPENAI_API_KEY" | fold -w 4')]
    saved = results_dir(workspace)

    def read_back(request):  # the model follows the pointer of the first result
        first = request.tool_results()[0]
        path = first.split("[Output written to ", 1)[1].split(" (", 1)[0]
        return reply(tool_calls=[tool_call("read", {"file_path": path, "offset": 1490}),
                                 tool_call("git_commit", {"message": "work"})])

    steps = [reply(tool_calls=calls), read_back, reply("ok")]

    def script(request):
        step = steps.pop(0)
        return step(request) if callable(step) else step

    async with open_fake_llm(script=script) as server:
        setup(server, extra='[agent.sandbox]\nlevel = "workspace-write"\n')
        proc = await run_json(workspace, home, "work")
    results = server.requests[1].tool_results()
    assert all("[Output written to " in r for r in results), results
    files = sorted(saved.iterdir())
    assert len(files) == 4 and all(f.stat().st_mode & 0o077 == 0 for f in files)
    text = "".join(f.read_text() for f in files)
    assert "[redacted: OPENAI_API_KEY]" in text and "[redacted: provider.fake.api_key" in text
    assert_nowhere(text.replace("\n", ""), CONFIG_KEY, ENV_KEY)
    page, commit = server.requests[2].tool_results()[-2:]
    assert "key=[redacted: OPENAI_API_KEY]" in page  # the model can still read it back
    assert "git commit failed" not in commit, commit
    assert not (workspace / ".nyzhi" / "context").exists()
    history = await git(workspace, "log", "-p", "--all")
    assert "work" in history and "tool-results" not in history
    assert_nowhere(sent(server) + proc.stdout.decode(), CONFIG_KEY, ENV_KEY)


# ---- §6: nyz mcp serve -----------------------------------------------------------------------


async def test_mcp_serve_results_are_redacted(workspace, home, setup):
    """An MCP client reads the config, cats auth.json, prints the key variable, base64s the
    config and gets a big output offloaded: no secret in any result or file."""
    from mcp import Client, StdioServerParameters

    from nyzhi.config.paths import auth_path
    from nyzhi.tools.output import results_dir

    async with open_fake_llm(script=[]) as server:
        setup(server)
    auth = auth_path({"HOME": str(home)})
    env = {**nyz_env(home), "OPENAI_API_KEY": ENV_KEY}
    params = StdioServerParameters(
        command=sys.executable, cwd=str(workspace), env=env,
        args=["-m", "nyzhi", "mcp", "serve", "--trust", "full", "--sandbox", "full-access"])
    calls = [("read", {"file_path": ".nyzhi/config.toml"}),
             ("bash", {"command": f"cat {auth}"}),
             ("bash", {"command": 'echo "$OPENAI_API_KEY"'}),
             ("bash", {"command": "base64 .nyzhi/config.toml"}),
             ("bash", {"command": f"seq 1 2000; cat {auth}"})]
    texts = []
    async with Client(params) as client:
        for name, args in calls:
            result = await client.call_tool(name, args)
            assert not result.is_error, result.content[0].text
            texts.append(result.content[0].text)
    config, auth_text, env_text, encoded, offloaded = texts
    assert "[redacted: provider.fake.api_key]" in config  # the example
    assert "[redacted: mcp.servers.remote.headers.Authorization]" in config
    assert "[redacted: auth.json openai/work]" in auth_text  # the example
    assert "[redacted: OPENAI_API_KEY]" in env_text
    assert "as base64]" in encoded
    assert "[Output written to " in offloaded
    saved = "".join(p.read_text() for p in results_dir(workspace).iterdir())
    assert "[redacted: auth.json openai/work]" in saved
    assert_nowhere("".join(texts) + saved)


async def test_run_time_files_left_in_the_workspace_are_git_ignored(workspace, home, setup):
    """Todo lists and compaction archives stay under .nyzhi/ (the model and the user read
    them there); nyz lists them in .nyzhi/.gitignore before writing, so git_commit
    (``git add -A``) leaves them out, and the user's own lines are kept."""
    from nyzhi.core.loop.compaction import archive_history
    from nyzhi.provider.types import Message

    await git(workspace, "config", "user.name", "t")
    await git(workspace, "config", "user.email", "t@t")
    (workspace / ".nyzhi" / ".gitignore").write_text("config.local.toml")  # no final newline
    archive_history([Message("user", "a thread")], workspace / ".nyzhi" / "context" / "history",
                    "s1")
    (workspace / "work.txt").write_text("the change\n")
    todo = tool_call("todowrite", {"todos": [{"id": "1", "content": "ship it",
                                              "status": "in_progress"}]})
    script = [reply(tool_calls=[todo]), reply(tool_calls=[tool_call("git_commit",
                                                                    {"message": "work"})]),
              reply("ok")]
    async with open_fake_llm(script=script) as server:
        setup(server)
        proc = await run_json(workspace, home, "commit")
    assert list((workspace / ".nyzhi" / "todos").iterdir())
    ignore = (workspace / ".nyzhi" / ".gitignore").read_text().splitlines()
    assert ignore[0] == "config.local.toml" and "/context/" in ignore and "/todos/" in ignore
    committed = await git(workspace, "show", "--name-only", "--format=", "HEAD")
    assert "work.txt" in committed
    assert "todos" not in committed and "context" not in committed, committed
    assert_nowhere(sent(server) + proc.stdout.decode(), CONFIG_KEY, ENV_KEY)
