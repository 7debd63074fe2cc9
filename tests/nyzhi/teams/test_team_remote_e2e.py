"""Teammates on another host, over a real sshd on loopback (docs/teams.md, "Teams on several hosts").

The "other host" is a second local user (``nyz-remote``) with its own HOME and its own nyz
config (its own provider key: members on other hosts never get the lead's), reached through a
real OpenSSH server the test starts as root on a free port. The lead runs as this user in the
test's workspace; its ``[[nodes]]`` point at that sshd. The fake LLM listens on loopback, which
the "remote" user reaches too.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
import trio
from _team_graph import _calls, team_script

import nyzhi
from nyzhi.testing.cli import NYZ, json_lines, nyz_env, run_nyz
from nyzhi.testing.fake_llm import PerAgent, open_fake_llm, reply, tool_call

_spec = importlib.util.spec_from_file_location(
    "_sshd", Path(__file__).parent.parent / "tools" / "_sshd.py")
_sshd = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_sshd)



def remote_python() -> str | None:
    """A Python of this version the other user may run: this venv's interpreter may live
    under root's home; the system's of the same minor version loads the same packages."""
    system = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    return system if os.path.exists(system) else None


def _reason() -> str | None:
    if remote_python() is None:
        return f"no /usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    return _sshd.remote_user_reason()


pytestmark = pytest.mark.skipif(_reason() is not None, reason=str(_reason()))

NODE_KEY = "sk-node-own-key"
SECRETS = ("sk-test-key", "sk-LEAD-ENV-SECRET", "tok-LEAD-SECRET")  # the lead's, never sent


class Remote:
    def __init__(self, base: Path, server, user: str, uid: int) -> None:
        self.base, self.server, self.user, self.uid = base, server, user, uid
        self.home = base / "home"


@pytest.fixture(scope="module")
def remote():
    base = Path(tempfile.mkdtemp(prefix="nyz-remote-", dir="/tmp"))
    os.chmod(base, 0o755)
    (base / "sshd").mkdir()
    server = _sshd.start(base / "sshd")
    _sshd.share_keys(server)
    user, uid = _sshd.remote_user(base / "home")
    yield Remote(base, server, user, uid)
    _sshd.stop(server)
    for pid in processes_of(uid):  # a failed test's leftovers
        os.kill(pid, signal.SIGKILL)
    shutil.rmtree(base, ignore_errors=True)


def processes_of(uid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid and fields["State"].split()[0] != "Z":
            pids.append(int(entry.name))
    return pids


async def until_none_of(uid: int) -> None:
    with trio.fail_after(60):
        while processes_of(uid):  # noqa: ASYNC110 (another host's processes: no event to wait on)
            await trio.sleep(0.05)


def _chown_tree(path: Path, uid: int) -> None:
    for p in [path, *path.rglob("*")]:
        os.chown(p, uid, uid)


def set_up(remote: Remote, tmp_path: Path, workspace: Path, configure, url: str,
           nodes: tuple[str, ...] = ("build1",)) -> dict[str, Path]:
    """The node user's own config (its own key), one directory per node, and the lead's
    project config naming the nodes."""
    config = remote.home / ".config" / "nyzhi" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"""[provider]
default = "fake"

[provider.fake]
api_style = "openai"
base_url = "{url}"
model = "fake-model-1"
api_key = "{NODE_KEY}"
""")
    _chown_tree(remote.home, remote.uid)
    code = Path(nyzhi.__file__).parent.parent
    site = sysconfig.get_paths()["purelib"]
    nyz = f"env PYTHONPATH={code}:{site} PYTHONUNBUFFERED=1 {remote_python()} -m nyzhi"
    cwds, extra = {}, ""
    for name in nodes:
        cwd = remote.base / tmp_path.name / name
        cwd.mkdir(parents=True)
        _chown_tree(cwd, remote.uid)
        cwds[name] = cwd
        extra += f"""
