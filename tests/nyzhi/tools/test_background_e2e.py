"""Background shells through ``nyz run`` as a user runs it: a real nyz subprocess, the fake LLM
scripting the calls over loopback HTTP, real processes under the real bwrap sandbox."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import trio

from nyzhi.testing.cli import (
    NYZ,
    json_lines,
    nyz_env,
    run_nyz,
    running_with,
    settled_running,
    started_running,
    wait_gone,
)
from nyzhi.testing.fake_llm import FakeRequest, in_order, open_fake_llm, reply, tool_call

SANDBOX = '[agent.trust]\nmode = "full"\n[agent.sandbox]\nlevel = "workspace-write"\n'


def call(name: str, **args) -> object:
    return reply(tool_calls=[tool_call(name, args)])


def bg(command: str, **args) -> object:
    return call("bash", command=command, run_in_background=True, **args)


def tool_texts(request: FakeRequest) -> list[str]:
    return [text for role, text in request.transcript() if role == "tool"]


def user_texts(request: FakeRequest) -> list[str]:
    return [text for role, text in request.transcript() if role == "user"]


async def run(workspace: Path, home: Path, configure, steps: list, extra: str = SANDBOX,
              *args: str):
    async with open_fake_llm(script=in_order(steps)) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", *args,
                             "go")
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return json_lines(proc.stdout), server


def alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


def argv0s(pids: list[int]) -> list[str]:
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                out.append(fh.read().split(b"\0")[0].decode())
        except OSError:
            pass
    return out


def log_of(path: str) -> tuple[str, int]:
    """A background shell's log file: its text and its permission bits."""
    return Path(path).read_text(), Path(path).stat().st_mode & 0o777


def starts(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "process_start"]


def exits(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "process_exit"]


async def test_start_a_server_then_curl_it_from_a_later_step_then_kill_it(
        workspace, home, configure):
    marker = f"http.server 8000 --directory {workspace}"
    (workspace / "index.html").write_text("hello from the server\n")
    steps = [
        bg(f"python3 -m {marker} --bind 127.0.0.1"),
        call("bash", command="curl -sS --retry 50 --retry-connrefused --retry-delay 1 -o /dev/null "
             "-w 'status=%{http_code}' http://127.0.0.1:8000/index.html"),
        call("kill_shell", id="bg_1"),
        reply("done"),
    ]
    events, server = await run(workspace, home, configure, steps)
    started, curl, killed = tool_texts(server.requests[-1])
    assert started.startswith("started bg_1 in the background"), started
    assert "status=200" in curl, curl
    assert killed.startswith("bg_1: killed"), killed
    [start] = starts(events)
    assert start["agent"] == "/agents/main" and start["shell_id"] == "bg_1" and start["sandboxed"]
    [end] = exits(events)
    assert end["state"] == "killed" and end["shell_id"] == "bg_1"
    # the sandbox and the server in it are gone
    assert await settled_running(marker) == []  # a leaked one stays; one exiting goes
    assert not alive(start["pid"])
    result = events[-1]
    assert result["type"] == "result"
    assert result["background"] == [{"id": "bg_1", "command": f"python3 -m {marker} --bind "
                                     "127.0.0.1", "state": "killed"}]
    # the shell tools were loaded by the start: the next request offered them
    assert {"bash_output", "kill_shell"} <= set(server.requests[1].tool_names())
    assert "bash_output" not in server.requests[0].tool_names()


async def test_the_sandbox_still_has_no_outside_network(workspace, home, configure):
    steps = [call("bash", command="ip -o link | cut -d: -f2; curl -sS -m 5 http://1.1.1.1/ "
                  "|| echo no-route"), reply("done")]
    _events, server = await run(workspace, home, configure, steps)
    [out] = tool_texts(server.requests[-1])
    assert "no-route" in out and out.split()[0] == "lo" and "eth" not in out


async def test_exit_notice_with_code_and_last_lines_reaches_the_next_request(
        workspace, home, configure):
    steps = [
        bg("echo first-line; echo last-words; touch ended.flag; exit 3", yield_ms=0),
        call("bash", command="until [ -e ended.flag ]; do sleep 0.05; done; echo waited"),
        call("bash", command="echo again"),
        reply("done"),
    ]
    events, server = await run(workspace, home, configure, steps)
    told = [t for r in server.requests for t in user_texts(r) if "bg_1" in t]
    assert told, [user_texts(r) for r in server.requests]
    assert "exited with code 3" in told[0] and "last-words" in told[0]
    [end] = exits(events)
    assert end["state"] == "exited" and end["exit_code"] == 3 and "last-words" in end["last_lines"]



