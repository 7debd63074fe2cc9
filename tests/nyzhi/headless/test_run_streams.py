"""Which stream gets what from ``nyz run`` (issue 33 item 6): the answer goes to stdout only;
progress (tool calls, notices) to stderr. A live echo of the answer on stderr is for a person
watching a terminal while stdout goes to a file; with stderr in a file or pipe too, it would
put the answer there twice (``> out 2>&1``)."""

from __future__ import annotations

import shlex

import pytest

from nyzhi.testing.cli import NYZ, nyz_env
from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call
from nyzhi.testing.tmux import TmuxPane

ANSWER = "The answer is forty-two, said once."


def _script():
    return [reply(tool_calls=[tool_call("list_dir", {"path": "."})]), reply(ANSWER)]


async def test_with_both_streams_in_files_the_answer_is_only_in_stdout(
    workspace, home, configure
):
    import subprocess

    import trio

    out, err = workspace.parent / "out", workspace.parent / "err"
    async with open_fake_llm(script=_script()) as server:
        configure(workspace, server.url_for("openai"))
        with out.open("wb") as o, err.open("wb") as e:
            proc = await trio.run_process([*NYZ, "run", "list and answer"], cwd=workspace,
                                          env=nyz_env(home), stdout=o, stderr=e, check=False,
                                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, err.read_text()
    assert out.read_text() == ANSWER + "\n"
    progress = err.read_text()
    assert "[tool: list_dir]" in progress and "list_dir done" in progress  # progress stays
    assert "forty-two" not in progress  # the answer is not repeated there
    # 2>&1: one copy of the answer
    both = workspace.parent / "both"
    async with open_fake_llm(script=_script()) as server:
        configure(workspace, server.url_for("openai"))
        with both.open("wb") as b:
            await trio.run_process([*NYZ, "run", "list and answer"], cwd=workspace,
                                   env=nyz_env(home), stdout=b, stderr=b, check=False,
                                   stdin=subprocess.DEVNULL)
    assert both.read_text().count("forty-two") == 1


@pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")
async def test_on_a_terminal_the_answer_still_shows_live_while_stdout_goes_to_a_file(
    workspace, home, configure
):
    out = workspace.parent / "out"
    async with open_fake_llm(script=_script()) as server:
        configure(workspace, server.url_for("openai"))
        pane = TmuxPane(workspace.parent / "tmux-streams.sock")
        command = f"{shlex.join([*NYZ, 'run', 'list and answer'])} > {shlex.quote(str(out))}"
        await pane.start(["sh", "-c", command], cwd=workspace, env=nyz_env(home))
        try:
            assert await pane.wait_exit() == 0
            screen = await pane.history()
        finally:
            pane.kill()
    assert "[tool: list_dir]" in screen and "forty-two" in screen  # stderr, the terminal
    assert out.read_text() == ANSWER + "\n"


@pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")
async def test_on_a_terminal_a_spinner_shows_while_the_model_is_waited_on(
    workspace, home, configure
):
    """Issue 54: ``nyz run`` on a slow model showed nothing for 30-60 s. On a terminal's stderr
    a spinner says it waits for the model, until the answer comes; the answer is untouched."""
    import trio

    from nyzhi.headless.render import SPINNER

    released = trio.Event()

    async def script(request):
        await released.wait()  # the model answers once the test has seen the spinner
        return reply(ANSWER)

    out, err = workspace.parent / "out", workspace.parent / "err"
    async with open_fake_llm(script=script) as server:
        configure(workspace, server.url_for("openai"))
        pane = TmuxPane(workspace.parent / "tmux-spinner.sock")
        command = f"{shlex.join([*NYZ, 'run', 'answer'])} > {shlex.quote(str(out))}"
        await pane.start(["sh", "-c", command], cwd=workspace, env=nyz_env(home))
        try:
            await pane.wait_for("waiting for the model", limit_s=60)
            released.set()
            assert await pane.wait_exit(limit_s=60) == 0
        finally:
            pane.kill()
        assert out.read_text() == ANSWER + "\n"
        # stderr into a file: no spinner there
        released = trio.Event()
        released.set()
        with err.open("wb") as e:
            proc = await trio.run_process([*NYZ, "run", "answer"], cwd=workspace,
                                          env=nyz_env(home), capture_stdout=True, stderr=e,
                                          check=False)
    assert proc.returncode == 0, err.read_text()
    assert not any(frame in err.read_text() for frame in SPINNER)
    assert "waiting for the model" not in err.read_text()