[[nodes]]
name = "{name}"
host = "127.0.0.1"
user = "{remote.user}"
port = {remote.server.port}
identity_file = "{remote.server.identity_file}"
known_hosts = "{tmp_path / 'known_hosts'}"
cwd = "{cwd}"
nyz_command = "{nyz}"
"""
    configure(workspace, url, extra=extra)
    return cwds


def lead_env(home: Path) -> dict[str, str]:
    return {**nyz_env(home), "OPENAI_API_KEY": SECRETS[1], "DEPLOY_TOKEN": SECRETS[2]}


def assert_no_secret_under(path: Path) -> None:
    for f in path.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            for secret in SECRETS:
                assert secret.encode() not in data, f"{secret} reached {f}"


async def test_two_remote_members_complete_the_task_graph(remote, tmp_path, workspace, home,
                                                          configure):
    script = team_script()
    async with open_fake_llm(script=script) as server:
        set_up(remote, tmp_path, workspace, configure, server.url_for("openai"),
               ("build1", "build2"))
        with trio.fail_after(60):
            proc = await trio.run_process(
                [*NYZ, "team", "start", "crew", "--members",
                 "alice:worker@build1,bob:reviewer@build2", "--task", "LEAD-TASK: build it",
                 "--teammate-mode", "process", "--headless", "--output-format", "stream-json"],
                cwd=workspace, env=lead_env(home), capture_stdout=True, capture_stderr=True,
                check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    events = json_lines(proc.stdout)
    messages = [(e["sender"], e["to"]) for e in events
                if e["type"] == "team_message" and e["kind"] == "message"]
    assert messages == [("lead", "alice"), ("alice", "bob"), ("bob", "alice"), ("alice", "lead")]
    assert {"/team/crew/alice", "/team/crew/bob"} <= {e["agent"] for e in events}
    completed = [(e["task_id"], e["unblocked"]) for e in events
                 if e["type"] == "task_update" and e["status"] == "completed"]
    assert completed == [("1", ["2"]), ("2", ["3"]), ("3", [])]
    assert events[-1]["result"] == "the team finished" and events[-1]["is_error"] is False
    # usage of the remote members came back over ssh with their events
    assert set(events[-1]["usage_by_agent"]) == {"/agents/main", "/team/crew/alice",
                                                 "/team/crew/bob"}
    # each host used its own credentials: the members the node's key, the lead its own
    for key, bearer in (("ALICE-JOB", NODE_KEY), ("BOB-JOB", NODE_KEY),
                        ("LEAD-TASK", "sk-test-key")):
        assert script.seen[key]
        assert {r.headers["authorization"] for r in script.seen[key]} == {f"Bearer {bearer}"}
    # the team's data lives only with the lead: no inbox or board on the node
    node_data = remote.home / ".local" / "share" / "nyzhi"
    assert not (node_data / "teams" / "crew" / "inboxes").exists()
    assert not (node_data / "tasks" / "crew").exists()
    # nothing of the lead's secrets reached the other host (config key, env key, env token)
    assert_no_secret_under(remote.home)
    assert_no_secret_under(remote.base / tmp_path.name)

    status = json.loads((await run_nyz(workspace, home, "team", "status", "crew",
                                       "--json")).stdout)
    members = {m["name"]: m for m in status["members"]}
    assert (members["alice"]["node"], members["bob"]["node"]) == ("build1", "build2")
    assert {t["id"]: t["owner"] for t in status["tasks"]} == {"1": "alice", "2": "bob",
                                                              "3": "alice"}
    assert members["alice"]["unread"] == members["bob"]["unread"] == 0


def held_script(asked: trio.Event, extra_key: str | None = None) -> PerAgent:
    async def hold(_request):
        asked.set()
        await trio.sleep_forever()  # until the test kills what asked

    return PerAgent({
        "LEAD-TASK": [
            _calls(tool_call("task_create", {"subject": "one"})),
            _calls(tool_call("send_team_message", {"to": "alice", "message": "ALICE-JOB: do 1"})),
            reply("assigned"),
            reply("the team finished"),
        ],
        "ALICE-JOB": [
            _calls(tool_call("task_update", {"task_id": "1", "status": "in_progress"})),
            hold,
            _calls(tool_call("task_update", {"task_id": "1", "status": "completed"})),
            _calls(tool_call("send_team_message", {"to": "lead", "message": "ALICE-DONE"})),
            reply("did task 1"),
        ],
    })


async def _lead_until(workspace, home, members: str, act, *more: str) -> tuple[int, bytes, bytes]:
    """Start a headless lead, run ``act()`` (it waits for what it needs), wait for the lead."""
    lead = await trio.lowlevel.open_process(
        [*NYZ, "team", "start", "crew", "--members", members, "--task", "LEAD-TASK",
         "--teammate-mode", "process", "--headless", "--output-format", "stream-json", *more],
        cwd=workspace, env=lead_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = bytearray(), bytearray()
    async with trio.open_nursery() as nursery:

        async def drain(stream, buf):
            while chunk := await stream.receive_some(65536):
                buf += chunk

        acting = trio.CancelScope()

        async def run_act():
            with acting:
                await act(lead)

        nursery.start_soon(drain, lead.stdout, out)
        nursery.start_soon(drain, lead.stderr, err)
        nursery.start_soon(run_act)
        code = await lead.wait()
        acting.cancel()  # a lead that ended first: what the test waited for never came
    return code, bytes(out), bytes(err)


def _environ(pid: int) -> bytes:
    return Path(f"/proc/{pid}/environ").read_bytes()


def ssh_clients(member: str) -> list[int]:
    """The lead's ssh client processes for ``member`` (this user's, not the node's)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"ssh") and any(
                f"team member crew {member} ".encode() in a for a in argv) \
                and entry.stat().st_uid == os.getuid():
            pids.append(int(entry.name))
    return pids


