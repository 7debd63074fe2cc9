"""SshExecutor against a real sshd on loopback."""

from pathlib import Path

import _sshd
import pytest
import trio
from _procs import alive_with, marker_seconds

from nyzhi.tools.base import ToolContext
from nyzhi.tools.builtin.bash import BashTool
from nyzhi.tools.executors import MonitoredExecutor, SshExecutor

pytestmark = pytest.mark.skipif(
    _sshd.unavailable_reason() is not None, reason=str(_sshd.unavailable_reason())
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = _sshd.start(tmp_path_factory.mktemp("sshd"))
    yield srv
    _sshd.stop(srv)


def node(server, cwd=None) -> SshExecutor:
    return SshExecutor(
        host="127.0.0.1",
        user=server.user,
        port=server.port,
        identity_file=server.identity_file,
        known_hosts=server.known_hosts,
        cwd=cwd,
    )


async def test_runs_remotely_with_cwd_env_output_and_exit_code(server, tmp_path: Path):
    (tmp_path / "sub").mkdir()
    chunks = []

    async def on_output(text):
        chunks.append(text)

    r = await node(server, cwd=str(tmp_path)).run(
        'pwd; echo "$GREETING"; echo oops >&2; exit 5',
        cwd="sub",
        env={"GREETING": "hello there"},
        on_output=on_output,
    )
    assert r.exit_code == 5, r.output
    assert r.output.splitlines() == [str(tmp_path / "sub"), "hello there", "oops"]
    assert "".join(chunks) == r.output
    assert server.known_hosts.exists()  # host key accepted on first use, into our file


async def test_absolute_cwd_and_quoting(server, tmp_path: Path):
    r = await node(server).run("printf '%s|' \"a b\" 'c\"d' $((1+2))", cwd=str(tmp_path))
    assert r.exit_code == 0 and r.output == 'a b|c"d|3|'


async def test_timeout_kills_local_ssh_and_the_remote_command(server, tmp_path: Path):
    mark = marker_seconds()
    r = await node(server).run(f"sleep {mark} & sleep {mark}", cwd=str(tmp_path), timeout=1.0)
    assert r.timed_out
    # the remote watchdog reacts to the closed connection asynchronously: bounded wait
    with trio.fail_after(10):
        while alive_with(f"sleep {mark}"):  # noqa: ASYNC110 (another host's process: no event to wait on)
            await trio.sleep(0.05)


async def test_cancel_kills_the_remote_command(server, tmp_path: Path):
    mark = marker_seconds()
    ready = trio.Event()

    async def on_output(text):
        if "ready" in text:
            ready.set()

    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: node(server).run(
                    f"sleep {mark} & echo ready; wait", cwd=str(tmp_path), on_output=on_output
                )
            )
            await ready.wait()
            scope.cancel()
    with trio.fail_after(10):
        while alive_with(f"sleep {mark}"):  # noqa: ASYNC110 (another host's process: no event to wait on)
            await trio.sleep(0.05)


async def test_bad_key_fails_without_prompting(server, tmp_path: Path):
    other = tmp_path / "other_key"
    _sshd._keygen(other)
    bad = SshExecutor(
        host="127.0.0.1",
        user=server.user,
        port=server.port,
        identity_file=other,
        known_hosts=server.known_hosts,
    )
    with trio.fail_after(20):
        r = await bad.run("echo hi", cwd=".")
    assert r.exit_code == 255 and "Permission denied" in r.output


async def test_bash_tool_on_a_node(server, tmp_path: Path):
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "f.txt").write_text("remote data\n")
    ctx = ToolContext(workspace_root=ws, cwd=ws / "pkg", nodes={"box": node(server, cwd=str(ws))})
    r = await BashTool().run({"command": "cat f.txt; pwd", "node": "box"}, ctx)
    assert r.output.splitlines() == ["remote data", str(ws / "pkg")] and r.metadata["node"] == "box"
    ctx.nodes["ro"] = MonitoredExecutor(node(server, cwd=str(ws)))
    refused = await BashTool().run({"command": "rm f.txt", "node": "ro"}, ctx)
    assert refused.is_error and (ws / "pkg" / "f.txt").exists()


async def test_a_session_command_has_the_connections_stdin_and_stdout(server, tmp_path: Path):
    """``session_argv`` (a team member over SSH): the command reads the connection's stdin
    (no watchdog in between) in the node's cwd, and ends when that input ends."""
    ex = node(server, cwd=str(tmp_path))
    with trio.fail_after(20):
        r = await trio.run_process(ex.session_argv("sh -c 'cat; pwd'", None),
                                   stdin=b"line one\nline two\n", capture_stdout=True,
                                   env=ex.local_env())
    assert r.stdout.decode().splitlines() == ["line one", "line two", str(tmp_path)]


def test_the_ssh_client_environment_keeps_no_secret(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never")
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-never")
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "agent.sock"))
    env = SshExecutor(host="h").local_env()
    assert "OPENAI_API_KEY" not in env and "DEPLOY_TOKEN" not in env
    assert env["SSH_AUTH_SOCK"] == str(tmp_path / "agent.sock")  # how ssh authenticates
