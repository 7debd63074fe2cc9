"""``nyz deepinit`` and ``/init-deep``: explore the project with explorer subagents and write
``AGENTS.md`` (build, test and lint commands that were run and passed; layout; conventions).

How:

1. Three ``explorer`` subagents (the built-in read-only role, through the runtime's subagent
   manager, so they show in the agent tree and the session journal) each study one part:
   the commands, the layout, the conventions. They run in parallel.
2. The commands they report, with those ``verify`` detects from the project files
   (``detect_checks``), are run once each as the ``verify`` tool runs them: through the main
   agent's gates (deny rules, trust mode, the person's approval) and its sandboxed executor.
   Only commands that exit 0 are written as verified; the rest are reported, not written.
3. The file is composed from those parts, the change shown as a unified diff, and written
   atomically, but never over an existing file unless ``force``.

The explorers' answers are model output: they are only text in the file and candidates for
``verify``, whose gates decide whether each may run.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nyzhi import records

FILE = "AGENTS.md"
KINDS = ("build", "test", "lint")
_COMMAND_LINE = re.compile(r"^\s*[-*]?\s*`?(build|test|lint)`?\s*:\s*`?([^`]+?)`?\s*$", re.I)

TASKS: dict[str, str] = {
    "commands": (
        "[deepinit:commands] Find how this project is built, tested and linted: read the "
        "README, Makefile, package.json, pyproject.toml, Cargo.toml, go.mod, CI workflows and "
        "similar. Answer with at most one line per kind, exactly in the form\n"
        "build: COMMAND\ntest: COMMAND\nlint: COMMAND\n"
        "with commands that run from the project root without network access. Leave a kind "
        "out when the project has none. No other text."
    ),
    "layout": (
        "[deepinit:layout] Describe this project's layout for a new contributor: one Markdown "
        "bullet per top-level directory or important file, `- path/: what it holds`, then a "
        "sentence on where the entry points are. At most 20 lines, no headings."
    ),
    "conventions": (
        "[deepinit:conventions] List this project's coding conventions, as Markdown bullets: "
        "language and versions, formatting and lint rules, naming, error handling, how tests "
        "are written and where they live, commit or review rules if documented. Only what "
        "the code or its docs show; at most 15 bullets, no headings."
    ),
}


class DeepInitError(Exception):
    """Why AGENTS.md was not written (one line for the person)."""


@records.frozen
class CommandCheck:
    kind: str
    command: str
    passed: bool = False
    detail: str = ""  # why it was not verified: "exit 2", "not approved: …"


@records.frozen
class DeepInitResult:
    path: Path
    text: str
    diff: list[str]
    commands: tuple[CommandCheck, ...]
    written: bool
    existed: bool


def parse_commands(report: str) -> list[tuple[str, str]]:
    """``kind: command`` lines of an explorer's answer, in order, first per kind."""
    found: dict[str, str] = {}
    for line in report.splitlines():
        m = _COMMAND_LINE.match(line)
        if m and m.group(1).lower() not in found:
            found[m.group(1).lower()] = m.group(2).strip()
    return list(found.items())


async def explore(rt: Any) -> dict[str, str]:
    """Each part's explorer answer (``""`` for one that failed), run in parallel."""
    from nyzhi.core.runtime.placement import FINAL

    tree = rt.agents
    caller = rt.main_agent.spec.path
    started = {part: (await tree.spawn(caller, task, "explorer"))["agent_id"]
               for part, task in TASKS.items()}
    pending, done = list(started.values()), {}
    while pending:  # ``wait`` returns when any of them is final
        for agent in (await tree.wait(pending))["agents"]:
            if agent["status"] in FINAL or agent["status"] == "not_found":
                done[agent["agent_id"]] = agent
                pending.remove(agent["agent_id"])
    return {part: (done[ident].get("message") or "").strip() for part, ident in started.items()}


