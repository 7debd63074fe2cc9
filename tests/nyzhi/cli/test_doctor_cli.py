"""``nyz doctor`` and ``/doctor`` (issue 37): each check is real (a sandboxed ``true`` through
bubblewrap, an authenticated model-list call to the fake LLM), a failure prints its line and
its fix and makes the exit status 1."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import trio

from nyzhi.testing.cli import NYZ, nyz_env, run_nyz
from nyzhi.testing.fake_llm import open_fake_llm, reply


async def doctor(workspace: Path, home: Path, *args: str,
                 path: str | None = None) -> subprocess.CompletedProcess[bytes]:
    env = nyz_env(home)
    if path is not None:
        env["PATH"] = path
    with trio.fail_after(60):
        return await trio.run_process([*NYZ, "doctor", *args], cwd=workspace, env=env,
                                      capture_stdout=True, capture_stderr=True, check=False)


def line(out: bytes, name: str) -> str:
    """The check's line, with its fix line when it has one."""
    lines = out.decode().splitlines()
    for i, text in enumerate(lines):
        if text[6:].startswith(name + " "):
            fix = lines[i + 1] if i + 1 < len(lines) and lines[i + 1].startswith("      fix:") \
                else ""
            return f"{text}\n{fix}"
    raise AssertionError(f"no {name!r} line in:\n{out.decode()}")


