"""The hook events added to what fires: post_tool_use_failure, permission_request,
notification, compact_context and config_change, each from the real runtime or the line chat;
and the documented event list walked: every event the docs name is accepted and runs, any
other is refused with the list, never both."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import trio

from nyzhi.config.loader import load_config
from nyzhi.core.loop.agent import UserInput
from nyzhi.core.runtime.assembly import build_hooks
from nyzhi.core.runtime.runtime import RuntimeOptions, open_runtime
from nyzhi.testing.cli import read_until, start_chat
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

DOCS = Path(__file__).resolve().parents[4] / "docs" / "config.md"


def documented_events() -> list[str]:
    """The events docs/config.md lists in its ``[[agent.hooks]]`` example's comment."""
    text = DOCS.read_text()
    block = text.split('event = "after_edit"', 1)[1].split("command =", 1)[0]
    return re.findall(r"[a-z_]+", block.replace("#", " "))


def hook(event: str, command: str, **keys: str) -> str:
    extra = "".join(f'{k} = "{v}"\n' for k, v in keys.items())
    return f'[[agent.hooks]]\nevent = "{event}"\ncommand = {json.dumps(command)}\n{extra}\n'


def log_stdin(log: Path) -> str:
    """A hook command that appends its payload (one JSON line) to ``log``."""
    return f"(cat; echo) >> {log}"


def payloads(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


async def turn(rt, prompt: str):
    handle = await rt.submit(prompt) if hasattr(rt, "submit") else await rt.ask(UserInput(prompt))
    return await handle.wait()


# ---- the documented list -----------------------------------------------------------------


def test_docs_list_every_event_and_each_is_accepted_and_runs(workspace, tmp_path):
    from nyzhi.config.schema_agent import HOOK_EVENT_ALIASES, HOOK_EVENTS

    documented = documented_events()
    assert set(documented) == set(HOOK_EVENTS) | set(HOOK_EVENT_ALIASES)
    log = tmp_path / "ran.log"
    (workspace / ".nyzhi" / "config.toml").write_text("".join(
        hook(e, f"echo {e} >> {log}") for e in documented))
    loaded = load_config(workspace, env={"HOME": str(tmp_path / "home")})
    runner, _notes = build_hooks(loaded.config, _Ws(workspace), workspace, claude=False)

    async def fire_all() -> None:
        for event in documented:
            outcome = await runner.fire(HOOK_EVENT_ALIASES.get(event, event), {})
            assert outcome.warnings == (), (event, outcome.warnings)

    trio.run(fire_all)
    ran = log.read_text().split()
    # every documented event ran its hook (the alias runs as subagent_stop: both hooks run)
    assert set(ran) == set(documented)


@pytest.mark.parametrize("event", ["on_lunch", "PreToolUse", "post_tool_use_failures", ""])
def test_an_event_outside_the_list_is_refused_with_the_list(workspace, tmp_path, event):
    from nyzhi.config.errors import ConfigError

    (workspace / ".nyzhi" / "config.toml").write_text(hook(event, "true"))
    with pytest.raises(ConfigError) as info:
        load_config(workspace, env={"HOME": str(tmp_path / "home")})
    message = str(info.value)
    assert "agent.hooks[0].event" in message and "config.toml" in message
    for name in ("post_tool_use_failure", "permission_request", "config_change"):
        assert name in message


class _Ws:
    def __init__(self, root: Path) -> None:
        self.root = root


# ---- each new event, fired by the runtime ------------------------------------------------------


async def test_post_tool_use_failure_fires_for_a_failed_call_only(workspace, configure, tmp_path):
    log = tmp_path / "fail.log"
    (workspace / "here.txt").write_text("present\n")
    script = [
        reply(tool_calls=[tool_call("read", {"file_path": "missing.txt"}, id="c1"),
                          tool_call("read", {"file_path": "here.txt"}, id="c2")]),
        reply("done"),
    ]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"),
                  extra=hook("post_tool_use_failure", log_stdin(log)))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            assert (await turn(rt, "read two files")).text == "done"
    [body] = payloads(log)
    assert body["hook_event_name"] == "post_tool_use_failure"
    assert body["tool_name"] == "read" and body["call_id"] == "c1"
    assert body["tool_input"] == {"file_path": "missing.txt"}
    assert body["success"] is False and "missing.txt" in body["error"]


DENY = "echo 'no writes on fridays' >&2; exit 2"
ALLOW = """echo '{"decision": "approve"}'"""
CLAUDE_DENY = ("""echo '{"hookSpecificOutput": {"hookEventName": "PermissionRequest", """
               """"decision": {"behavior": "deny", "message": "claude says no"}}}'""")


@pytest.mark.parametrize(("command", "written", "said"), [
    (DENY, False, "no writes on fridays"),
    (CLAUDE_DENY, False, "claude says no"),
    (ALLOW, True, None),
])
async def test_permission_request_decides_a_headless_approval(
        workspace, configure, tmp_path, command, written, said):
    log = tmp_path / "perm.log"
    script = [reply(tool_calls=[tool_call("write", {"file_path": "note.txt", "content": "hi"})]),
              reply("ok")]
    extra = hook("permission_request", f"(cat; echo) >> {log}; {command}", matcher="write")
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:  # headless, trust off
            await turn(rt, "write a note")
    assert (workspace / "note.txt").exists() is written
    result = server.requests[1].tool_results()[0]
    if said is not None:
        assert "permission_request hook denied `write`" in result and said in result
    [body] = payloads(log)
    assert body["tool_name"] == "write" and body["tool_input"]["file_path"] == "note.txt"
    assert body["agent"] == "/agents/main"


