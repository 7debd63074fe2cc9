"""A read-only view of another executor: it runs only commands it can prove do not mutate.

The classifier is deliberately conservative (an allowlist, not a denylist): a command passes only
if every simple command in it is a known read-only program used in a read-only way, and nothing
in it can write (``>`` redirection, ``tee``) or smuggle another command in (``$(...)``,
backticks, ``<(...)``, ``eval``, ``xargs``, ``env CMD``). Anything it cannot parse is refused.
Refusals say why, so the model can pick a read-only alternative or ask for another node.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from nyzhi import records
from nyzhi.tools.executors.base import (
    DEFAULT_OUTPUT_CAP,
    CommandRefused,
    ExecResult,
    Executor,
    OutputCallback,
)

READ_ONLY_PROGRAMS = frozenset(
    """ls cat head tail wc grep egrep fgrep rg ag pwd echo printf stat file du df which whoami id
    uname hostname date ps uptime free tree diff cmp md5sum sha1sum sha256sum basename dirname
    realpath readlink test true false cut tr nl jq column lsof uniq sort find git""".split()
)

_GIT_READ_ONLY = frozenset(
    "status log diff show blame rev-parse ls-files ls-tree describe shortlog cat-file grep "
    "branch tag remote".split()
)
_GIT_BRANCH_WRITES = frozenset(
    "-d -D --delete -m -M --move -c -C --copy --set-upstream-to -u --unset-upstream "
    "--edit-description -f --force".split()
)
_FIND_WRITES = frozenset("-delete -exec -execdir -ok -okdir -fprint -fprint0 -fprintf -fls".split())
_SMUGGLING = re.compile(r"\$\(|`|<\(|>\(")
_SAFE_REDIRECT = re.compile(r"(?:\d?>\s*/dev/null|\d?>&\d)")
_SEPARATORS = re.compile(r"\|\||&&|[|;&\n]")


def classify(command: str) -> str | None:
    """None when ``command`` is read-only, else the reason it is (or may be) mutating."""
    if _SMUGGLING.search(command):
        return "it uses command or process substitution"
    if ">" in _SAFE_REDIRECT.sub("", command):
        return "it redirects output into a file"
    for segment in _SEPARATORS.split(command):
        if not segment.strip():
            continue
        try:
            words = shlex.split(segment, comments=True)
        except ValueError as exc:
            return f"it cannot be parsed ({exc})"
        if not words:
            continue
        reason = _classify_simple(words)
        if reason:
            return reason
    return None


def _classify_simple(words: list[str]) -> str | None:
    prog = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if "=" in words[0]:
        return "it sets environment variables for a command"
    if prog not in READ_ONLY_PROGRAMS:
        return f"`{prog}` is not on the read-only allowlist"
    if prog == "find" and (bad := _FIND_WRITES.intersection(args)):
        return f"`find {sorted(bad)[0]}` can modify or run things"
    if prog == "sort" and any(a == "-o" or a.startswith(("-o", "--output")) for a in args):
        return "`sort -o` writes a file"
    if prog == "uniq" and len([a for a in args if not a.startswith("-")]) > 1:
        return "`uniq IN OUT` writes a file"
    if prog == "git":
        return _classify_git(args)
    return None


def _classify_git(args: list[str]) -> str | None:
    from nyzhi.tools.gitsafe import LIST_DRIVERS, strip_safe_prefix

    args = strip_safe_prefix(args)  # the git tools' neutralising overrides (run nothing)
    if tuple(args) == LIST_DRIVERS:  # the git tools' read-only listing of drivers
        return None
    sub = next((a for a in args if not a.startswith("-")), None)
    if any(a.startswith(("-c", "--exec-path", "--output")) for a in args):
        return "git options that run programs or write files are not allowed"
    if sub not in _GIT_READ_ONLY:
        return f"`git {sub}` is not a read-only git command"
    rest = args[args.index(sub) + 1 :]
    if sub == "branch" and (
        _GIT_BRANCH_WRITES.intersection(rest) or any(not a.startswith("-") for a in rest)
    ):
        return "`git branch` with a name or a modifying flag changes branches"
    if sub == "tag" and any(not a.startswith("-") or a in ("-d", "-a", "-s", "-f") for a in rest):
        return "`git tag` with a name creates or deletes tags"
    if sub == "remote" and any(not a.startswith("-") for a in rest):
        return "`git remote` subcommands change remotes"
    return None


@records.define
class MonitoredExecutor:
    """Wraps ``inner`` and refuses every command the classifier cannot prove read-only."""

    inner: Executor
    monitored: bool = True  # ``[[nodes]] mode = "monitored"``: team members cannot run here

    @property
    def remote(self) -> bool:
        return bool(getattr(self.inner, "remote", False))

    async def run(
        self,
        command: str,
        *,
        cwd: Path | str,
        env: dict[str, str] | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 (the command's limit, part of the protocol)
        on_output: OutputCallback | None = None,
        sandbox: object | None = None,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        mutating: bool | None = None,
    ) -> ExecResult:
        reason = "the caller marked it as mutating" if mutating else classify(command)
        if reason:
            raise CommandRefused(
                f"refused by the monitored executor (read-only node): {command!r} may change "
                f"state because {reason}. Only read-only commands (ls, cat, grep, find without "
                "-delete/-exec, git status/log/diff/show, ...) run here."
            )
        return await self.inner.run(
            command,
            cwd=cwd,
            env=env,
            timeout=timeout,
            on_output=on_output,
            sandbox=sandbox,
            output_cap=output_cap,
            mutating=mutating,
        )
