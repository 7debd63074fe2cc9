"""Secrets stay out of tool processes, the model's context and the logs: ``nyz run`` as a user
runs it (real subprocess, fake LLM over loopback HTTP, real bash under real bwrap)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

NYZ = [sys.executable, "-m", "nyzhi"]

SECRETS = {
    "OPENAI_API_KEY": "sk-openai-e2e-0123456789abcdef",
    "GITHUB_TOKEN": "ghp_e2eTOKENvalue0123456789",
    "MY_SECRET": "my-secret-e2e-value-42",
}


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HOME=str(home), PYTHONUNBUFFERED="1", **extra)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env.pop(var, None)
    return env


async def nyz(ws: Path, home: Path, *args: str, env: dict[str, str] | None = None):
    return await trio.run_process(
        [*NYZ, *args], cwd=ws, env=env or env_for(home), capture_stdout=True,
        capture_stderr=True, check=False,
    )


def session_text(home: Path) -> str:
    files = list((home / ".local" / "share" / "nyzhi").rglob("*.jsonl"))
    assert files, "no session file was written"
    return "".join(f.read_text() for f in files)


def bash(command: str) -> object:
    return reply(tool_calls=[tool_call("bash", {"command": command})])


@pytest.mark.parametrize("level", ["read-only", "workspace-write", "full-access"])
async def test_env_probe_sees_no_secret_under_any_sandbox_level(workspace, home, configure, level):
    probe = "env | grep -E 'KEY|TOKEN|SECRET'; echo probe-ran"
    async with open_fake_llm(script=[bash(probe), reply("done")]) as server:
        configure(workspace, server.url_for("openai"), extra=f'[agent.sandbox]\nlevel = "{level}"\n')
        proc = await nyz(workspace, home, "run", "--trust", "full", "probe",
                         env=env_for(home, **SECRETS))
    assert proc.returncode == 0, proc.stderr.decode()
    [result] = server.requests[1].tool_results()
    assert "probe-ran" in result
    for name, value in SECRETS.items():
        # Stripped from the environment, not merely redacted from the output.
        assert name not in result and value not in result
    assert "[redacted" not in result


async def test_printed_key_is_redacted_in_request_stream_json_and_session(workspace, home, configure):
    extra = '[shell.env]\ninherit = "all"\nexclude = []\n'
    key = SECRETS["OPENAI_API_KEY"]
    async with open_fake_llm(script=[bash('echo "key=$OPENAI_API_KEY"'), reply("ok")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc = await nyz(workspace, home, "run", "--trust", "full", "--output-format",
                         "stream-json", "print it", env=env_for(home, **SECRETS))
    assert proc.returncode == 0, proc.stderr.decode()
    [result] = server.requests[1].tool_results()
    assert "key=[redacted: OPENAI_API_KEY]" in result  # the child had it; the model does not
    assert key not in server.requests[1].body.decode()
    stream = proc.stdout.decode()
    assert "[redacted: OPENAI_API_KEY]" in stream and key not in stream
    on_disk = session_text(home)
    assert "[redacted: OPENAI_API_KEY]" in on_disk and key not in on_disk


async def test_read_of_auth_json_is_refused_unless_allowed(workspace, home, configure):
    from nyzhi.config.paths import auth_path

    auth = auth_path({"HOME": str(home)})
    auth.parent.mkdir(parents=True)
    stored = "sk-stored-in-auth-json-abcdef0123"
    auth.write_text(json.dumps({"openai": [{"label": "work", "key": stored, "active": True}]}))
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecretbits\n")
    (workspace / "link.json").symlink_to(auth)  # resolved before the check
    calls = [tool_call("read", {"file_path": str(auth)}),
             tool_call("read", {"file_path": "link.json"}),
             tool_call("read", {"file_path": str(home / ".ssh" / "id_ed25519")}),
             tool_call("grep", {"pattern": "secretbits", "path": str(home / ".ssh")})]
    async with open_fake_llm(script=[reply(tool_calls=calls), reply("ok")]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await nyz(workspace, home, "run", "read the credentials")
    assert proc.returncode == 0, proc.stderr.decode()
    direct, via_link, ssh_key, grep = server.requests[1].tool_results()
    for refused in (direct, via_link):
        assert "refused" in refused and "auth.json" in refused and "allow_paths" in refused
    assert "SSH private key" in ssh_key and "secretbits" not in ssh_key
    # the whole ~/.ssh is on the credential list (nyzhi.tools.credentials): refused outright
    assert "secretbits" not in grep and "refused" in grep and ".ssh" in grep
    assert stored not in server.requests[1].body.decode()

    # allow_paths lifts the refusal; the stored key is still redacted before the model sees it.
    extra = f'[agent.trust]\nallow_paths = ["{auth.parent}"]\n'
    async with open_fake_llm(script=[reply(tool_calls=calls[:1]), reply("ok")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc = await nyz(workspace, home, "run", "read the credentials")
    assert proc.returncode == 0, proc.stderr.decode()
    [allowed] = server.requests[1].tool_results()
    assert "[redacted: auth.json openai/work]" in allowed and stored not in allowed


async def test_network_is_off_by_default_and_on_with_the_flag(workspace, home, configure):
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    accepted: list[object] = []

    async def handler(stream: trio.SocketStream) -> None:
        accepted.append(stream)
        await stream.aclose()

    probe = f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
    results = {}
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, handler, listeners)
        for flags in ((), ("--network",)):
            async with open_fake_llm(script=[bash(probe), reply("ok")]) as server:
                configure(workspace, server.url_for("openai"))
                proc = await nyz(workspace, home, "run", "--trust", "full", *flags, "connect")
            assert proc.returncode == 0, proc.stderr.decode()
            [results[flags]] = server.requests[1].tool_results()
        nursery.cancel_scope.cancel()
    off, on = results[()], results[("--network",)]
    assert "connected" not in off
    assert "the network is off in the workspace-write sandbox" in off and "--network" in off
    assert "connected" in on and "network is off" not in on
    assert len(accepted) == 1


async def test_hook_gets_its_own_env_table_and_no_inherited_secret(workspace, home, configure):
    out = workspace / "hook-env.txt"
    extra = (f'[[agent.hooks]]\nevent = "session_start"\ncommand = "env > {out}"\n'
             'env = { HOOK_ONLY_TOKEN = "hook-token-value-123" }\n')
    async with open_fake_llm(script=[reply("ok")]) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc = await nyz(workspace, home, "run", "hi", env=env_for(home, **SECRETS))
    assert proc.returncode == 0, proc.stderr.decode()
    seen = dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)
    assert seen["HOOK_ONLY_TOKEN"] == "hook-token-value-123"
    assert not set(SECRETS) & set(seen)
    assert seen["NYZHI_HOOK_EVENT"] == "session_start"


async def test_stdio_server_gets_exactly_the_environment_its_config_gives(env):
    """The policy an MCP stdio server is started with: a real child, its real environment."""
    from nyzhi.config import load_config
    from nyzhi.tools.env_policy import EnvPolicy, child_env

    env.project_config.parent.mkdir(parents=True, exist_ok=True)
    env.project_config.write_text(
        '[shell.env]\ninherit = "none"\n\n'
        '[mcp.servers.probe]\ncommand = "/usr/bin/env"\nenv = { SERVER_KEY = "server-key-0123" }\n'
    )
    config = load_config(env.project).config
    server = config.mcp.servers["probe"]
    parent = {"PATH": "/usr/bin:/bin", **SECRETS}

    async def environment_of(policy: EnvPolicy) -> dict[str, str]:
        proc = await trio.run_process(
            [server.command, "-0"], env=child_env(policy, server.env, parent=parent),
            capture_stdout=True, stdin=subprocess.DEVNULL,
        )
        items = [i for i in proc.stdout.decode().split("\0") if i]
        return dict(i.split("=", 1) for i in items)

    assert await environment_of(EnvPolicy.from_config(config)) == {
        "SERVER_KEY": "server-key-0123"
    }
    # The default policy: what the parent has, minus the secrets, plus the server's own table.
    assert await environment_of(EnvPolicy()) == {
        "PATH": "/usr/bin:/bin", "SERVER_KEY": "server-key-0123"
    }


async def test_a_variable_named_by_client_secret_env_never_reaches_a_child(env):
    """``client_secret_env`` names the variable holding an MCP OAuth client's secret. Its name
    need not look secret (``ORG_CLIENT_PASS`` matches no default pattern), and a user's own
    ``exclude`` list may leave it out: the child (here a real ``env``) never gets it either
    way, and the redactor is given its value (``excluded``)."""
    from nyzhi.config import load_config
    from nyzhi.tools.env_policy import EnvPolicy, child_env

    parent = {"PATH": "/usr/bin:/bin", "ORG_CLIENT_PASS": "s3cr3t-client-pass",
              "OTHER_NAME": "kept"}
    env.project_config.parent.mkdir(parents=True, exist_ok=True)
    for shell in ("", '[shell.env]\nexclude = []\n\n'):
        env.project_config.write_text(
            shell + '[mcp.servers.remote]\nurl = "https://mcp.example.com/mcp"\n'
            'client_id = "nyz"\nclient_secret_env = "ORG_CLIENT_PASS"\n')
        policy = EnvPolicy.from_config(load_config(env.project).config)
        proc = await trio.run_process(["/usr/bin/env", "-0"], env=child_env(policy, parent=parent),
                                      capture_stdout=True, stdin=subprocess.DEVNULL)
        seen = dict(i.split("=", 1) for i in proc.stdout.decode().split("\0") if i)
        assert "ORG_CLIENT_PASS" not in seen and seen["OTHER_NAME"] == "kept", shell
        assert policy.excluded(parent) == {"ORG_CLIENT_PASS": "s3cr3t-client-pass"}, shell