async def test_a_killed_remote_member_is_restarted_with_its_inbox(remote, tmp_path, workspace,
                                                                  home, configure):
    from nyzhi.team_files.store import TeamStore

    asked = trio.Event()
    script = held_script(asked)
    env = nyz_env(home)
    seen: dict[str, object] = {}

    async def act(_lead):
        await asked.wait()
        first = TeamStore(env).statuses("crew")["alice"]
        seen["first"] = first
        # the member runs as the node's user, and neither it nor the ssh client carries
        # the lead's secrets
        assert first["pid"] in processes_of(remote.uid)
        for pid in (first["pid"], *ssh_clients("alice")):
            environ = _environ(pid)
            assert not any(s.encode() in environ for s in SECRETS), pid
        sent = await run_nyz(workspace, home, "team", "send", "crew", "alice",
                             "EXTRA-NOTE: also check the docs")
        assert sent.returncode == 0, sent.stderr.decode()
        os.kill(first["pid"], signal.SIGKILL)

    async with open_fake_llm(script=script) as server:
        set_up(remote, tmp_path, workspace, configure, server.url_for("openai"))
        with trio.fail_after(180):
            code, out, err = await _lead_until(workspace, home, "alice:worker@build1", act)
    assert code == 0, err.decode()[-3000:]
    store = TeamStore(env)
    alice = store.statuses("crew")["alice"]
    assert alice["restarts"] == 1 and alice["pid"] != seen["first"]["pid"]
    assert store.board("crew").get("1").status == "completed"
    later = [text for r in script.seen["ALICE-JOB"][2:] for role, text in r.transcript()
             if role == "user"]
    assert any("was restarted" in t for t in later)
    assert any("EXTRA-NOTE" in t for t in later)  # its unread inbox outlived the process
    assert store.inbox("crew", "alice").unread_count() == 0
    assert json_lines(out)[-1]["result"] == "the team finished"
    await until_none_of(remote.uid)


async def test_a_cut_connection_is_reconnected_and_the_work_kept(remote, tmp_path, workspace,
                                                                 home, configure):
    from nyzhi.team_files.store import TeamStore

    asked = trio.Event()
    script = held_script(asked)
    env = nyz_env(home)

    async def act(_lead):
        await asked.wait()
        (client,) = ssh_clients("alice")
        os.kill(client, signal.SIGKILL)  # the connection drops, as a network would drop it

    async with open_fake_llm(script=script) as server:
        set_up(remote, tmp_path, workspace, configure, server.url_for("openai"))
        with trio.fail_after(180):
            code, out, err = await _lead_until(workspace, home, "alice:worker@build1", act)
    assert code == 0, err.decode()[-3000:]
    store = TeamStore(env)
    assert store.statuses("crew")["alice"]["restarts"] == 1
    assert store.board("crew").get("1").status == "completed"
    assert store.board("crew").get("1").owner == "alice"
    resumed = script.seen["ALICE-JOB"][2].transcript()
    # the same thread, continued: the claim made before the cut is in it
    assert any("was restarted" in text for role, text in resumed if role == "user")
    assert sum("in_progress" in text for _role, text in resumed) >= 1
    events = json_lines(out)
    assert ("alice", "lead") in [(e["sender"], e["to"]) for e in events
                                 if e["type"] == "team_message"]
    await until_none_of(remote.uid)


