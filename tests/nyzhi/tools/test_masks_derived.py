"""Masks by default (issue 49, item 4), on a real bubblewrap sandbox.

* Every file nyz reads a secret from is masked from sandboxed commands, and the list is the
  registry the readers themselves locate their files through (``nyzhi.config.secret_files``):
  nyz's user config with ``api_key`` (the issue's: rot13, spacing, a split over two calls,
  base32 and gzip+base64 carried the key to the model), the private project layer, and a
  reader registered by the test itself, masked without being listed anywhere else.
* With the workspace at HOME, the shell's start-up files, ``~/.local/bin`` and the user
  site-packages are read-only (and cannot be created); ordinary files in HOME stay writable.
"""

from __future__ import annotations

import base64
import codecs
import gzip
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from nyzhi.config import paths
from nyzhi.tools.base import SandboxLevel
from nyzhi.tools.executors import LocalExecutor
from nyzhi.tools.sandbox import SandboxPolicy, SandboxViolation

KEY = "sk-user-config-planted-key-5566778899"


def _policy(ws: Path, **kw) -> SandboxPolicy:
    return SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, ws, allow_temp=False, **kw)


async def _bash(ws: Path, command: str, policy: SandboxPolicy | None = None) -> str:
    result = await LocalExecutor().run(command + "\necho END", cwd=ws,
                                       sandbox=policy or _policy(ws), timeout=60)
    assert result.sandboxed and "END" in result.output, result.output
    return result.output


def _there(path: Path) -> bool:
    return os.path.lexists(path)


def _forms(secret: str) -> list[str]:
    """The key as the issue's vectors print it (the redactor knows none of these)."""
    raw = secret.encode()
    return [secret, codecs.encode(secret, "rot13"), " ".join(secret), secret[:12],
            secret[12:], base64.b32encode(raw).decode()[:16], secret[::-1][:12]]


def _user_config(home: Path) -> Path:
    path = paths.global_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[provider.other]\napi_key = "{KEY}"\n')
    return path


READS = [
    "cat {f}", "base64 -w0 {f}", "tr 'A-Za-z' 'N-ZA-Mn-za-m' < {f}", "sed 's/./& /g' {f}",
    "head -c 40 {f}", "tail -c 30 {f}", "base32 -w0 {f}", "gzip -c {f} | base64 -w0",
    "python3 -c \"print(open('{f}').read())\"", "cp {f} copy.txt; cat copy.txt",
    "ln -s {f} link; cat link", "dd if={f} bs=1 2>/dev/null",
]


@pytest.mark.parametrize("read", READS)
async def test_nyz_user_config_with_api_key_is_masked(read, tmp_path, home):
    ws = tmp_path / "ws"
    ws.mkdir()
    config = _user_config(home)
    out = await _bash(ws, read.format(f=config) + " 2>&1")
    for form in _forms(KEY):
        assert form not in out, (form, out)
    for text in _decoded(out):  # the encoded vectors, decoded back
        assert KEY not in text, (read, text)


def _decoded(out: str) -> list[str]:
    body = "".join(out.splitlines()).removesuffix("END")
    found = []
    for decode in (base64.b64decode, base64.b32decode,
                   lambda b: gzip.decompress(base64.b64decode(b))):
        try:
            found.append(decode(body).decode("utf-8", "replace"))
        except (ValueError, OSError, EOFError):
            pass
    return found


async def test_the_private_project_layer_is_masked_and_refused_to_read(tmp_path, home):
    ws = tmp_path / "ws"
    (ws / ".nyzhi").mkdir(parents=True)
    local = ws / ".nyzhi" / "config.local.toml"
    local.write_text(f'[provider.fake]\napi_key = "{KEY}"\n')
    out = await _bash(ws, "cat .nyzhi/config.local.toml; base64 .nyzhi/config.local.toml")
    assert KEY not in out and base64.b64encode(KEY.encode()).decode()[:16] not in out
    with pytest.raises(SandboxViolation, match="refused"):
        _policy(ws).check_read(local)


async def test_a_new_secret_reader_registered_in_the_registry_is_masked(tmp_path, home):
    """A reader that locates its file through the registry is masked from bash and refused
    to the read tool, with no list edited; unregistered (the control), it is readable."""
    from nyzhi.config.secret_files import secret_file, unregister, workspace_secret

    token = home / ".newtool" / "token"
    token.parent.mkdir()
    token.write_text(f"{KEY}\n")
    inside = tmp_path / "ws" / ".newtool-secret"
    inside.parent.mkdir()
    inside.write_text(f"{KEY}\n")
    ws = inside.parent

    @secret_file("the new tool's token", name="test.newtool")
    def newtool_token(env: Mapping[str, str] | None = None) -> Path:
        return paths.home_dir(env) / ".newtool" / "token"

    @workspace_secret("the new tool's project token", name="test.newtool_ws")
    def newtool_ws(root: Path) -> Path:
        return Path(root) / ".newtool-secret"

    try:
        assert newtool_token().read_text() == f"{KEY}\n"  # the reader uses it
        out = await _bash(ws, f"cat {token}; python3 -c \"print(open('{token}').read())\"; "
                              "cat .newtool-secret")
        assert KEY not in out, out
        with pytest.raises(SandboxViolation, match="the new tool's token"):
            _policy(ws).check_read(token)
        with pytest.raises(SandboxViolation, match="project token"):
            _policy(ws).check_read(inside)
    finally:
        unregister("test.newtool")
        unregister("test.newtool_ws")
    out = await _bash(ws, f"cat {token} .newtool-secret")
    assert out.count(KEY) == 2  # control: unregistered, nothing masks it
    assert _policy(ws).check_read(token) == token.resolve()


