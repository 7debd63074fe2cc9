"""Pull requests: ``create_pr`` pushes the branch and opens one; ``review_pr`` reads one.

Both go through the forge's own command-line client: ``gh`` for GitHub, ``glab`` for a remote
whose host names GitLab. The client keeps the user's login (``gh auth login``), so nyz stores no
forge token; a missing client or a missing login is an error saying how to fix it, checked
before anything is pushed.

Git and the clients run on the host, outside the sandbox, so nothing a repository's own
config names may run (``nyzhi.tools.gitsafe``). The push is the one git command here that must
talk to a remote: it keeps every gitsafe override except the transport ones (ssh command,
credential helper, askpass, proxy, allowed protocols), which then come from the *user's*
global and system config only. A repository whose own config sets any key that names a program
for a push (``core.sshCommand``, ``credential.*``, ``remote.*.receivepack``, ``url.*``, …) is
refused: code planted from inside the sandbox must not run outside it. ``gh`` and ``glab`` run
git themselves (to read the remotes); the same overrides reach those runs through
``GIT_CONFIG_PARAMETERS``.

PR titles, bodies, comments and diffs are written by other people: ``review_pr`` frames them as
untrusted content.
"""

from __future__ import annotations

import json
import re
import shutil
import urllib.parse
from typing import Any

from nyzhi.tools.base import Permission, ToolContext, ToolResult
from nyzhi.tools.builtin._proc import ProcResult, run_argv
from nyzhi.tools.builtin.common import (
    ArgError,
    BuiltinTool,
    error,
    opt_bool,
    opt_str,
)
from nyzhi.tools.env_policy import child_env
from nyzhi.tools.gitsafe import (
    LIST_DRIVERS,
    SAFE_CONFIG,
    SAFE_ENV,
    driver_overrides,
    git_argv,
    needs_listing,
)
from nyzhi.tools.untrusted import frame_untrusted

TIMEOUT_S = 120.0
MAX_DIFF_CHARS = 100_000
# The forge clients' own tokens: passed to gh/glab (and nothing else) when the user set them.
CLIENT_TOKENS = ("GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN",
                 "GITLAB_TOKEN", "GL_TOKEN", "SSH_AUTH_SOCK")
# gitsafe overrides a push must not carry: with them no transport could authenticate.
TRANSPORT_KEYS = ("core.sshCommand", "core.askPass", "core.gitProxy", "credential.helper",
                  "protocol.allow")
PUSH_PROTOCOLS = "file:git:http:https:ssh"  # never ext:: or fd::
# Keys that, set in the repository's own config, would make a push run a program of its choice
# or choose how it reaches the server: a proxy sees (and, with TLS checks off, can change) the
# push and the user's credentials on their way. ``http.*`` is refused whole (``http.proxy``,
# ``http.sslVerify``, ``http.<url>.proxy``, ``http.sslCAInfo``, ``http.cookieFile``,
# ``http.curloptResolve``, ``http.extraHeader``...): the user's own config may set them.
REPO_PROGRAM_KEYS = (r"^(core\.(sshcommand|askpass|gitproxy)|credential\.|url\.|protocol\."
                     r"|gpg\.|http\.|ssh\.|remote\..*\.(receivepack|uploadpack|vcs|proxy"
                     r"|proxyauthmethod))")
_TRANSPORT = re.compile(r"^(http\.|ssh\.|remote\..*\.proxy)", re.IGNORECASE)


class ClientMissing(Exception):
    """gh or glab is not installed, or not logged in; the message says how to fix it."""


def _text(res: ProcResult) -> str:
    return (res.stdout.decode("utf-8", "replace") + res.stderr.decode("utf-8", "replace")).strip()


async def _run(argv: list[str], ctx: ToolContext, env: dict[str, str] | None = None,
               keep: tuple[str, ...] = ()) -> ProcResult:
    import trio

    with trio.move_on_after(TIMEOUT_S) as scope:
        return await run_argv(argv, cwd=ctx.cwd, env=env, env_policy=ctx.env_policy, keep=keep)
    assert scope.cancelled_caught
    raise ArgError(f"{argv[0]} {argv[1] if len(argv) > 1 else ''} did not finish within "
                   f"{TIMEOUT_S:g} s")


