"""Start-up cost of installed plugins (issue 52's benchmark, ``benchmarks/plugins_bench.py``)
without giving up a security property: the loaders resolve the prompt roots once, not once
per file, and the digest walk is fast but means what it meant (approvals survive).

Real files and symlinks; counting ``os.path.realpath`` is the deterministic stand-in for
time (tests never measure time)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from nyzhi.core.runtime.plugins import store
from nyzhi.core.runtime.plugins.manifest import TEXT_PARTS, read_plugin
from nyzhi.core.runtime.roles import RoleCatalog
from nyzhi.knowledge.commands import load_commands
from nyzhi.knowledge.skills import discover_skills

PLUGINS = 8


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def install_many(tmp_path: Path, outside: Path | None = None) -> None:
    market = tmp_path / "market"
    entries = []
    for i in range(PLUGINS):
        root = market / "plugins" / f"p{i}"
        write(root / ".claude-plugin" / "plugin.json", json.dumps({"name": f"p{i}"}))
        write(root / "commands" / f"do{i}.md", f"---\ndescription: do {i}\n---\nDo {i}.\n")
        write(root / "agents" / f"helper{i}.md",
              f"---\nname: helper{i}\ndescription: helps {i}\n---\nHelp.\n")
        write(root / "skills" / f"s{i}" / "SKILL.md",
              f"---\nname: s{i}\ndescription: skill {i}\n---\nDo.\n")
        if outside is not None and i == 0:  # an agent file that is a link out of the plugin
            os.symlink(outside, root / "agents" / "leak.md")
        entries.append({"name": f"p{i}", "source": f"./plugins/p{i}"})
    write(market / ".claude-plugin" / "marketplace.json",
          json.dumps({"name": "m", "owner": {"name": "o"}, "plugins": entries}))
    store.marketplace_add(str(market))
    for i in range(PLUGINS):
        store.install(f"p{i}@m")


def test_loaders_resolve_the_prompt_roots_once_not_per_file(tmp_path, workspace, monkeypatch):
    install_many(tmp_path)
    calls = []
    real = os.path.realpath

    def counted(path, *args, **kwargs):
        calls.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", counted)
    catalog = RoleCatalog.load({}, workspace)
    skills = discover_skills(workspace)
    commands = load_commands(workspace)
    assert {f"p{i}:helper{i}" for i in range(PLUGINS)} <= set(catalog.roles)
    assert {f"p{i}:s{i}" for i in range(PLUGINS)} <= {s.name for s in skills}
    assert {f"p{i}:do{i}" for i in range(PLUGINS)} <= set(commands)
    files = 3 * PLUGINS
    # each file is resolved itself (its own check), and the four roots once per loader; per
    # file root resolution made this five per file
    assert len(calls) <= files + 3 * 4 + 4, len(calls)


def test_a_plugin_agent_linked_out_of_the_roots_is_still_refused(tmp_path, workspace):
    secret = tmp_path / "secret.md"
    secret.write_text("---\nname: leak\ndescription: x\n---\nTOKEN=hunter2\n")
    install_many(tmp_path, outside=secret)
    catalog = RoleCatalog.load({}, workspace)
    assert "p0:leak" not in catalog.roles
    assert "outside the workspace" in catalog.errors["leak"]
    assert not any("hunter2" in r.system_prompt for r in catalog.roles.values()
                   if isinstance(getattr(r, "system_prompt", None), str))


def reference_digest(root: Path) -> str:
    """The digest as it was first defined (pathlib's rglob, sorted Paths), so approvals
    recorded before the faster walk still hold."""
    h = hashlib.sha256()
    files: list[Path] = []
    for top in root.iterdir():
        if top.name in TEXT_PARTS or top.name == ".git":
            continue
        if top.is_dir() and not top.is_symlink():
            files += (p for p in top.rglob("*") if p.is_file())
        elif top.is_file():
            files.append(top)
    for path in sorted(files):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


@pytest.fixture
def tricky(tmp_path) -> Path:
    root = tmp_path / "plug"
    outside = tmp_path / "outside"
    write(outside / "big.sh", "echo outside\n")
    write(root / "hooks" / "hooks.json", "{}")
    write(root / "hooks" / "a-b" / "x.sh", "1")  # '-' sorts before '/' as text, not as parts
    write(root / "hooks" / "a" / "x.sh", "2")
    write(root / "run.sh", "echo top\n")
    write(root / "agents" / "a.md", "text for the model, not approved by digest\n")
    os.symlink(root / "run.sh", root / "hooks" / "linked.sh")
    os.symlink(outside, root / "hooks" / "outside-dir")
    os.symlink(outside, root / "lib")
    os.symlink(tmp_path / "missing", root / "hooks" / "broken")
    return root


def test_the_digest_walk_means_what_it_meant(tricky, tmp_path):
    plugin = read_plugin(tricky, "plug")
    before = plugin.digest()
    assert before == reference_digest(tricky)
    (tricky / "agents" / "a.md").write_text("changed text")  # text: not in the digest
    (tmp_path / "outside" / "big.sh").write_text("changed outside")  # linked folder: not walked
    assert plugin.digest() == before
    (tricky / "run.sh").write_text("echo changed\n")  # a linked script: its target is hashed
    changed = plugin.digest()
    assert changed != before and changed == reference_digest(tricky)