def test_the_built_in_readers_locate_their_files_through_the_registry(home):
    """auth.json, the user config and the MCP trust file are found by the readers through
    registered locators: the masks follow them wherever XDG puts them."""
    from nyzhi.auth.store import AuthStore
    from nyzhi.config.secret_files import registered
    from nyzhi.core.runtime.mcp.trust import TrustStore
    from nyzhi.tools.credentials import hidden_paths

    masked = {p for p, _ in registered()}
    assert paths.auth_path() in masked and AuthStore().path == paths.auth_path()
    assert paths.global_config_path() in masked and paths.mcp_trust_path() in masked
    assert TrustStore(home).legacy_path == paths.mcp_trust_path()
    listed = {h.path for h in hidden_paths(existing_only=False)}
    assert Path(os.path.realpath(paths.global_config_path())) in listed


# ---- a workspace at HOME ---------------------------------------------------------------

HOME_WRITES = {
    "append-bashrc": "echo 'touch /tmp/pwned' >> ~/.bashrc",
    "create-bash-profile": "echo 'touch /tmp/pwned' > ~/.bash_profile",
    "python-zshrc": "python3 -c \"open('{h}/.zshrc', 'w').write('x')\"",
    "mv-profile": "echo x > p && mv -f p ~/.profile",
    "symlink-zshenv": "echo x > z && ln -sf z ~/.zshenv",
    "local-bin": "mkdir -p ~/.local/bin && printf '#!/bin/sh\\n' > ~/.local/bin/git",
    "user-site": "mkdir -p ~/.local/lib/python3.11/site-packages && "
                 "echo 'import os' > ~/.local/lib/python3.11/site-packages/usercustomize.py",
    "replace-local": "mv ~/.local ~/.local-old; mkdir -p ~/.local/bin",
    "fish": "mkdir -p ~/.config/fish && echo x > ~/.config/fish/config.fish",
    "replace-config": "mv ~/.config ~/.config-old; mkdir -p ~/.config/nyzhi && "
                      "echo '[[agent.hooks]]' > ~/.config/nyzhi/config.toml",
    "replace-state": "mv ~/.local/state ~/.local/st2; mv ~/.local/share ~/.local/sh2; "
                     "mkdir -p ~/.local/state/nyzhi && echo '{{}}' > ~/.local/state/nyzhi/x.json",
}


@pytest.mark.parametrize("vector", sorted(HOME_WRITES))
async def test_a_workspace_at_home_cannot_touch_start_up_files(vector, home):
    (home / ".bashrc").write_text("# mine\n")
    (home / ".profile").write_text("# profile\n")
    await _bash(home, HOME_WRITES[vector].format(h=home) + " 2>&1", _policy(home))
    assert (home / ".bashrc").read_text() == "# mine\n"
    assert (home / ".profile").read_text() == "# profile\n"
    for name in (".bash_profile", ".zshrc", ".zshenv"):
        assert not _there(home / name), name
    assert not (home / ".local" / "bin" / "git").exists()
    assert not list((home / ".local" / "lib").rglob("usercustomize.py"))
    assert not (home / ".local-old").exists() and not (home / ".config-old").exists()
    assert not (home / ".local" / "st2").exists() and not (home / ".local" / "sh2").exists()
    assert not paths.global_config_path().exists()
    assert not (home / ".config" / "fish" / "config.fish").exists()


async def test_control_a_workspace_at_home_still_writes_ordinary_files(home):
    (home / "project").mkdir()
    await _bash(home, "echo n > notes.txt && echo m > project/main.py", _policy(home))
    assert (home / "notes.txt").read_text() == "n\n"
    assert (home / "project" / "main.py").read_text() == "m\n"
    assert not _there(home / ".bash_profile")  # the stand-ins are gone again


# ---- end to end: nothing of the key reaches the model ----------------------------------------

async def test_issue_vectors_carry_no_part_of_the_user_config_key_to_the_model(
        workspace, home, configure):
    """The issue's: rot13, spacing, a split over two calls, base32 and gzip+base64 of
    ``~/.config/nyzhi/config.toml`` through ``nyz run`` (real bwrap, the fake LLM); the
    control reads an ordinary workspace file the same ways and it does arrive."""
    from nyzhi.testing.cli import run_nyz
    from nyzhi.testing.fake_llm import open_fake_llm, reply, tool_call

    config = _user_config(home)
    (workspace / "plain.txt").write_text("PLAIN-CONTROL-TEXT\n")
    reads = ["tr 'A-Za-z' 'N-ZA-Mn-za-m' < {f}", "sed 's/./& /g' {f}", "head -c 40 {f}",
             "tail -c +41 {f}", "base32 -w0 {f}", "gzip -c {f} | base64 -w0"]
    calls = [reply(tool_calls=[tool_call("bash", {"command": r.format(f=f) + "; echo"})])
             for f in (config, workspace / "plain.txt") for r in reads]
    async with open_fake_llm(script=[*calls, reply("done")]) as server:
        configure(workspace, server.url_for("openai"), approve=False)
        proc = await run_nyz(workspace, home, "run", "--trust", "full", "go")
    assert proc.returncode == 0, proc.stderr.decode()
    results = server.requests[-1].tool_results()
    assert len(results) == 2 * len(reads)
    sent = b"".join(r.body for r in server.requests).decode()
    for form in _forms(KEY):
        assert form not in sent, form
    for result in results[: len(reads)]:
        for text in _decoded(result.strip()):
            assert KEY not in text
    # the control: the same reads of a plain file carry it
    assert codecs.encode("PLAIN-CONTROL-TEXT", "rot13") in results[len(reads)]
    assert "PLAIN-CONTROL-TEXT" in gzip.decompress(
        base64.b64decode(results[-1].strip())).decode()