async def test_python_repl_under_a_tty_answers_write_stdin(workspace, home, configure):
    steps = [
        bg("python3 -i -q", tty=True, yield_ms=3000),
        call("write_stdin", id="bg_1", text="6*7\n", yield_ms=10000),
        call("write_stdin", id="bg_1", text="print('\\x1b[31mred\\x1b[0m')\n", yield_ms=10000),
        call("write_stdin", id="bg_1", text="exit()\n"),
        reply("done"),
    ]
    events, server = await run(workspace, home, configure, steps)
    started, answer, coloured, _bye = tool_texts(server.requests[-1])
    assert "pty" in started
    assert re.search(r"^42$", answer, re.M), answer
    # the colour codes the program printed are stripped; the text stays
    assert re.search(r"^red$", coloured, re.M) and "\x1b" not in coloured, coloured
    assert [e["tty"] for e in starts(events)] == [True]


async def test_a_listening_server_is_noticed_with_its_port(workspace, home, configure):
    marker = f"http.server 8642 --directory {workspace}"
    logged = '"GET / HTTP/1.1" 200'
    state = {"step": 0, "polls": 0, "output": ""}

    def script(request):
        """The server, a curl, then bash_output until the server's log line of that GET has
        been read (it is printed after the answer: a condition, not a moment), then
        list_shells."""
        state["step"] += 1
        texts = tool_texts(request)
        if state["step"] == 1:
            return bg(f"python3 -m {marker} --bind 127.0.0.1", yield_ms=0)
        if state["step"] == 2:
            return call("bash", command="curl -sS --retry 50 --retry-connrefused --retry-delay "
                        "1 -o /dev/null -w '%{http_code}' http://127.0.0.1:8642/")
        if not state["output"] and state["polls"] < 60:
            if state["polls"] and logged in texts[-1]:
                state["output"] = texts[-1]
                return call("list_shells")
            state["polls"] += 1
            return call("bash_output", id="bg_1", filter="GET")
        return reply("done")

    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=SANDBOX)
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "go")
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    events = json_lines(proc.stdout)
    told = [t for r in server.requests for t in user_texts(r) + tool_texts(r)
            if "listening on" in t]
    assert told and "bg_1" in told[0] and "listening on 127.0.0.1:8642" in told[0], told
    assert logged in state["output"], state  # the server's log line, kept by the filter
    listing = tool_texts(server.requests[-1])[-1]
    assert listing.startswith("bg_1  running") and "http.server" in listing
    # front ends that follow the output got some of it (the deltas are a throttled view,
    # announced a moment after the output: the GET's line itself may still be in flight)
    followed = "".join(e["text"] for e in events if e["type"] == "process_output_delta")
    assert "Serving HTTP on 127.0.0.1 port 8642" in followed
    assert exits(events)[0]["state"] == "killed"  # the run's end stopped it
    assert events[-1]["background"][0]["state"] == "killed"
    assert await settled_running(marker) == []  # a leaked one stays; one exiting goes


async def test_close_agent_kills_the_subagents_processes(workspace, home, configure):
    from nyzhi.testing.fake_llm import PerAgent

    marker = f"nyzbg-close-{os.getpid()}-{workspace.name}"
    child: list[str] = []

    def wait_child(req):
        child[:] = [json.loads(t)["agent_id"] for t in req.tool_results()]
        return reply(tool_calls=[tool_call("wait", {"ids": child, "timeout_ms": 60000})])

    agents = PerAgent({
        "MAIN": [call("spawn_agent", message="WORKER start it"), wait_child,
                 lambda _r: call("close_agent", id=child[0]), reply("all done")],
        "WORKER": [bg(f"bash -c 'exec -a {marker} sleep 300'", yield_ms=0), reply("started")],
    })
    async with open_fake_llm(script=agents) as server:
        configure(workspace, server.url_for("openai"), extra=SANDBOX)
        proc = await run_nyz(workspace, home, "run", "--output-format", "stream-json", "MAIN go")
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    events = json_lines(proc.stdout)
    [start] = starts(events)
    assert start["agent"] == child[0] != "/agents/main"
    kinds = [(e["type"], e.get("name")) for e in events]
    close_done = kinds.index(("tool_done", "close_agent"))
    exit_at = next(i for i, e in enumerate(events) if e["type"] == "process_exit")
    assert exit_at < close_done  # killed by the close, not by the run's end
    assert events[exit_at]["state"] == "killed" and events[exit_at]["agent"] == child[0]
    assert await settled_running(marker) == []  # a leaked one stays; one exiting goes


