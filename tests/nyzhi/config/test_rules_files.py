"""Rules files as Claude Code and Codex read them (issue 31): CLAUDE.md ``@path`` imports,
CLAUDE.local.md, rules from the root down to the working directory, and the user's own
``~/.claude/CLAUDE.md`` and ``~/.codex/AGENTS.md``, each read through the prompt-file check."""

from __future__ import annotations

import os
from pathlib import Path

from nyzhi.config.workspace import MAX_IMPORT_HOPS, detect_workspace, import_paths


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def test_import_paths_skip_code_and_emails():
    text = ("see @a.md and @docs/b.md, mail me@example.com\n`@in/span.md`\n```\n@in/block.md\n"
            "```\n@~/notes.md @../up.md.")
    assert import_paths(text) == ["a.md", "docs/b.md", "~/notes.md", "../up.md"]


def test_imports_are_relative_to_the_importing_file_and_nested(tmp_path, home):
    root = project(tmp_path)
    write(root / "CLAUDE.md", "ROOT @docs/a.md @docs/a.md")
    write(root / "docs/a.md", "A @sub/b.md")  # relative to docs/
    write(root / "docs/sub/b.md", "B @../../CLAUDE.md")  # a cycle back to the root: skipped
    ws = detect_workspace(root)
    assert ws.rules_text == "ROOT @docs/a.md @docs/a.md\n\nA @sub/b.md\n\nB @../../CLAUDE.md"
    assert ws.notices == ()
    assert [p.name for p in ws.rule_files] == ["CLAUDE.md", "a.md", "b.md"]


def test_imports_stop_after_five_hops_and_missing_ones_are_notices(tmp_path, home):
    root = project(tmp_path)
    write(root / "CLAUDE.md", "L0 @l1.md @gone.md")
    for n in range(1, MAX_IMPORT_HOPS + 2):
        write(root / f"l{n}.md", f"L{n} @l{n + 1}.md")
    ws = detect_workspace(root)
    for n in range(MAX_IMPORT_HOPS + 1):
        assert f"L{n} " in ws.rules_text
    assert f"L{MAX_IMPORT_HOPS + 1} " not in ws.rules_text
    notices = "\n".join(ws.notices)
    assert "@gone.md not imported" in notices and "does not exist" in notices
    assert f"at most {MAX_IMPORT_HOPS} hops" in notices


def test_an_import_outside_the_workspace_is_refused(tmp_path, home):
    root = project(tmp_path)
    secret = write(home / ".ssh" / "id_ed25519", "PRIVATE KEY")
    write(root / "CLAUDE.md", f"R @{secret} @../outside.md")
    write(tmp_path / "outside.md", "OUTSIDE")
    (root / "link.md").symlink_to(secret)
    write(root / "CLAUDE.local.md", "LOCAL @link.md")
    ws = detect_workspace(root)
    assert "PRIVATE KEY" not in ws.rules_text and "OUTSIDE" not in ws.rules_text
    assert "LOCAL" in ws.rules_text  # CLAUDE.local.md itself is read
    assert sum("not read into the prompt" in n for n in ws.notices) == 3


def test_rules_from_the_root_down_to_the_working_directory(tmp_path, home):
    root = project(tmp_path)
    write(root / "AGENTS.md", "ROOT")
    write(root / "pkg/AGENTS.md", "PKG")
    write(root / "pkg/CLAUDE.md", "PKG-CLAUDE (AGENTS.md comes first in a directory)")
    write(root / "pkg/mod/CLAUDE.md", "MOD @extra.md")
    write(root / "pkg/mod/extra.md", "EXTRA")
    write(root / "other/AGENTS.md", "OTHER")  # not on the way down: never read
    cwd = root / "pkg" / "mod" / "deep"
    cwd.mkdir()
    ws = detect_workspace(cwd)
    assert ws.root == root
    text = ws.rules_text
    assert [text.find(m) for m in ("ROOT", "PKG", "MOD", "EXTRA")] == sorted(
        text.find(m) for m in ("ROOT", "PKG", "MOD", "EXTRA"))
    assert "OTHER" not in text and "PKG-CLAUDE" not in text
    assert detect_workspace(root).rules_text == "ROOT"  # at the root: the root's rules only


def test_the_users_own_rules_come_first(tmp_path, home):
    root = project(tmp_path)
    write(root / "CLAUDE.md", "PROJECT")
    write(home / ".claude" / "CLAUDE.md", "MINE @more.md")
    write(home / ".claude" / "more.md", "MORE")  # outside the allowed files: refused
    write(home / ".codex" / "AGENTS.md", "CODEX-MINE")
    ws = detect_workspace(root)
    text = ws.rules_text
    assert text.index("MINE") < text.index("CODEX-MINE") < text.index("PROJECT")
    assert "MORE" not in text
    assert any("@more.md not imported" in n for n in ws.notices)


def test_a_user_rules_file_linked_to_a_secret_is_refused(tmp_path, home):
    root = project(tmp_path)
    write(root / "AGENTS.md", "PROJECT")
    key = write(home / ".ssh" / "id_ed25519", "PRIVATE KEY")
    env_file = write(home / ".aws" / "credentials", "aws_secret_access_key = x")
    (home / ".claude").mkdir()
    (home / ".claude" / "CLAUDE.md").symlink_to(key)
    (home / ".codex").mkdir()
    (home / ".codex" / "AGENTS.md").symlink_to(env_file)
    ws = detect_workspace(root)
    assert ws.rules_text == "PROJECT"
    # a hard link is refused too, and so is the whole ~/.claude directory as a link
    (home / ".claude" / "CLAUDE.md").unlink()
    os.link(key, home / ".claude" / "CLAUDE.md")
    assert detect_workspace(root).rules_text == "PROJECT"
    (home / ".claude" / "CLAUDE.md").unlink()
    (home / ".claude").rmdir()
    (home / ".claude").symlink_to(home / ".ssh")
    write(home / ".ssh" / "CLAUDE.md", "FROM-SSH-DIR")
    assert "FROM-SSH-DIR" in detect_workspace(root).rules_text  # the file itself is a regular one
    assert "PRIVATE KEY" not in detect_workspace(root).rules_text


def test_codex_home_moves_the_codex_rules_file(tmp_path, home, monkeypatch):
    root = project(tmp_path)
    write(home / ".codex" / "AGENTS.md", "DEFAULT-CODEX")
    write(tmp_path / "codex-home" / "AGENTS.md", "MOVED-CODEX")
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    text = detect_workspace(root).rules_text
    assert "MOVED-CODEX" in text and "DEFAULT-CODEX" not in text
