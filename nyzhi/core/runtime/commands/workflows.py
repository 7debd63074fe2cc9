"""Slash commands that carry a workflow: ``/review``, ``/verify``, ``/qa``, ``/handoff`` and
``/context``. Like ``builtin``, each is written once against ``CommandHost``, so the console,
the line chat and the web console all have them.

``/verify`` and ``/qa`` run the ``verify`` tool as the person typing them: through the main
agent's gates (deny rules, the sandbox, plan mode) with that person's command as the approval, since
typing ``/verify`` is asking for exactly those checks. ``/review`` starts a ``reviewer``
subagent through the subagent manager (tracked, budgeted, visible in the tree) and shows its
findings when it is done.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import trio

from nyzhi.core.runtime.commands.registry import BODY, ERROR, NOTICE, CommandHost, command

REVIEW_DIFF_LIMIT = 50_000  # characters of diff handed to the reviewer (the original's cap)
REVIEW_WAIT_MS = 3_600_000  # the reviewer's own budget stops it sooner


# ---- /review --------------------------------------------------------------------------------


@command("review", "a reviewer subagent on the working changes: /review [REF]")
async def _review(host: CommandHost, arg: str) -> None:
    rt = host.rt
    try:
        diff, what = await trio.to_thread.run_sync(review_diff, host.cwd, arg.strip())
    except ValueError as exc:
        host.show(ERROR, str(exc))
        return
    if not diff.strip():
        host.show(NOTICE, f"nothing to review: {what} is empty")
        return
    try:
        started = await rt.agents.spawn(rt.main_agent.spec.path, review_task(diff, what),
                                        "reviewer")
    except Exception as exc:  # limits, a broken role file: say why
        host.show(ERROR, f"cannot start a reviewer: {exc}")
        return
    host.show(NOTICE, f"{started['agent_nickname']} is reviewing {what}…")
    waited = await rt.agents.wait([started["agent_id"]], REVIEW_WAIT_MS)
    [state] = waited["agents"]
    final = str(state.get("message") or "").strip()
    if state.get("status") == "completed" and final:
        host.show(BODY, final)
    else:
        reason = state.get("reason") or state.get("status")
        host.show(ERROR, f"the review did not finish ({reason})")


def review_diff(cwd: Path, ref: str) -> tuple[str, str]:
    """The diff to review and what it is: the working tree against HEAD plus untracked files,
    or ``git diff REF``. Git runs neutralised (``nyzhi.tools.gitsafe``): the workspace's git
    config is writable from the sandbox."""
    from nyzhi.tools.gitsafe import EXT_DIFF_OFF, run_git

    if ref.startswith("-"):
        raise ValueError(f"/review: {ref!r} is not a git ref")
    if ref:
        proc = run_git(cwd, "diff", *EXT_DIFF_OFF, ref, "--")
        what = f"the diff against {ref}"
    else:
        proc = run_git(cwd, "diff", *EXT_DIFF_OFF, "HEAD", "--")
        if proc.returncode != 0:  # no commit yet: everything is new
            proc = run_git(cwd, "diff", *EXT_DIFF_OFF, "--cached", "--")
        what = "the working changes"
    if proc.returncode != 0:
        raise ValueError(f"/review: git diff failed: "
                         f"{(proc.stderr or b'').decode(errors='replace').strip()}")
    diff = (proc.stdout or b"").decode(errors="replace")
    if not ref:
        listed = run_git(cwd, "ls-files", "--others", "--exclude-standard", "-z")
        for name in (listed.stdout or b"").decode(errors="replace").split("\0"):
            if name:
                diff += f"\n(new untracked file: {name})"
    if len(diff) > REVIEW_DIFF_LIMIT:
        more = len(diff) - REVIEW_DIFF_LIMIT
        diff = diff[:REVIEW_DIFF_LIMIT] + f"\n… {more} more characters: read the files for them"
    return diff, what


def review_task(diff: str, what: str) -> str:
    return (
        f"Review {what} below. Check correctness first (bugs, broken edge cases, missing "
        "error handling, security), then tests, then clarity. Read the surrounding code where "
        "the diff is not enough. Report findings by severity (blocker, major, minor, nit), "
        "each with file:line and a concrete fix; say plainly if it is ready to merge. Change "
        f"nothing.\n\n```diff\n{diff}\n```"
    )


# ---- /verify, /qa -------------------------------------------------------------------------


@command("verify", "run the build, test and lint checks now (the verify tool)",
         idle_only=True)
async def _verify(host: CommandHost, _arg: str) -> None:
    passed, text = await run_verify(host.rt)
    host.show(BODY if passed else ERROR, text)


@command("qa", "run the checks; the agent fixes any that fail",
         idle_only=True)
async def _qa(host: CommandHost, _arg: str) -> None:
    passed, text = await run_verify(host.rt)
    if passed:
        host.show(BODY, text)
        return
    host.show(ERROR, text)
    host.show(NOTICE, "the agent is fixing what failed…")
    host.send_main(qa_prompt(text))


def qa_prompt(report: str) -> str:
    return (
        "QA: these checks fail. Find the cause of each failure and fix the code (not the "
        "checks, unless a check itself is wrong: then say why). Then run the verify tool "
        f"again and report what changed.\n\n{report}"
    )


async def run_verify(rt: Any) -> tuple[bool, str]:
    """Run the ``verify`` tool on the main agent's tools, approved by the person's command;
    (all passed, the report)."""
    import attrs

    from nyzhi.tools.execution import ToolCallRequest, execute_calls
    from nyzhi.tools.gates import ApprovalDecision

    async def typed_by_the_user(_request: Any) -> ApprovalDecision:
        return ApprovalDecision.approve()

    tooling = rt.main_agent.tooling
    if tooling.registry.get("verify") is None:
        return False, "/verify: the verify tool is not available to this agent"
    # plan mode holds: its promise is that nothing runs that could change the files
    gates = attrs.evolve(tooling.gates, approver=typed_by_the_user, attended=None)
    call = ToolCallRequest(f"verify-{uuid.uuid4().hex[:8]}", "verify", {})
    [outcome] = await execute_calls([call], registry=tooling.registry, gates=gates,
                                    ctx=tooling.context)
    text = tooling.redactor.redact(outcome.result.output) if tooling.redactor else \
        outcome.result.output
    return not outcome.result.is_error, text


# ---- /handoff -------------------------------------------------------------------------------


HANDOFF_PROMPT = """Write a handoff note so that another person, or a new session, can take over
this work from the note alone. Sections: Goal; What was done; Decisions and why; Open problems;
Next steps (concrete: files, commands). Be specific; no preamble."""


@command("handoff", "write a handoff note: .nyzhi/handoff-TIME.md",
         idle_only=True)
async def _handoff(host: CommandHost, _arg: str) -> None:
    rt = host.rt
    loop = rt.main_agent.loop
    if not loop.messages:
        host.show(NOTICE, "nothing to hand off yet: the conversation is empty")
        return
    from nyzhi.core.loop.compaction import summarize

    try:
        summary = await summarize(loop.provider, loop.messages, HANDOFF_PROMPT,
                                  system="You write precise handoff notes for coding work.")
        trouble = ""
    except Exception as exc:  # the note is still written: what nyz itself knows
        summary, trouble = "", f"(the model could not write the summary: {exc})"
    state = loop.state_record(loop.messages) if loop.state_record is not None else None
    text = handoff_text(rt, summary or trouble, state.render() if state is not None else "")
    # the state record quotes the thread as typed (a prompt may hold a key the model was never
    # sent): redacted like everything else nyz writes
    if rt.tooling.redactor is not None:
        text = rt.tooling.redactor.redact(text)
    root = Path(rt.tooling.context.workspace_root)
    try:
        path = await trio.to_thread.run_sync(write_handoff, root, text)
    except OSError as exc:
        host.show(ERROR, f"/handoff: {exc}")
        return
    host.show(NOTICE, f"handoff written to {path}" + (f" {trouble}" if trouble else ""))


def handoff_text(rt: Any, summary: str, state: str) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    head = [f"# Handoff: {stamp}", "",
            f"- session: {rt.session_id} (`nyz --session {rt.session_id[:8]}` continues it)",
            f"- model: {rt.provider_name}/{rt.model}", ""]
    return "\n".join([*head, summary.strip(), "", state.strip(), ""]).rstrip() + "\n"


def write_handoff(root: Path, text: str) -> Path:
    """``.nyzhi/handoff-<UTC time>.md``, written atomically; ignored by git like the rest of
    nyz's runtime files under ``.nyzhi/``."""
    from nyzhi.config.fsutil import atomic_write
    from nyzhi.config.scaffold import ignore_runtime_files

    directory = root / ".nyzhi"
    directory.mkdir(exist_ok=True)
    ignore_runtime_files(directory)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = directory / f"handoff-{stamp}.md"
    n = 1
    while path.exists():
        n += 1
        path = directory / f"handoff-{stamp}-{n}.md"
    atomic_write(path, text.encode(), what="the handoff note")
    return path


# ---- /context -------------------------------------------------------------------------------


@command("context", "what fills the context window, by part")
async def _context(host: CommandHost, _arg: str) -> None:
    host.show(BODY, context_text(host.rt.main_agent.loop.context_usage()))


def context_text(usage: Any) -> str:
    window = usage.window
    used = sum(tokens for _name, tokens, _n in usage.parts)

    from nyzhi.core.protocol import context_share

    def share(tokens: int) -> str:  # the status line's share, so the two always agree
        return context_share(tokens, window)

    lines = [f"context: ~{used:,} of {window:,} tokens ({share(used)}); compaction at "
             f"~{usage.trigger:,} ({usage.window_source or 'default'} window)"]
    width = max(len(name) for name, _t, _n in usage.parts)
    for name, tokens, count in usage.parts:
        label = f"{name} ({count})" if count else name
        lines.append(f"  {label:<{width + 7}} {tokens:>9,}  {share(tokens):>4}")
    lines.append(f"  {'free':<{width + 7}} {max(0, window - used):>9,}  "
                 f"{share(max(0, window - used)):>4}")
    if usage.largest:
        lines.append("largest messages: " + ", ".join(usage.largest))
    return "\n".join(lines)