async def verify_commands(rt: Any, candidates: list[tuple[str, str]]) -> list[CommandCheck]:
    """Run each candidate once as the ``verify`` tool would: the main agent's gates decide
    (deny rules, trust, approval), its executor runs them in the sandbox."""
    from nyzhi.tools.builtin.verify import VerifyTool

    if not candidates:
        return []
    tool = VerifyTool()
    tooling = rt.main_agent.tooling
    args = {"checks": [{"kind": k, "command": c} for k, c in candidates]}
    decision = await tooling.gates.check(tool, args, tooling.context, call_id="deepinit-verify")
    if not decision.allowed:
        return [CommandCheck(k, c, False, f"not run: {decision.reason}") for k, c in candidates]
    result = await tool.run(args, tooling.context)
    reports = result.metadata.get("checks") or []
    if len(reports) != len(candidates):  # refused before running: the result says why
        return [CommandCheck(k, c, False, f"not run: {result.output.splitlines()[0]}")
                for k, c in candidates]
    return [CommandCheck(k, c, bool(r.get("passed")),
                         "" if r.get("passed") else
                         ("timed out" if r.get("timed_out") else f"exit {r.get('exit_code')}"))
            for (k, c), r in zip(candidates, reports, strict=True)]


def candidates_from(report: str, root: Path) -> list[tuple[str, str]]:
    """The explorer's commands first, then those ``verify`` detects for kinds it left out."""
    from nyzhi.tools.builtin.verify import detect_checks

    found = parse_commands(report)
    have = {k for k, _ in found}
    for check in detect_checks(root):
        if check.kind in KINDS and check.kind not in have:
            found.append((check.kind, check.command))
            have.add(check.kind)
    return found


def compose(root: Path, reports: dict[str, str], checks: list[CommandCheck]) -> str:
    """The AGENTS.md text."""
    lines = [f"# {root.name}", "",
             "Notes for coding agents and new contributors, written by `nyz deepinit` from "
             "the code; edit freely.", "", "## Commands", ""]
    verified = [c for c in checks if c.passed]
    if verified:
        lines += ["Run from the project root (each was run and passed when this was written):",
                  ""]
        lines += [f"- {c.kind}: `{c.command}`" for c in verified]
    else:
        lines.append("No build, test or lint command could be verified.")
    for part, heading in (("layout", "Layout"), ("conventions", "Conventions")):
        text = reports.get(part, "").strip()
        lines += ["", f"## {heading}", "", text or "(the explorer found nothing to say)"]
    return "\n".join(lines).rstrip() + "\n"


def diff_lines(path: Path, old: str, new: str) -> list[str]:
    return [line.rstrip("\n") for line in difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True),
        fromfile=f"a/{path.name}" if old else "/dev/null", tofile=f"b/{path.name}")]


async def deep_init(rt: Any, root: Path, *, force: bool = False,
                    progress: Callable[[str], None] = lambda _line: None) -> DeepInitResult:
    """Explore, verify, compose; write ``root/AGENTS.md`` unless it exists (and not ``force``).
    ``progress`` hears what is happening, one line at a time."""
    import trio

    from nyzhi.config.fsutil import atomic_write

    path = root / FILE
    progress(f"exploring {root} with {len(TASKS)} explorer subagents…")
    reports = await explore(rt)
    candidates = await trio.to_thread.run_sync(candidates_from, reports["commands"], root)
    if candidates:
        progress("verifying: " + " · ".join(c for _, c in candidates))
    checks = await verify_commands(rt, candidates)
    for c in checks:
        progress(f"{'PASS' if c.passed else 'SKIP'} {c.kind}: {c.command}"
                 + (f" ({c.detail})" if c.detail else ""))
    text = compose(root, reports, checks)
    try:
        old = path.read_text(encoding="utf-8")
        existed = True
    except FileNotFoundError:
        old, existed = "", False
    diff = diff_lines(path, old, text)
    written = False
    if not existed or force:
        if diff:
            await trio.to_thread.run_sync(
                lambda: atomic_write(path, text.encode(), what="AGENTS.md"))
        written = True
    return DeepInitResult(path, text, diff, tuple(checks), written, existed)