def bin_without_bwrap(tmp_path: Path) -> str:
    """A PATH with git and rg but no bwrap."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("git", "rg"):
        found = shutil.which(tool)
        assert found, f"{tool} is needed for this test"
        (bindir / tool).symlink_to(found)
    return str(bindir)


async def test_all_good_with_the_fake_provider_online(workspace, home, configure):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await doctor(workspace, home, "--online")
    out = proc.stdout.decode()
    assert proc.returncode == 0, out + proc.stderr.decode()
    assert line(proc.stdout, "provider fake").startswith(
        "ok    provider fake          key from [provider.fake] api_key")
    assert "authenticated call ok" in line(proc.stdout, "provider fake")
    [listing] = server.info_requests
    assert listing.path.endswith("/models")
    assert listing.headers["authorization"] == "Bearer sk-test-key"
    assert line(proc.stdout, "sandbox (bwrap)").startswith("ok    sandbox (bwrap)        a sandbox")
    warned = sum(text.startswith("warn  ") for text in out.splitlines())
    last = out.rstrip().splitlines()[-1]  # never "all checks passed" beside warnings
    assert last == (f"passed with {warned} warning{'s' * (warned != 1)}" if warned
                    else "all checks passed"), out


async def test_bwrap_missing_fails_with_the_install_hint(workspace, home, configure, tmp_path):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await doctor(workspace, home, path=bin_without_bwrap(tmp_path))
    assert proc.returncode == 1
    text = line(proc.stdout, "sandbox (bwrap)")
    assert text.startswith("FAIL  sandbox (bwrap)        bwrap not found on PATH")
    assert "fix: Install bubblewrap" in text
    last = proc.stdout.decode().rstrip().splitlines()[-1]
    assert last == "1 check failed" or last.startswith("1 check failed, "), last


async def test_bwrap_missing_is_a_warning_at_full_access(workspace, home, configure, tmp_path):
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"),
                  extra='[agent.sandbox]\nlevel = "full-access"\n')
        proc = await doctor(workspace, home, path=bin_without_bwrap(tmp_path))
    assert proc.returncode == 0, proc.stdout.decode()
    assert line(proc.stdout, "sandbox (bwrap)").startswith("warn  sandbox (bwrap)")
    warned = sum(text.startswith("warn  ") for text in proc.stdout.decode().splitlines())
    last = proc.stdout.decode().rstrip().splitlines()[-1]
    assert last == f"passed with {warned} warning{'s' * (warned != 1)}", last  # not "all passed"


async def test_a_provider_without_its_key(workspace, home):
    (workspace / ".nyzhi" / "config.toml").write_text('[provider]\ndefault = "anthropic"\n')
    proc = await doctor(workspace, home)
    assert proc.returncode == 1
    text = line(proc.stdout, "provider anthropic")
    assert text.startswith("FAIL  provider anthropic")
    assert "no API key for provider 'anthropic': set ANTHROPIC_API_KEY" in text


async def test_an_online_call_that_fails(workspace, home, configure):
    with trio.socket.socket() as sock:  # a port nothing listens on
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    configure(workspace, f"http://127.0.0.1:{port}/v1")
    proc = await doctor(workspace, home, "--online")
    assert proc.returncode == 1
    text = line(proc.stdout, "provider fake")
    assert text.startswith("FAIL  provider fake          key from [provider.fake] api_key · "
                           "the API refused or failed")
    assert "fix: check the key (`nyz whoami`)" in text
    # and without --online nothing is called, so it passes
    assert (await doctor(workspace, home)).returncode == 0


async def test_loose_permissions(workspace, home, configure):
    configure(workspace, "http://127.0.0.1:9/v1")
    data = home / ".local/share/nyzhi"
    (data / "sessions").mkdir(parents=True, mode=0o755)
    os.chmod(data / "sessions", 0o755)
    (data / "auth.json").write_text("{}")
    os.chmod(data / "auth.json", 0o644)
    proc = await doctor(workspace, home)
    assert proc.returncode == 1
    auth = line(proc.stdout, "auth.json")
    assert auth.startswith("FAIL  auth.json") and "(mode 644)" in auth
    assert f"fix: chmod 600 {data / 'auth.json'}" in auth
    assert f"fix: chmod 700 {data / 'sessions'}" in line(proc.stdout, "sessions dir")
    os.chmod(data / "auth.json", 0o600)
    os.chmod(data / "sessions", 0o700)
    assert (await doctor(workspace, home)).returncode == 0


async def test_slash_doctor_in_the_line_chat(workspace, home, configure):
    async with open_fake_llm(script=[reply("unused")]) as server:
        configure(workspace, server.url_for("openai"))
        with trio.fail_after(60):
            proc = await run_nyz(workspace, home, "chat", "--plain",
                                 stdin=b"/doctor\n/doctor bogus\n/exit\n")
    out = proc.stdout.decode() + proc.stderr.decode()
    assert proc.returncode == 0, out
    assert "ok    sandbox (bwrap)        a sandboxed `true` ran" in out
    assert "provider fake" in out and "usage: /doctor [online]" in out
    assert not [r for r in server.requests if r.wire is not None]  # nothing asked of the model


def test_doctor_is_in_the_command_registry():
    from nyzhi.core.runtime.commands import COMMANDS

    assert "doctor" in COMMANDS and not COMMANDS["doctor"].needs


async def test_web_search_and_browser_checks_say_how_to_fix(workspace, home, configure):
    """No [web_search]: a warning naming how to add a backend; a keyed backend without its key
    or SearXNG without its URL: a failure naming the key; a configured browser that is not
    there: a failure."""
    async with open_fake_llm(script=[]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await doctor(workspace, home)
        web = line(proc.stdout, "web_search")
        assert web.startswith("warn") and '[web_search] backend = "searxng"' in web
        configure(workspace, server.url_for("openai"),
                  extra='[web_search]\nbackend = "brave"\n')
        proc = await doctor(workspace, home)
        assert proc.returncode == 1
        web = line(proc.stdout, "web_search")
        assert web.startswith("FAIL") and "BRAVE_API_KEY" in web
        configure(workspace, server.url_for("openai"),
                  extra='[web_search]\nbackend = "searxng"\n'
                        '[browser]\nexecutable = "/nonexistent/chromium"\n')
        proc = await doctor(workspace, home)
        assert line(proc.stdout, "web_search").startswith("FAIL")
        assert "url" in line(proc.stdout, "web_search")
        browser = line(proc.stdout, "browser")
        assert browser.startswith("FAIL") and "/nonexistent/chromium" in browser
        configure(workspace, server.url_for("openai"),
                  extra='[web_search]\nbackend = "searxng"\nurl = "http://127.0.0.1:9"\n')
        proc = await doctor(workspace, home)
        assert line(proc.stdout, "web_search").startswith("ok    web_search")


async def test_a_language_server_on_path_that_does_not_run_is_a_warning(
        workspace, home, configure, tmp_path):
    """Issue 56: rust-analyzer as a rustup proxy without the component was reported ok. The
    server's version command is run: a proxy that fails is a warning with the fix; a server
    that answers is ok."""
    bindir = Path(bin_without_bwrap(tmp_path))
    proxy = bindir / "rust-analyzer"
    proxy.write_text("#!/bin/sh\necho \"error: Unknown binary 'rust-analyzer' in official "
                     "toolchain 'stable-x86_64-unknown-linux-gnu'.\" >&2\nexit 1\n")
    proxy.chmod(0o755)
    gopls = bindir / "gopls"
    gopls.write_text("#!/bin/sh\n[ \"$1\" = version ] && echo 'golang.org/x/tools/gopls v0.16'\n")
    gopls.chmod(0o755)
    async with open_fake_llm(script=[reply("x")]) as server:
        configure(workspace, server.url_for("openai"))
        proc = await doctor(workspace, home, path=f"{bindir}:/usr/bin:/bin")
    rust = line(proc.stdout, "lsp rust")
    assert rust.startswith("warn") and "does not run" in rust and "Unknown binary" in rust
    assert "fix: rustup component add rust-analyzer" in rust
    assert line(proc.stdout, "lsp go").startswith("ok    lsp go") and str(gopls) in proc.stdout.decode()


def test_a_servers_last_stderr_line_skips_its_backtrace() -> None:
    from nyzhi.core.runtime.server_supervision import last_error_line

    rust = ["thread 'main' panicked at src/main.rs:2:5:", "index out of bounds",
            "stack backtrace:", "   0: rust_begin_unwind", "             at /rustc/abc/std.rs:1",
            "note: run with `RUST_BACKTRACE=full` for a verbose backtrace."]
    python = ["Traceback (most recent call last):", '  File "/x/server.py", line 3, in <module>',
              "    main()", "ValueError: no workspace folder"]
    node = ["/x/server.js:10", "    throw new Error('tsserver not found');", "Error: tsserver not found",
            "    at Object.<anonymous> (/x/server.js:10:11)", "    at Module._compile (node:internal:1:1)",
            "", "Node.js v20.11.0"]
    go = ["panic: no go.mod", "", "goroutine 1 [running]:", "main.main()",
          "\t/x/main.go:3 +0x25", "exit status 2"]
    java = ["Exception in thread \"main\" java.lang.IllegalStateException: no JDK",
            "\tat Main.main(Main.java:3)", "\t... 4 more"]
    assert last_error_line(rust) == "index out of bounds"
    assert last_error_line(python) == "ValueError: no workspace folder"
    assert last_error_line(node) == "Error: tsserver not found"
    assert last_error_line(go) == "panic: no go.mod"
    assert last_error_line(java).endswith("IllegalStateException: no JDK")
    assert last_error_line(["plain failure"]) == "plain failure"
    assert last_error_line(["   0: only frames"]) == "0: only frames"


async def test_a_first_run_makes_the_data_and_state_dirs_owner_only(workspace, home, configure):
    """Issue 54: doctor warned that nyz's own data and state dirs were 755 right after a first
    run; they are created 0700 (sessions, credentials, logs), whatever the umask."""
    data, state = home / ".local" / "share" / "nyzhi", home / ".local" / "state" / "nyzhi"
    assert not data.exists() and not state.exists()
    async with open_fake_llm(script=[reply("ok")]) as server:
        configure(workspace, server.url_for("openai"))
        env = nyz_env(home)
        with trio.fail_after(60):
            run = await trio.run_process(
                ["sh", "-c", 'umask 022; exec "$@"', "sh", *NYZ, "run", "hi"], cwd=workspace,
                env=env, capture_stdout=True, capture_stderr=True, check=False)
        assert run.returncode == 0, run.stderr.decode()
        proc = await doctor(workspace, home)
    assert (data.stat().st_mode & 0o777, state.stat().st_mode & 0o777) == (0o700, 0o700)
    assert line(proc.stdout, "data dir").startswith("ok    data dir")
    assert line(proc.stdout, "state dir").startswith("ok    state dir")
