"""Git tools against real repositories in tmp_path."""

from pathlib import Path

import pytest
from _toolctx import git, git_env, init_repo, make_ctx

from nyzhi.tools.base import Permission
from nyzhi.tools.builtin.git import (
    GitBranchTool,
    GitCheckoutTool,
    GitCommitTool,
    GitDiffTool,
    GitLogTool,
    GitShowTool,
    GitStatusTool,
)
from nyzhi.tools.registry import ToolRegistry


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    git_env(monkeypatch, tmp_path)
    return init_repo(tmp_path / "repo")


async def test_status_groups_changes(repo: Path) -> None:
    (repo / "a.txt").write_text("two\n")
    (repo / "new.txt").write_text("n\n")
    (repo / "staged.txt").write_text("s\n")
    git(repo, "add", "staged.txt")
    res = await GitStatusTool().run({}, make_ctx(repo))
    assert res.output.splitlines() == [
        "Branch: main",
        "Staged (1):", "  A staged.txt",
        "Unstaged (1):", "  M a.txt",
        "Untracked (1):", "  new.txt",
    ]


async def test_status_clean(repo: Path) -> None:
    res = await GitStatusTool().run({}, make_ctx(repo))
    assert res.output == "Branch: main\nWorking tree clean"


async def test_diff_unstaged_staged_and_path(repo: Path) -> None:
    ctx = make_ctx(repo)
    assert (await GitDiffTool().run({}, ctx)).output == "No unstaged changes."
    (repo / "a.txt").write_text("two\n")
    res = await GitDiffTool().run({"path": "a.txt"}, ctx)
    assert "-one" in res.output and "+two" in res.output
    assert (await GitDiffTool().run({"staged": True}, ctx)).output == "No staged changes."
    git(repo, "add", "a.txt")
    assert "+two" in (await GitDiffTool().run({"staged": True}, ctx)).output


async def test_commit_all_returns_hash_then_log_and_show(repo: Path) -> None:
    ctx = make_ctx(repo)
    (repo / "b.txt").write_text("b\n")
    res = await GitCommitTool().run({"message": "add b"}, ctx)
    assert not res.is_error, res.output
    head = git(repo, "rev-parse", "HEAD").strip()
    assert res.metadata["hash"] == head and res.output.startswith(f"Committed {head}")
    log = await GitLogTool().run({"count": 1}, ctx)
    assert log.output.endswith("Test Author: add b") and len(log.output.splitlines()) == 1
    log = await GitLogTool().run({"path": "a.txt"}, ctx)
    assert log.output.endswith("first commit") and len(log.output.splitlines()) == 1
    assert (await GitLogTool().run({"author": "Nobody"}, ctx)).output == "No matching commits."
    show = await GitShowTool().run({"ref": "HEAD"}, ctx)
    assert "add b" in show.output and "+b" in show.output


async def test_commit_only_given_paths_and_nothing_to_commit(repo: Path) -> None:
    ctx = make_ctx(repo)
    (repo / "x.txt").write_text("x\n")
    (repo / "y.txt").write_text("y\n")
    res = await GitCommitTool().run({"message": "only x", "paths": ["x.txt"]}, ctx)
    assert not res.is_error
    assert git(repo, "status", "--porcelain").strip() == "?? y.txt"
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "y")
    res = await GitCommitTool().run({"message": "empty"}, ctx)
    assert res.is_error and res.output.startswith("Nothing to commit: no changes are staged.")
    assert "git_status" in res.output


async def test_branch_and_checkout(repo: Path) -> None:
    ctx = make_ctx(repo)
    res = await GitCheckoutTool().run({"branch": "feature", "create": True}, ctx)
    assert res.output == "Created and switched to branch feature"
    assert git(repo, "branch", "--show-current").strip() == "feature"
    res = await GitBranchTool().run({}, ctx)
    assert res.output.splitlines() == ["* feature", "  main"]
    assert (await GitCheckoutTool().run({"branch": "main"}, ctx)).output == "Switched to branch main"
    res = await GitCheckoutTool().run({"branch": "nope"}, ctx)
    assert res.is_error and res.output == "git checkout failed (exit 128): fatal: invalid reference: nope"


async def test_option_injection_refused(repo: Path) -> None:
    ctx = make_ctx(repo)
    res = await GitCheckoutTool().run({"branch": "--orphan=x"}, ctx)
    assert res.is_error and res.output.startswith("branch must not start with '-': '--orphan=x'")
    res = await GitShowTool().run({"ref": "--output=/tmp/x"}, ctx)
    assert res.is_error


