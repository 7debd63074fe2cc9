"""Git tools: git_status, git_diff, git_log, git_show, git_branch, git_commit, git_checkout.

They run the real ``git`` binary. With ``ctx.executor`` set (or a ``node`` argument naming a
configured node) the command goes through that executor, so it runs where the agent works (a
remote node, a monitored executor that refuses mutating commands); otherwise it runs locally as a
subprocess in ``ctx.cwd``. Arguments that could be read as options (a ref starting with '-') are
refused: the model must never be able to smuggle flags into git.

Every run is neutralised (``nyzhi.tools.gitsafe``): git runs on the host, outside the
sandbox, so no program a repository's config or attributes name (fsmonitor, hooks, filters,
external diff, textconv, pager, editor, ssh, credential helpers, gpg) may start.
``git_commit`` therefore runs no hooks (``pre-commit`` included) and makes unsigned commits.
"""

from __future__ import annotations

import shlex
from typing import Any

from nyzhi.tools.base import Permission, ToolContext, ToolResult
from nyzhi.tools.builtin._proc import run_argv
from nyzhi.tools.builtin.common import (
    ArgError,
    BuiltinTool,
    error,
    opt_bool,
    opt_int,
    opt_str,
    req_str,
)
from nyzhi.tools.gitsafe import (
    EXT_DIFF_OFF,
    LIST_DRIVERS,
    SAFE_ENV,
    driver_overrides,
    git_argv,
    needs_listing,
)

GIT_ENV = SAFE_ENV
GIT_TIMEOUT = 60.0


class GitTool(BuiltinTool):
    supports_node = True

    async def git(self, ctx: ToolContext, args: dict[str, Any], *git_args: str) -> tuple[int, str]:
        """Run ``git <git_args>`` neutralised; (exit code, output). Local runs return
        stdout+stderr. The repository's filter and merge drivers are listed first (one
        ``git config`` run, when its config may define any) so that they can be blanked."""
        executor = ctx.executor
        node = opt_str(args, "node")
        if node is not None:
            from nyzhi.tools.nodes import NodeError, resolve_node

            try:
                executor = resolve_node(ctx.nodes, node).executor
            except NodeError as exc:
                raise ArgError(str(exc)) from None
        if executor is not None:  # through the executor: the overrides travel in the command
            # a local executor's cwd is ours to inspect: pin the work tree (gitsafe)
            here = None if getattr(executor, "remote", False) else ctx.cwd
            drivers = []
            if here is None or needs_listing(here):
                listed = await executor.run(shlex.join(git_argv(LIST_DRIVERS, cwd=here)),
                                            cwd=ctx.cwd, env=GIT_ENV, timeout=GIT_TIMEOUT)
                drivers = driver_overrides(listed.output) if listed.exit_code == 0 else []
            argv = git_argv(git_args, cwd=here, drivers=drivers)
            res = await executor.run(shlex.join(argv), cwd=ctx.cwd, env=GIT_ENV, timeout=GIT_TIMEOUT)
            if getattr(res, "timed_out", False):
                raise ArgError(f"git {git_args[0]} timed out after {GIT_TIMEOUT:.0f}s")
            return res.exit_code, res.output
        try:
            drivers: list[tuple[str, str]] = []
            if needs_listing(ctx.cwd):
                listed = await run_argv(git_argv(LIST_DRIVERS, cwd=ctx.cwd), cwd=ctx.cwd,
                                        env=GIT_ENV, env_policy=ctx.env_policy)
                drivers = driver_overrides(listed.stdout) if listed.returncode == 0 else []
            argv = git_argv(git_args, cwd=ctx.cwd, drivers=drivers)
            res = await run_argv(argv, cwd=ctx.cwd, env=GIT_ENV, env_policy=ctx.env_policy)
        except FileNotFoundError as exc:
            raise ArgError("git is not installed (not found on PATH)") from exc
        out = res.stdout.decode("utf-8", "replace")
        if res.returncode != 0:
            out = (out + "\n" + res.err_text).strip()
        return res.returncode, out

    async def checked(self, ctx: ToolContext, args: dict[str, Any], *git_args: str) -> str:
        code, out = await self.git(ctx, args, *git_args)
        if code != 0:
            raise ArgError(f"git {git_args[0]} failed (exit {code}): {out.strip() or 'no output'}")
        return out