async def test_kill_9_of_nyz_kills_the_process_and_what_it_detached(workspace, home, configure):
    from nyzhi.testing.fake_llm import hang

    marker = f"nyzbg-k9-{os.getpid()}-{workspace.name}"
    # a plain child, and one that double-forks into its own session (setsid) to escape
    command = (f"(setsid bash -c 'exec -a {marker}-detached sleep 300' &); "
               f"until pgrep -f {marker}-detached >/dev/null; do sleep 0.05; done; "
               f"echo both-up; exec -a {marker}-main sleep 300")
    async with open_fake_llm(script=in_order([bg(f"bash -c \"{command}\"", yield_ms=5000),
                                              hang()])) as server:
        configure(workspace, server.url_for("openai"), extra=SANDBOX)
        proc = await trio.lowlevel.open_process(
            [*NYZ, "run", "--output-format", "stream-json", "go"], cwd=workspace,
            env=nyz_env(home), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            request = await server.wait_for_requests(2)  # the start's result is back
            assert "both-up" in tool_texts(request)[0]  # the detached one is running
            pids = running_with(marker)  # bwrap, the shell, the sleep and the detached sleep
            assert {f"{marker}-detached", f"{marker}-main"} <= set(argv0s(pids))
            fds = [os.pidfd_open(pid) for pid in pids]
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            with trio.fail_after(30):
                for fd in fds:  # readable once the process has exited
                    await trio.lowlevel.wait_readable(fd)
            for fd in fds:
                os.close(fd)
        finally:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
            await proc.stdout.aclose()
    assert await settled_running(marker) == []  # a leaked one stays; one exiting goes


async def test_kill_9_of_nyz_kills_an_unsandboxed_background_process_too(
        workspace, home, configure):
    from nyzhi.testing.fake_llm import hang

    marker = f"nyzbg-k9full-{os.getpid()}-{workspace.name}"
    full = '[agent.trust]\nmode = "full"\n[agent.sandbox]\nlevel = "full-access"\n'
    async with open_fake_llm(script=in_order([bg(f"exec -a {marker} sleep 300", yield_ms=0),
                                              hang()])) as server:
        configure(workspace, server.url_for("openai"), extra=full)
        proc = await trio.lowlevel.open_process(
            [*NYZ, "run", "--output-format", "stream-json", "go"], cwd=workspace,
            env=nyz_env(home), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            await server.wait_for_requests(2)
            pids = await started_running(marker)
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            await wait_gone(pids, timeout=30)  # through pidfds
        finally:
            if proc.returncode is None:
                proc.kill()
            await proc.wait()
            await proc.stdout.aclose()
    assert await settled_running(marker) == []  # a leaked one stays; one exiting goes


async def test_a_denied_background_command_is_refused_and_never_runs(workspace, home, configure):
    extra = ('[agent.trust]\nmode = "full"\ndeny_commands = ["rm -rf *"]\n'
             '[agent.sandbox]\nlevel = "workspace-write"\n')
    steps = [bg(f"rm -rf {workspace}/keep"), reply("done")]
    (workspace / "keep").mkdir()
    events, server = await run(workspace, home, configure, steps, extra=extra)
    [refused] = tool_texts(server.requests[-1])
    assert "denied" in refused.lower() or "refused" in refused.lower(), refused
    assert not starts(events) and (workspace / "keep").is_dir()


async def test_output_is_redacted_to_the_model_and_on_disk(workspace, home, configure):
    secret = "sk-background-e2e-0123456789abcdef"
    extra = SANDBOX + '[shell.env]\ninherit = "all"\nexclude = []\n'
    steps = [bg('for i in 1 2 3; do echo "token=$OPENAI_API_KEY"; done; echo ended', yield_ms=5000),
             reply("done")]
    async with open_fake_llm(script=in_order(steps)) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        env = {**nyz_env(home), "OPENAI_API_KEY": secret}
        proc = await trio.run_process([*NYZ, "run", "--output-format", "stream-json", "go"],
                                      cwd=workspace, env=env, capture_stdout=True,
                                      capture_stderr=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    [out] = tool_texts(server.requests[-1])
    assert "token=[redacted: OPENAI_API_KEY]" in out and secret not in out
    assert secret not in proc.stdout.decode()
    meta = next(e for e in json_lines(proc.stdout) if e["type"] == "tool_done")["metadata"]
    on_disk, mode = log_of(meta["log_path"])
    assert on_disk.count("token=[redacted: OPENAI_API_KEY]") == 3 and secret not in on_disk
    assert "ended" in on_disk and mode == 0o600


async def test_the_process_past_the_limit_is_refused_naming_it(workspace, home, configure):
    extra = SANDBOX + "[agent.background]\nmax_processes = 2\n"
    steps = [bg("sleep 300", yield_ms=0), bg("sleep 300", yield_ms=0),
             bg("sleep 300", yield_ms=0), reply("done")]
    events, server = await run(workspace, home, configure, steps, extra=extra)
    third = tool_texts(server.requests[-1])[2]
    assert "[agent.background] max_processes = 2" in third and third.startswith("refused"), third
    assert len(starts(events)) == 2