async def _git(ctx: ToolContext, *args: str) -> tuple[int, str]:
    """``git ARGS`` neutralised in ``ctx.cwd``: (exit code, stdout, or stderr on failure)."""
    drivers: list[tuple[str, str]] = []
    try:
        if needs_listing(ctx.cwd):
            listed = await _run(git_argv(LIST_DRIVERS, cwd=ctx.cwd), ctx, SAFE_ENV)
            drivers = driver_overrides(listed.stdout) if listed.returncode == 0 else []
        res = await _run(git_argv(args, cwd=ctx.cwd, drivers=drivers), ctx, SAFE_ENV)
    except FileNotFoundError as exc:
        raise ArgError("git is not installed (not found on PATH)") from exc
    out = res.stdout.decode("utf-8", "replace").strip()
    return res.returncode, out if res.returncode == 0 else (res.err_text or out)


async def _git_ok(ctx: ToolContext, *args: str) -> str:
    code, out = await _git(ctx, *args)
    if code != 0:
        raise ArgError(f"git {args[0]} failed: {out}")
    return out


def _config_parameters() -> str:
    """gitsafe's overrides as ``GIT_CONFIG_PARAMETERS`` (what ``git -c`` sets for its own
    children): every git the forge client runs is neutralised too."""
    return " ".join("'" + f"{key}={value}".replace("'", "'\\''") + "'"
                    for key, value in SAFE_CONFIG)


def client_env() -> dict[str, str]:
    return {**SAFE_ENV, "GIT_CONFIG_PARAMETERS": _config_parameters(), "GH_PROMPT_DISABLED": "1",
            "NO_COLOR": "1", "GH_NO_UPDATE_NOTIFIER": "1", "GLAB_NO_PROMPT": "1"}


def remote_kind(url: str) -> tuple[str, str | None]:
    """("gitlab" | "github", "HOST/OWNER/REPO" or None) for a remote URL: ssh (scp-like or
    ssh://) or http(s); a local path or file:// URL has no host (None)."""
    scp = re.match(r"^[\w.-]+@([\w.-]+):(.+)$", url)
    if scp:
        host, path = scp.group(1), scp.group(2)
    else:
        parts = urllib.parse.urlsplit(url)
        host, path = (parts.hostname or ""), parts.path
    path = path.strip("/").removesuffix(".git")
    kind = "gitlab" if "gitlab" in host.lower() else "github"
    if not host or path.count("/") < 1:
        return kind, None
    return kind, f"{host}/{path}"