def no_option(value: str, what: str) -> str:
    if value.startswith("-"):
        raise ArgError(f"{what} must not start with '-': {value!r} (git options cannot be passed here)")
    return value


def _format_status(porcelain: str) -> str:
    branch = "(unknown)"
    staged, unstaged, untracked, conflicts = [], [], [], []
    for line in porcelain.splitlines():
        if line.startswith("## "):
            branch = line[3:]
            continue
        if len(line) < 4:
            continue
        x, y, path = line[0], line[1], line[3:]
        if x == "?" and y == "?":
            untracked.append(path)
        elif "U" in (x, y) or (x == y == "A") or (x == y == "D"):
            conflicts.append(f"{x}{y} {path}")
        else:
            if x not in (" ", "?"):
                staged.append(f"{x} {path}")
            if y not in (" ", "?"):
                unstaged.append(f"{y} {path}")
    out = [f"Branch: {branch}"]
    for title, items in (("Staged", staged), ("Unstaged", unstaged), ("Untracked", untracked), ("Conflicts", conflicts)):
        if items:
            out.append(f"{title} ({len(items)}):")
            out += [f"  {item}" for item in items]
    if len(out) == 1:
        out.append("Working tree clean")
    return "\n".join(out)


class GitStatusTool(GitTool):
    name = "git_status"
    description = (
        "Show the current branch and the staged, unstaged, untracked and conflicted files. Check "
        "it before committing or to see what has changed; git_diff shows the changes themselves."
    )
    parameters = {"type": "object", "properties": {}}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        out = await self.checked(ctx, args, "status", "--porcelain=v1", "--branch", "--untracked-files=all")
        return ToolResult(output=_format_status(out))


class GitDiffTool(GitTool):
    name = "git_diff"
    description = (
        "Show working-tree changes as a unified diff: unstaged ones by default, staged ones with "
        "staged=true. Untracked files do not appear (git_status lists them); git_show shows a "
        "commit's changes."
    )
    parameters = {
        "type": "object",
        "properties": {
            "staged": {"type": "boolean", "description": "Show staged changes (index against HEAD) instead of unstaged (default false)."},
            "path": {"type": "string", "description": "Only show changes under this path."},
        },
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        git_args = ["diff", *EXT_DIFF_OFF]
        if opt_bool(args, "staged", False):
            git_args.append("--cached")
        path = opt_str(args, "path")
        if path:
            git_args += ["--", path]
        out = await self.checked(ctx, args, *git_args)
        if not out.strip():
            return ToolResult(output="No staged changes." if "--cached" in git_args else "No unstaged changes.")
        return ToolResult(output=out.rstrip("\n"))


class GitLogTool(GitTool):
    name = "git_log"
    description = (
        "List recent commits, one line each: short hash, date, author and subject. Filter by "
        "path or author; at most 100 (default 20). git_show shows one commit in full."
    )
    parameters = {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "description": "How many commits (default 20, at most 100)."},
            "path": {"type": "string", "description": "Only commits touching this path."},
            "author": {"type": "string", "description": "Only commits by this author (substring)."},
        },
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        count = opt_int(args, "count", 20, minimum=1, maximum=100)
        git_args = ["log", *EXT_DIFF_OFF, f"-n{count}", "--date=short", "--pretty=format:%h %ad %an: %s"]
        author = opt_str(args, "author")
        if author:
            git_args.append(f"--author={author}")
        path = opt_str(args, "path")
        if path:
            git_args += ["--", path]
        code, out = await self.git(ctx, args, *git_args)
        if code != 0:
            if "does not have any commits" in out:
                return ToolResult(output="No commits yet.")
            return error(f"git log failed (exit {code}): {out.strip()}")
        return ToolResult(output=out.strip() or "No matching commits.")


