"""Issue 54, the input side: Ctrl-G and /editor write the prompt in $EDITOR, the `/` command
menu, and the pickers (/resume). In tmux at 80x24, against the fake LLM."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from nyzhi.testing.fake_llm import open_fake_llm, reply
from nyzhi.testing.tmux import INPUT_READY, TmuxPane, open_console, say

pytestmark = pytest.mark.skipif(not TmuxPane.available(), reason="tmux is not installed")


def _editor_script(tmp: Path, prompt: str) -> Path:
    """An $EDITOR that records the draft it was given and the file's mode, then saves
    ``prompt`` (empty: saves an empty file)."""
    script = tmp / "fake-editor.sh"
    log = tmp / "editor.log"
    script.write_text(
        "#!/bin/sh\n"
        f'stat -c "%a" "$1" >> {log}\n'
        f'stat -c "%a" "$(dirname "$1")" >> {log}\n'
        f'cat "$1" >> {log}\n'
        f"echo >> {log}\n"
        f"printf '%s\\n' '{prompt}' > \"$1\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


async def test_ctrl_g_sends_the_prompt_written_in_the_editor(workspace, home, configure,
                                                             tmp_path):
    editor = _editor_script(tmp_path, "written in the editor")
    async with open_fake_llm(script=[reply("got it from the editor"),
                                     reply("second")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home,
                                env={"EDITOR": str(editor), "VISUAL": ""}) as pane:
            await pane.wait_for(INPUT_READY)
            await pane.type("a draft")
            await pane.wait_for("› a draft")
            await pane.keys("C-g")
            await pane.wait_for("got it from the editor", limit_s=30)
            # the screen came back whole and keeps its keys: /editor does the same
            await say(pane, "/editor")
            await pane.wait_for("second", limit_s=30)
    assert server.requests[0].last_user_text().strip() == "written in the editor"
    assert len(server.requests) == 2
    log = (tmp_path / "editor.log").read_text().splitlines()
    assert log[0] == "600" and log[1] == "700"  # private to the user
    assert log[2] == "a draft"  # the input's draft was given to the editor
    assert log[3:6] == ["600", "700", ""]  # /editor: the same, on an empty draft


async def test_an_empty_save_sends_nothing(workspace, home, configure, tmp_path):
    editor = _editor_script(tmp_path, "")
    async with open_fake_llm(script=[reply("the model answered")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home,
                                env={"EDITOR": str(editor), "VISUAL": ""}) as pane:
            await pane.wait_for(INPUT_READY)
            await pane.keys("C-g")
            await pane.wait_for("nothing sent")
            await say(pane, "typed by hand")
            await pane.wait_for("the model answered", limit_s=30)
    assert [r.last_user_text().strip() for r in server.requests] == ["typed by hand"]


async def test_slash_shows_the_command_menu_filtered_as_typed(workspace, home, configure):
    """`/` on an empty input lists the commands with their help (the one table); a letter
    filters it; ↓ and Tab put the chosen one in the input; Esc closes the menu; `@` lists the
    workspace's files."""
    (workspace / "src").mkdir()
    (workspace / "src" / "widget_factory.py").write_text("x = 1\n")
    async with open_fake_llm(script=[reply("ok")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await pane.type("/")
            screen = await pane.wait_for("show or hide the agent tree")  # /agents's help
            assert "/autopilot " in screen
            await pane.type("s")
            screen = await pane.wait_for(lambda s: "/autopilot" not in s and "/status" in s)
            assert "/sandbox" in screen and "/sessions" in screen
            await pane.type("t")  # /st: /stats and /status
            await pane.wait_for(lambda s: "/sandbox" not in s and "/stats" in s)
            await pane.keys("Down", "Tab")
            await pane.wait_for(lambda s: "› /status" in s and "/stats" not in s)  # closed
            await pane.keys("C-u")
            await pane.type("/he")
            await pane.wait_for("list the commands and keys")
            await pane.keys("Escape")
            await pane.wait_for(lambda s: "list the commands and keys" not in s)
            await pane.keys("C-u")
            await pane.type("look at @widget")
            await pane.wait_for("src/widget_factory.py")
            await pane.keys("Tab")
            await pane.wait_for(lambda s: "› look at @src/widget_factory.py" in s
                                and "\n src/widget_factory.py" not in s)


async def test_resume_without_an_argument_picks_a_session_with_the_arrows(
        workspace, home, configure):
    """`/resume` opens a picker of the sessions (titles, ages); ↓ and Enter switch the
    console to the chosen one, whose thread the next request carries."""
    from nyzhi.testing.cli import run_nyz

    async with open_fake_llm(script=[reply("noted APPLE"), reply("noted BANANA"),
                                     reply("it was APPLE")]) as server:
        configure(workspace, server.url_for("openai"))
        for prompt in ("remember APPLE", "remember BANANA"):  # two sessions, BANANA newest
            done = await run_nyz(workspace, home, "run", prompt)
            assert done.returncode == 0, done.stderr.decode()
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "/resume")
            screen = await pane.wait_for("Resume a session")
            assert "remember BANANA" in screen and "remember APPLE" in screen
            assert "ago" in screen or "just now" in screen  # each session's age
            await pane.keys("Down")  # from BANANA (the newest) to APPLE
            await pane.keys("Enter")
            screen = await pane.wait_for("resumed session")
            assert "› remember APPLE" in screen
            await say(pane, "which fruit?")
            await pane.wait_for("it was APPLE")
    last = server.requests[-1]
    assert ("user", "remember APPLE") in last.transcript()
    assert ("user", "remember BANANA") not in last.transcript()


async def test_the_picker_filters_as_typed_and_theme_picks_one(workspace, home, configure):
    async with open_fake_llm(script=[reply("ok")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await say(pane, "/theme")
            screen = await pane.wait_for("filter:")
            assert "dark" in screen and "light" in screen
            await pane.type("lig")
            await pane.wait_for(lambda s: "filter: lig" in s and " dark " not in s)
            await pane.keys("Enter")
            await pane.wait_for("theme: light")


def _fake_tool(bin_dir: Path, name: str, data: Path) -> None:
    tool = bin_dir / name
    tool.write_text(f'#!/bin/sh\necho "$@" > {bin_dir}/{name}.args\ncat {data}\n')
    tool.chmod(0o755)


async def test_ctrl_v_pastes_the_clipboards_image_into_the_next_prompt(
        workspace, home, configure, tmp_path):
    """Ctrl-V reads the clipboard's image with xclip (here a stand-in printing a PNG) and
    sends it with the next prompt, as `-i` does."""
    import io
    import os

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (4, 3), "red").save(out, "PNG")
    (tmp_path / "shot.png").write_bytes(out.getvalue())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake_tool(bin_dir, "xclip", tmp_path / "shot.png")
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "WAYLAND_DISPLAY": ""}
    async with open_fake_llm(script=[reply("a red picture")]) as server:
        configure(workspace, server.url_for("openai"))
        async with open_console(workspace, home, env=env) as pane:
            await pane.wait_for(INPUT_READY)
            await pane.keys("C-v")
            await pane.wait_for("› [image 1]")
            await say(pane, "what is this?")
            await pane.wait_for("a red picture", limit_s=30)
    assert "-selection clipboard" in (bin_dir / "xclip.args").read_text()
    body = next(r for r in server.requests if r.wire is not None).json
    urls = [part["image_url"]["url"] for msg in body["messages"]
            for part in (msg["content"] if isinstance(msg["content"], list) else ())
            if part.get("type") == "image_url"]
    assert len(urls) == 1 and urls[0].startswith("data:image/png;base64,")


def test_without_wl_paste_or_xclip_ctrl_v_says_what_to_install():
    from nyzhi.tui.clipboard import WAYLAND, X11, ClipboardError, paste_command

    with pytest.raises(ClipboardError, match="install wl-clipboard .* or xclip"):
        paste_command({}, which=lambda _name: None)
    assert paste_command({}, which=lambda n: f"/usr/bin/{n}") == X11
    assert paste_command({"WAYLAND_DISPLAY": "wayland-0"}, which=lambda n: f"/bin/{n}") == WAYLAND
    assert paste_command({}, which=lambda n: "/bin/wl-paste" if n == "wl-paste" else None) \
        == WAYLAND


async def test_vi_mode_edits_in_normal_mode(workspace, home, configure):
    """`[tui] input_mode = "vi"`: Esc leaves insert mode (the turn is not cancelled),
    `0` `x` `A` and `dd` edit as in vi; Enter sends."""
    async with open_fake_llm(script=[reply("vi answer")]) as server:
        configure(workspace, server.url_for("openai"), extra='\n[tui]\ninput_mode = "vi"\n')
        async with open_console(workspace, home) as pane:
            await pane.wait_for(INPUT_READY)
            await pane.type("throw away")
            await pane.keys("Escape")
            await pane.wait_for("[N] › throw away")
            await pane.type("dd")
            await pane.wait_for(lambda s: "throw away" not in s)
            await pane.type("i")
            await pane.type("Xhello")
            await pane.keys("Escape")
            await pane.wait_for("[N] › Xhello")
            await pane.type("0x")  # the X goes
            await pane.type("A")
            await pane.type(" vi")
            await pane.wait_for("› hello vi")
            await pane.keys("Enter")
            await pane.wait_for("vi answer", limit_s=30)
    assert next(r for r in server.requests if r.wire is not None).last_user_text().strip() \
        == "hello vi"


def test_vi_escape_typed_with_the_next_key_is_both():
    """Esc and a key in one read arrive as "meta KEY": normal mode, then the key."""
    from nyzhi.tui.history import History
    from nyzhi.tui.widgets import InputBox

    box = InputBox(History(), lambda _t: None, lambda _t: None)
    box.set_vi(True)
    box.insert_text("Xab")
    box.keypress((40,), "meta 0")
    box.keypress((40,), "x")
    assert (box.edit_text, box.normal) == ("ab", True)