class ForgeTool(BuiltinTool):
    """What create_pr and review_pr share: which remote, which client, is it logged in."""

    def target_paths(self, args: dict[str, Any]) -> list[str]:
        return []

    async def remote(self, ctx: ToolContext) -> tuple[str, str]:
        """(remote name, its URL): the branch's upstream remote, else ``origin``."""
        code, upstream = await _git(ctx, "rev-parse", "--abbrev-ref", "--symbolic-full-name",
                                    "@{upstream}")
        name = upstream.split("/", 1)[0] if code == 0 and "/" in upstream else "origin"
        code, url = await _git(ctx, "remote", "get-url", name)
        if code != 0:
            raise ArgError(f"this repository has no remote {name!r}: add one with "
                           f"`git remote add {name} URL`")
        return name, url

    async def client(self, ctx: ToolContext, kind: str, host: str | None) -> str:
        """The forge client's path, after checking it is logged in."""
        exe = "glab" if kind == "gitlab" else "gh"
        found = shutil.which(exe, path=child_env(ctx.env_policy).get("PATH"))
        if found is None:
            how = ("install the GitLab CLI (https://gitlab.com/gitlab-org/cli; Debian: "
                   "`apt install glab`) and run `glab auth login`") if exe == "glab" else (
                   "install the GitHub CLI (https://cli.github.com; Debian: `apt install gh`) "
                   "and run `gh auth login`")
            raise ClientMissing(f"{exe} is not installed (not found on PATH): {how}")
        argv = [found, "auth", "status"]
        if host:
            argv += ["--hostname", host]
        res = await _run(argv, ctx, client_env(), CLIENT_TOKENS)
        if res.returncode != 0:
            raise ClientMissing(
                f"{exe} is not logged in{f' to {host}' if host else ''}: run `{exe} auth login`"
                f"{f' --hostname {host}' if host else ''} (or set "
                f"{'GITLAB_TOKEN' if exe == 'glab' else 'GH_TOKEN'}). {exe} said: "
                f"{_text(res)[-300:]}")
        return found

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return await self.act(args, ctx)
        except ClientMissing as exc:
            return error(f"{self.name}: {exc}")
        except FileNotFoundError as exc:
            return error(f"{self.name}: {exc.filename or exc} is not installed")

    async def act(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise NotImplementedError


class CreatePrTool(ForgeTool):
    name = "create_pr"
    description = (
        "Push the current branch and open a pull request (a merge request on GitLab) with the "
        "gh or glab CLI. title and body default to the branch's commits (one commit: its "
        "message; several: the first subject and a list). base defaults to the remote's "
        "default branch. Returns the PR's URL."
    )
    permission = Permission.NEEDS_APPROVAL
    deferred = True
    parameters = {
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "PR title (default: from the commits)."},
            "body": {"type": "string", "description": "PR description (default: from commits)."},
            "base": {"type": "string", "description": "Branch to merge into (default: the "
                                                      "remote's default branch)."},
            "draft": {"type": "boolean", "description": "Open as a draft (default false)."},
        },
    }

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            branch = await _git_ok(ctx, "rev-parse", "--abbrev-ref", "HEAD")
            remote, url = await self.remote(ctx)
        except ArgError:
            return ""
        return (f"git push --set-upstream {remote} {branch} ({url}), then open a pull request "
                f"into {args.get('base') or 'the default branch'}"
                + (f" titled {args['title']!r}" if args.get("title") else ""))

    async def act(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        title = opt_str(args, "title")
        body = args.get("body")  # "" is an empty description, not "from the commits"
        if body is not None and not isinstance(body, str):
            raise ArgError("'body' must be a string")
        base = opt_str(args, "base")
        draft = opt_bool(args, "draft", False)
        if base is not None and (base.startswith("-") or not re.fullmatch(r"[\w./-]+", base)):
            raise ArgError(f"base must be a branch name, got {base!r}")
        branch = await _git_ok(ctx, "rev-parse", "--abbrev-ref", "HEAD")
        if branch == "HEAD":
            raise ArgError("HEAD is detached: check out a branch first (git_branch, "
                           "git_checkout)")
        remote, url = await self.remote(ctx)
        kind, slug = remote_kind(url)
        host = slug.split("/", 1)[0] if slug else None
        base = base or await self._default_base(ctx, remote)
        if base == branch:
            raise ArgError(f"the current branch is the base branch {base!r}: commit on a "
                           "feature branch first")
        commits = await self._commits(ctx, remote, base)
        if not commits:
            raise ArgError(f"{branch} has no commits that {base} lacks: nothing to open a pull "
                           "request for")
        auto_title, auto_body = title_and_body(commits)
        title, body = title or auto_title, body if body is not None else auto_body
        exe = await self.client(ctx, kind, host)  # before pushing: no push without a login
        pushed = await self._push(ctx, remote, branch)
        if kind == "gitlab":
            argv = [exe, "mr", "create", "--title", title, "--description", body,
                    "--target-branch", base, "--source-branch", branch, "--yes"]
            if slug:
                argv += ["--repo", slug.split("/", 1)[1]]
        else:
            argv = [exe, "pr", "create", "--title", title, "--body", body, "--base", base,
                    "--head", branch]
            if slug:
                argv += ["--repo", slug]
        if draft:
            argv.append("--draft")
        res = await _run(argv, ctx, client_env(), CLIENT_TOKENS)
        out = _text(res)
        if res.returncode != 0:
            return error(f"create_pr: the branch was pushed ({pushed}), but "
                         f"`{'glab mr' if kind == 'gitlab' else 'gh pr'} create` failed: "
                         f"{out[-1500:]}", branch=branch, base=base)
        link = next((w for w in out.split() if w.startswith(("https://", "http://"))), "")
        return ToolResult(
            f"Opened {'a draft ' if draft else ''}pull request {link or out[-300:]}\n"
            f"{branch} -> {base}: {title}",
            metadata={"url": link, "branch": branch, "base": base, "title": title})

    async def _default_base(self, ctx: ToolContext, remote: str) -> str:
        code, head = await _git(ctx, "symbolic-ref", "--short", f"refs/remotes/{remote}/HEAD")
        if code == 0 and "/" in head:
            return head.split("/", 1)[1]
        for name in ("main", "master"):
            code, _ = await _git(ctx, "rev-parse", "--verify", "--quiet",
                                 f"refs/remotes/{remote}/{name}")
            if code == 0:
                return name
        raise ArgError(f"cannot tell {remote}'s default branch: pass base")

    async def _commits(self, ctx: ToolContext, remote: str, base: str) -> list[tuple[str, str]]:
        """(subject, body) of each commit on HEAD that ``base`` lacks, oldest first."""
        for ref in (f"refs/remotes/{remote}/{base}", f"refs/heads/{base}"):
            code, _ = await _git(ctx, "rev-parse", "--verify", "--quiet", ref)
            if code == 0:
                break
        else:
            raise ArgError(f"no branch {base!r} here or on {remote}: pass an existing base "
                           f"(or fetch it: git fetch {remote} {base})")
        log = await _git_ok(ctx, "log", "--reverse", "--format=%s%x00%b%x1e", f"{ref}..HEAD")
        commits = []
        for entry in log.split("\x1e"):
            subject, _, body = entry.strip("\n").partition("\x00")
            if subject:
                commits.append((subject.strip(), body.strip()))
        return commits

    async def _push(self, ctx: ToolContext, remote: str, branch: str) -> str:
        """``git push --set-upstream REMOTE BRANCH`` with the user's transport settings only;
        a description of what was pushed."""
        listed = await _run(git_argv(("config", "-z", "--show-scope", "--get-regexp",
                                      REPO_PROGRAM_KEYS), cwd=ctx.cwd), ctx, SAFE_ENV)
        parts = listed.stdout.decode("utf-8", "replace").split("\0")
        planted = sorted({entry.split("\n", 1)[0] for scope, entry in zip(
            parts[0::2], parts[1::2], strict=False) if scope in ("local", "worktree")})
        if planted:
            reasons = []
            if any(_TRANSPORT.match(k) for k in planted):
                reasons.append("change how the push reaches the server (a proxy, TLS checks)")
            if not all(_TRANSPORT.match(k) for k in planted):
                reasons.append("run a program of the repository's choosing outside the sandbox")
            what = "would " + " and ".join(reasons)
            raise ArgError(
                "refusing to push: this repository's own config sets "
                f"{', '.join(planted)}, which {what}; remove it, or push yourself and call "
                "create_pr again")
        drivers: list[tuple[str, str]] = []
        if needs_listing(ctx.cwd):
            got = await _run(git_argv(LIST_DRIVERS, cwd=ctx.cwd), ctx, SAFE_ENV)
            drivers = driver_overrides(got.stdout) if got.returncode == 0 else []
        argv = _without_transport_overrides(git_argv(
            ("push", "--set-upstream", remote, f"HEAD:refs/heads/{branch}"),
            cwd=ctx.cwd, drivers=[*drivers, ("push.gpgSign", "false")]))
        res = await _run(argv, ctx, {**SAFE_ENV, "GIT_ALLOW_PROTOCOL": PUSH_PROTOCOLS},
                         keep=("SSH_AUTH_SOCK",))
        if res.returncode != 0:
            raise ArgError(f"git push {remote} {branch} failed: {_text(res)[-1500:]}")
        return f"{branch} to {remote}"


def _without_transport_overrides(argv: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "-c" and i + 1 < len(argv) and argv[i + 1].split("=", 1)[0] in \
                TRANSPORT_KEYS:
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def title_and_body(commits: list[tuple[str, str]]) -> tuple[str, str]:
    """A PR's title and body from its commits (oldest first): one commit gives its subject and
    body; several give the first subject and a list of every subject."""
    if len(commits) == 1:
        return commits[0]
    return commits[0][0], "\n".join(f"- {subject}" for subject, _ in commits)


class ReviewPrTool(ForgeTool):
    name = "review_pr"
    description = (
        "Read a pull request (a merge request on GitLab) for review: its title, description, "
        "state, branches, comments, reviews and diff, through the gh or glab CLI. pr: a "
        "number (in this repository's remote) or a PR URL."
    )
    permission = Permission.READ_ONLY  # it reads; nothing on the forge or here changes
    deferred = True
    parameters = {
        "type": "object",
        "properties": {
            "pr": {"type": "string", "description": "PR number (42 or #42) or URL."},
        },
        "required": ["pr"],
    }

    async def act(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raw = str(args.get("pr", "")).strip() if isinstance(args.get("pr"), int | str) else ""
        if not raw:
            raise ArgError("'pr' is required: a PR number or URL")
        pr = raw.lstrip("#")
        if pr.startswith(("https://", "http://")):
            kind, slug = remote_kind(pr.split("/-/merge_requests/")[0].split("/pull/")[0])
            number, scope = pr, []  # the URL names the repository
        elif pr.isdigit():
            _name, url = await self.remote(ctx)
            kind, slug = remote_kind(url)
            number = pr
            scope = ["--repo", slug if kind == "github" else slug.split("/", 1)[1]] if slug \
                else []
        else:
            raise ArgError(f"pr must be a number or a PR URL, got {raw!r}")
        exe = await self.client(ctx, kind, slug.split("/", 1)[0] if slug else None)
        env = client_env()
        if kind == "gitlab":
            if not number.isdigit():
                number = number.rstrip("/").rsplit("/", 1)[-1]
                scope = ["--repo", slug.split("/", 1)[1]] if slug else []
            view = await _run([exe, "mr", "view", number, "--comments", *scope], ctx, env,
                              CLIENT_TOKENS)
            if view.returncode != 0:
                return error(f"review_pr: `glab mr view {number}` failed: {_text(view)[-800:]}")
            diff = await _run([exe, "mr", "diff", number, *scope], ctx, env, CLIENT_TOKENS)
            header, body = f"Merge request {number}", view.stdout.decode("utf-8", "replace")
        else:
            fields = "number,title,body,author,state,baseRefName,headRefName,url,comments,reviews"
            view = await _run([exe, "pr", "view", number, "--json", fields, *scope], ctx, env,
                              CLIENT_TOKENS)
            if view.returncode != 0:
                return error(f"review_pr: `gh pr view {number}` failed: {_text(view)[-800:]}")
            diff = await _run([exe, "pr", "diff", number, *scope], ctx, env, CLIENT_TOKENS)
            try:
                info = json.loads(view.stdout)
            except ValueError:
                return error(f"review_pr: gh pr view gave no JSON: {_text(view)[-300:]}")
            header, body = describe(info)
        diff_text = diff.stdout.decode("utf-8", "replace")
        if diff.returncode != 0:
            diff_text = f"(the diff could not be read: {_text(diff)[-300:]})"
        elif len(diff_text) > MAX_DIFF_CHARS:
            diff_text = (diff_text[:MAX_DIFF_CHARS] + f"\n... (diff truncated: "
                         f"{len(diff_text) - MAX_DIFF_CHARS} more characters)")
        text = f"{body}\n\n--- diff ---\n{diff_text}".strip()
        return ToolResult(f"{header}\n\n{frame_untrusted(f'pull request {pr}', text)}",
                          metadata={"pr": pr})


def describe(info: dict[str, Any]) -> tuple[str, str]:
    """(our header line, the PR's own words: description, comments, reviews)."""
    def who(entry: Any) -> str:
        author = entry.get("author") if isinstance(entry, dict) else None
        return author.get("login", "?") if isinstance(author, dict) else "?"

    header = (f"PR #{info.get('number')}: {info.get('title', '')} ({info.get('state', '?')}) "
              f"by {who(info)}\n{info.get('url', '')}\n"
              f"{info.get('headRefName', '?')} -> {info.get('baseRefName', '?')}")
    parts = [f"Description:\n{(info.get('body') or '(none)').strip()}"]
    for entry in info.get("comments") or ():
        parts.append(f"Comment by {who(entry)}:\n{str(entry.get('body', '')).strip()}")
    for entry in info.get("reviews") or ():
        state = entry.get("state", "")
        parts.append(f"Review by {who(entry)} ({state}):\n{str(entry.get('body', '')).strip()}")
    return header, "\n\n".join(parts)


TOOLS = (CreatePrTool, ReviewPrTool)