async def test_a_hook_cannot_allow_a_change_to_protected_configuration(
        workspace, configure, tmp_path):
    """Headless, an allowing hook does not let the agent write .mcp.json, git hooks or our
    config: those need a person."""
    targets = [".mcp.json", ".git/hooks/pre-commit", ".nyzhi/config.local.toml",
               ".claude/settings.json"]
    script = [reply(tool_calls=[tool_call("write", {"file_path": t, "content": "x"}, id=f"c{i}")
                                for i, t in enumerate(targets)]),
              reply("ok")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=hook("permission_request", ALLOW))
        async with open_runtime(RuntimeOptions(cwd=workspace, trust="autoedit")) as rt:
            await turn(rt, "configure things")
    for target, result in zip(targets, server.requests[1].tool_results(), strict=True):
        assert not (workspace / target).exists() or (workspace / target).read_text() != "x", target
        assert "approval" in result, (target, result)


async def test_an_allowing_hook_still_leaves_protected_files_to_the_person(
        workspace, home, configure, tmp_path):
    """In the line chat, an allowing hook does not skip the question for .mcp.json; the
    notification hook fires while the approval waits."""
    fifo = tmp_path / "notify.fifo"
    os.mkfifo(fifo)
    script = [reply(tool_calls=[tool_call("write", {"file_path": ".mcp.json", "content": "{}"})]),
              reply("declined, fine")]
    extra = hook("permission_request", ALLOW) + hook("notification", f"cat > {fifo}")
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc, out = await start_chat(workspace, home)
        await proc.stdin.send_all(b"add an mcp server\n")
        await read_until(proc.stdout, out, b"[y/a/N]")
        # the notification hook runs while the approval waits
        with trio.fail_after(30):
            body = json.loads(await trio.to_thread.run_sync(
                fifo.read_bytes, abandon_on_cancel=True))
        assert body["notification_type"] == "permission_prompt"
        assert body["hook_event_name"] == "notification"
        assert "write" in body["message"] and "approval" in body["message"]
        await proc.stdin.send_all(b"n\n")
        await read_until(proc.stdout, out, b"declined, fine")
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(20):
            assert await proc.wait() == 0
    assert not (workspace / ".mcp.json").exists()


async def test_an_allowing_hook_approves_an_ordinary_call_in_the_chat(
        workspace, home, configure, tmp_path):
    log = tmp_path / "notify.log"
    script = [reply(tool_calls=[tool_call("write", {"file_path": "note.txt", "content": "hi"})]),
              reply("Wrote it")]
    extra = hook("permission_request", ALLOW) + hook("notification", log_stdin(log))
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"), extra=extra)
        proc, out = await start_chat(workspace, home)
        await proc.stdin.send_all(b"write a note\n")
        await read_until(proc.stdout, out, b"Wrote it\n> ")
        assert b"[y/a/N]" not in out  # nobody was asked
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(20):
            assert await proc.wait() == 0
    assert (workspace / "note.txt").read_text() == "hi"
    assert payloads(log) == []  # nothing waited for a person


async def test_compact_context_fires_and_adds_to_the_summary_instructions(
        workspace, configure, tmp_path):
    log = tmp_path / "compact.log"
    command = f"(cat; echo) >> {log}; echo 'Keep the list of ports verbatim.'"
    script = [*(reply(f"a{i}") for i in range(4)), reply("THE SUMMARY")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"),
                  extra=hook("compact_context", command, matcher="manual"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            for i in range(4):
                await turn(rt, f"prompt {i}")
            await rt.compact()
    [body] = payloads(log)
    assert body["trigger"] == "manual" and body["reason"] == "manual"
    assert body["before_tokens"] > 0
    summary_request = server.requests[4].last_user_text()
    assert "Keep the list of ports verbatim." in summary_request


async def test_a_compact_context_matcher_filters_the_trigger(workspace, configure, tmp_path):
    log = tmp_path / "compact.log"
    script = [*(reply(f"a{i}") for i in range(4)), reply("THE SUMMARY")]
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"),
                  extra=hook("compact_context", log_stdin(log), matcher="auto"))
        async with open_runtime(RuntimeOptions(cwd=workspace)) as rt:
            for i in range(4):
                await turn(rt, f"prompt {i}")
            await rt.compact()
    assert payloads(log) == []  # a manual compaction does not match "auto"
    assert len(server.requests) == 5  # it did compact


async def test_config_change_fires_for_settings_changed_in_the_chat(
        workspace, home, configure, tmp_path):
    log = tmp_path / "config.log"
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"),
                  extra=hook("config_change", log_stdin(log)))
        proc, out = await start_chat(workspace, home)
        for line, seen in ((b"/trust autoedit\n", b"trust: autoedit"),
                           (b"/trust autoedit\n", b"trust: autoedit"),  # no change: no hook
                           (b"/model other-model\n", b"other-model"),
                           (b"/plan\n", b"plan mode on"),
                           (b"/thinking high\n", b"high")):
            del out[:]
            await proc.stdin.send_all(line)
            await read_until(proc.stdout, out, seen)
        await proc.stdin.send_all(b"/exit\n")
        with trio.fail_after(20):
            assert await proc.wait() == 0
    changes = {(b["key"], str(b["previous"]), str(b["value"])) for b in payloads(log)}
    assert changes == {
        ("trust", "off", "autoedit"), ("model", "fake-model-1", "other-model"),
        ("plan_mode", "False", "True"), ("thinking", "None", "high"),
    }
    assert all(b["source"] == "command" and b["hook_event_name"] == "config_change"
               for b in payloads(log))