async def test_lead_killed_leaves_no_remote_process_and_merge_fetches_the_branch(
        remote, tmp_path, workspace, home, configure):
    await trio.run_process(["git", "-C", str(workspace), "-c", "user.name=t", "-c",
                            "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start"])
    asked = trio.Event()

    async def hold(_request):
        asked.set()
        await trio.sleep_forever()

    script = PerAgent({
        "LEAD-TASK": [
            _calls(tool_call("send_team_message", {"to": "alice", "message": "ALICE-JOB: go"})),
            reply("assigned"),
        ],
        "ALICE-JOB": [
            _calls(tool_call("write", {"file_path": "alice.txt", "content": "from the node\n"})),
            hold,
        ],
    })

    async def act(lead):
        await asked.wait()
        assert processes_of(remote.uid)
        lead.send_signal(signal.SIGKILL)

    async with open_fake_llm(script=script) as server:
        cwds = set_up(remote, tmp_path, workspace, configure, server.url_for("openai"))
        with trio.fail_after(180):
            code, _out, err = await _lead_until(workspace, home, "alice:worker@build1", act,
                                                "--worktrees", "-y", "full")
        assert code == -signal.SIGKILL, err.decode()[-3000:]
        await until_none_of(remote.uid)  # the member ended with its lead's connection
        assert not ssh_clients("alice")
    clone = cwds["build1"] / "nyz-teams" / "crew" / "alice"
    assert (clone / "alice.txt").read_text() == "from the node\n"

    status = await run_nyz(workspace, home, "team", "status", "crew", "--json")
    alice = {m["name"]: m for m in json.loads(status.stdout)["members"]}["alice"]
    assert (alice["node"], alice["branch"], alice["worktree"]) == (
        "build1", "nyz/crew/alice", "nyz-teams/crew/alice")
    assert alice["status"] != "running"
    text = (await run_nyz(workspace, home, "team", "status", "crew")).stdout.decode()
    assert "build1" in text and "nyz/crew/alice" in text

    merged = await run_nyz(workspace, home, "team", "merge", "crew", "alice")
    assert merged.returncode == 0, merged.stderr.decode()
    assert (workspace / "alice.txt").read_text() == "from the node\n"
    log = await trio.run_process(["git", "-C", str(workspace), "log", "--format=%s", "-1",
                                  "nyz/crew/alice"], capture_stdout=True)
    assert "alice's work" in log.stdout.decode()


async def test_proxied_model_calls_need_no_credentials_on_the_node(remote, tmp_path, workspace,
                                                                  home, configure):
    """``[team] proxy_model_calls``: the node has no provider config at all; the member's
    model calls are made by the lead, with the lead's key, which never reaches the node."""
    script = PerAgent({
        "LEAD-TASK": [
            _calls(tool_call("send_team_message", {"to": "alice", "message": "ALICE-JOB: go"})),
            reply("assigned"),
            reply("the team finished"),
        ],
        "ALICE-JOB": [
            _calls(tool_call("task_create", {"subject": "made on the node"})),
            # finished: a team that goes quiet with a task unfinished fails (issue 55)
            _calls(tool_call("task_update", {"task_id": "1", "status": "completed"})),
            _calls(tool_call("send_team_message", {"to": "lead", "message": "ALICE-DONE"})),
            reply("did it"),
        ],
    })
    async with open_fake_llm(script=script) as server:
        set_up(remote, tmp_path, workspace, configure, server.url_for("openai"))
        (remote.home / ".config" / "nyzhi" / "config.toml").unlink()  # no credentials there
        config = workspace / ".nyzhi" / "config.toml"
        config.write_text(config.read_text() + "\n[team]\nproxy_model_calls = true\n")
        from nyzhi.config import load_config
        from nyzhi.config.project_trust import approve

        approve(load_config(workspace))
        with trio.fail_after(120):
            proc = await trio.run_process(
                [*NYZ, "team", "start", "crew", "--members", "alice:worker@build1", "--task",
                 "LEAD-TASK", "--teammate-mode", "process", "--headless", "--output-format",
                 "stream-json"],
                cwd=workspace, env=lead_env(home), capture_stdout=True, capture_stderr=True,
                check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    events = json_lines(proc.stdout)
    assert events[-1]["result"] == "the team finished"
    assert ("alice", "lead") in [(e["sender"], e["to"]) for e in events
                                 if e["type"] == "team_message"]
    assert len(script.seen["ALICE-JOB"]) == 4  # every step of alice's was made by the lead
    assert {r.headers["authorization"] for r in script.seen["ALICE-JOB"]} == {
        "Bearer sk-test-key"}
    by_agent = events[-1]["usage_by_agent"]
    assert by_agent["/team/crew/alice"]["input_tokens"] == 12 * 4  # charged to the team
    assert_no_secret_under(remote.home)
    assert_no_secret_under(remote.base / tmp_path.name)
    status = json.loads((await run_nyz(workspace, home, "team", "status", "crew",
                                       "--json")).stdout)
    assert [t["subject"] for t in status["tasks"]] == ["made on the node"]