class GitShowTool(GitTool):
    name = "git_show"
    deferred = True  # seldom needed: listed in one line until tool_search loads it
    description = (
        "Show one commit in full (message, changed files and patch), or a file as it was at a "
        "commit with 'REF:path'. The ref must not start with '-'."
    )
    parameters = {
        "type": "object",
        "properties": {"ref": {"type": "string", "description": "Commit hash, branch, tag, or 'REF:path' such as 'HEAD~1:src/app.py'."}},
        "required": ["ref"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        ref = no_option(req_str(args, "ref"), "ref")
        out = await self.checked(ctx, args, "show", *EXT_DIFF_OFF, "--stat", "--patch", ref, "--")
        return ToolResult(output=out.rstrip("\n"))


class GitBranchTool(GitTool):
    name = "git_branch"
    deferred = True  # seldom needed: listed in one line until tool_search loads it
    description = (
        "List the branches, marking the current one with '*'. Remote-tracking branches are "
        "included unless all=false; git_checkout switches or creates a branch."
    )
    parameters = {
        "type": "object",
        "properties": {"all": {"type": "boolean", "description": "Include remote-tracking branches (default true)."}},
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        git_args = ["branch", "--list"]
        if opt_bool(args, "all", True):
            git_args.append("--all")
        out = await self.checked(ctx, args, *git_args)
        return ToolResult(output=out.rstrip("\n") or "No branches yet (no commits).")


class GitCommitTool(GitTool):
    name = "git_commit"
    description = (
        "Stage changes and commit them; returns the new commit's hash. With paths only those "
        "are staged; without, every change in the tree is (git add -A), so check git_status "
        "first. Commit only when the user asked you to."
    )
    permission = Permission.NEEDS_APPROVAL
    parameters = {
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "Commit message: a short summary line, then optionally a blank line and details."},
            "paths": {"type": "array", "items": {"type": "string"}, "description": "Only stage these paths (default: all changes)."},
        },
        "required": ["message"],
    }

    def target_paths(self, args: dict[str, Any]) -> list[str]:
        paths = args.get("paths")
        return [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        message = req_str(args, "message")
        if not message.strip():
            raise ArgError("'message' must not be blank")
        paths = args.get("paths")
        if paths is not None and (not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths)):
            raise ArgError("'paths' must be an array of non-empty path strings")
        if paths:
            await self.checked(ctx, args, "add", "--", *paths)
        else:
            await self.checked(ctx, args, "add", "-A")
        code, out = await self.git(ctx, args, "commit", "--no-verify", "-m", message)
        if code != 0:
            if "nothing to commit" in out or "no changes added" in out:
                return error(
                    "Nothing to commit: no changes are staged. Check git_status; pass the changed "
                    "files in paths, or leave paths out to stage everything."
                )
            return error(f"git commit failed (exit {code}): {out.strip()}")
        commit_hash = (await self.checked(ctx, args, "rev-parse", "HEAD")).strip()
        summary = next((ln.strip() for ln in out.splitlines() if ln.strip()), "")
        return ToolResult(output=f"Committed {commit_hash}\n{summary}", metadata={"hash": commit_hash})


class GitCheckoutTool(GitTool):
    name = "git_checkout"
    deferred = True  # seldom needed: listed in one line until tool_search loads it
    description = (
        "Switch to another branch, or create one from the current HEAD with create=true. Git "
        "refuses when uncommitted changes would be overwritten: commit them or ask the user."
    )
    permission = Permission.NEEDS_APPROVAL
    parameters = {
        "type": "object",
        "properties": {
            "branch": {"type": "string", "description": "Branch to switch to (or to create)."},
            "create": {"type": "boolean", "description": "Create the branch before switching (default false)."},
        },
        "required": ["branch"],
    }

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        branch = no_option(req_str(args, "branch"), "branch")
        if opt_bool(args, "create", False):
            await self.checked(ctx, args, "checkout", "-b", branch)
            return ToolResult(output=f"Created and switched to branch {branch}")
        await self.checked(ctx, args, "checkout", branch, "--")
        return ToolResult(output=f"Switched to branch {branch}")


TOOLS = (
    GitStatusTool, GitDiffTool, GitLogTool, GitShowTool, GitBranchTool, GitCommitTool, GitCheckoutTool,
)