async def test_not_a_repository_is_a_clear_error(tmp_path: Path) -> None:
    res = await GitStatusTool().run({}, make_ctx(tmp_path))
    assert res.is_error and "not a git repository" in res.output


async def test_executor_and_node_routing(repo: Path) -> None:
    calls = []

    class FakeResult:
        exit_code, output, timed_out, truncated = 0, "## main\n", False, False

    class Recorder:
        def __init__(self, tag: str, remote: bool) -> None:
            self.tag = tag
            self.remote = remote

        async def run(self, command, *, cwd, env=None, timeout=None, on_output=None):  # noqa: ASYNC109
            calls.append((self.tag, command, str(cwd)))
            return FakeResult()

    ctx = make_ctx(repo, executor=Recorder("local", False), nodes={"gpu": Recorder("gpu", True)})
    await GitStatusTool().run({}, ctx)
    await GitStatusTool().run({"node": "gpu"}, ctx)
    # locally the repository's config has no driver section: git runs once, neutralised, its
    # work tree pinned; a remote node's config cannot be read from here: its drivers are
    # listed first
    assert [c[0] for c in calls] == ["local", "gpu", "gpu"]
    assert calls[0][1].startswith("git --no-pager -c core.fsmonitor=false")
    assert "-c core.hooksPath=/dev/null" in calls[0][1] and f"--work-tree={repo}" in calls[0][1]
    assert calls[0][1].endswith(" status --porcelain=v1 --branch --untracked-files=all")
    assert " config -z --show-scope --get-regexp " in calls[1][1]
    assert "--work-tree" not in calls[2][1]
    res = await GitStatusTool().run({"node": "mars"}, ctx)
    assert res.is_error and res.output == "unknown node 'mars'; configured nodes: gpu"


async def test_permissions_and_node_schema() -> None:
    assert GitCommitTool.permission is Permission.NEEDS_APPROVAL
    assert GitCheckoutTool.permission is Permission.NEEDS_APPROVAL
    assert GitStatusTool.permission is Permission.READ_ONLY
    reg = ToolRegistry()
    reg.register(GitStatusTool())
    assert "node" not in reg.schemas()[0]["parameters"]["properties"]
    assert reg.schemas(nodes=["b", "a"])[0]["parameters"]["properties"]["node"]["enum"] == ["a", "b"]


def test_drivers_are_listed_whenever_the_repository_config_could_define_one(tmp_path: Path) -> None:
    """The second git run (listing filter/merge drivers) is skipped only for a plain .git/config
    with no filter, merge or include section; any spelling of one, a .git file (a linked
    worktree) or an unreadable config lists."""
    from nyzhi.tools.gitsafe import driver_overrides, needs_listing

    ws = tmp_path / "r"
    (ws / ".git").mkdir(parents=True)
    config = ws / ".git" / "config"
    assert needs_listing(ws)  # no config file at all
    config.write_text("[core]\n\tbare = false\n")
    assert not needs_listing(ws) and not needs_listing(ws / "sub" / "dir")
    for section in ('[filter "x"]', '[ FILTER "x" ]', "[merge.x]", "[include]",
                    '[includeIf "gitdir:/"]'):
        config.write_text(f"[core]\n{section}\n\tk = v\n")
        assert needs_listing(ws), section
    config.write_text("[core]\n")
    (ws / ".git" / "config.worktree").write_text('[filter "w"]\n\tclean = x\n')
    assert needs_listing(ws)
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".git").write_text("gitdir: /elsewhere\n")
    assert needs_listing(linked)
    listing = (b"local\0filter.evil.clean\nx\0global\0filter.lfs.clean\ngit-lfs clean\0"
               b"worktree\0merge.m.driver\ny\0")
    assert driver_overrides(listing) == [
        ("filter.evil.clean", ""), ("filter.evil.smudge", ""), ("filter.evil.process", ""),
        ("filter.evil.required", "false"), ("merge.m.driver", "")]  # lfs (the user's) kept


def test_bash_and_verify_offer_node_only_when_nodes_are_configured() -> None:
    """No ``node`` argument the model could fill with a guess when there are no nodes; an
    enum of the configured ones when there are."""
    from nyzhi.tools.builtin.bash import BashTool
    from nyzhi.tools.builtin.verify import VerifyTool

    reg = ToolRegistry()
    reg.register(BashTool())
    reg.register(VerifyTool())
    assert all("node" not in s["parameters"]["properties"] for s in reg.schemas())
    assert [s["parameters"]["properties"]["node"]["enum"] for s in reg.schemas(nodes=["b1"])] \
        == [["b1"], ["b1"]]
