"""``verify``: run the project's build, test and lint checks and report pass/fail per check.

Unlike the original (which ran model-supplied commands without approval), verify is a
needs-approval tool that declares every command it will run (``target_commands``), so the gates
treat it exactly like bash: deny rules see each command, the approval prompt lists them, the
sandbox confines them with bwrap, and trust modes approve it only as they would approve
``verify`` by name (autoedit does not: it runs commands, it does not edit files).

With no ``checks`` given, commands are detected from the workspace root: Cargo.toml, package.json
scripts, go.mod, pyproject.toml / pytest configuration, and Makefile targets (``build``, ``test``,
``lint``) for the kinds the language files did not cover.
"""

from __future__ import annotations

import json
import re
import time
import tomllib
from pathlib import Path
from typing import Any, ClassVar

import attrs

from nyzhi import records
from nyzhi.tools.base import Permission, Tool, ToolContext, ToolResult
from nyzhi.tools.builtin.bash import run_command
from nyzhi.tools.builtin.common import ArgError
from nyzhi.tools.offload import run_blocking

KINDS = ("build", "test", "lint", "custom")
CHECK_TIMEOUT = 600.0
TAIL_CHARS = 2000


@records.frozen
class Check:
    kind: str
    command: str


def _python(root: Path) -> str:
    for candidate in (".venv/bin/python", "venv/bin/python"):
        if (root / candidate).exists():
            return candidate
    return "python3"


def _make_targets(makefile: Path) -> set[str]:
    try:
        text = makefile.read_text(errors="replace")
    except OSError:
        return set()
    return set(re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", text, flags=re.M))


def detect_checks(root: Path) -> list[Check]:
    """Build, test and lint commands for the project at ``root`` (may be empty)."""
    root = Path(root)
    checks: list[Check] = []
    if (root / "Cargo.toml").exists():
        checks += [
            Check("build", "cargo check"),
            Check("test", "cargo test"),
            Check("lint", "cargo clippy -- -D warnings"),
        ]
    if (root / "package.json").exists():
        try:
            scripts = json.loads((root / "package.json").read_text()).get("scripts") or {}
        except (OSError, ValueError, AttributeError):
            scripts = {}
        if "build" in scripts:
            checks.append(Check("build", "npm run build"))
        test = scripts.get("test", "")
        if test and "no test specified" not in test:
            checks.append(Check("test", "npm test"))
        if "lint" in scripts:
            checks.append(Check("lint", "npm run lint"))
        elif (root / "node_modules/.bin/eslint").exists():
            checks.append(Check("lint", "npx eslint ."))
    if (root / "go.mod").exists():
        checks += [
            Check("build", "go build ./..."),
            Check("test", "go test ./..."),
            Check("lint", "go vet ./..."),
        ]
    pyproject = root / "pyproject.toml"
    py_markers = ("setup.py", "setup.cfg", "pytest.ini", "tox.ini")
    if pyproject.exists() or any((root / m).exists() for m in py_markers):
        py = _python(root)
        checks.append(Check("test", f"{py} -m pytest -q"))
        try:
            config = tomllib.loads(pyproject.read_text()) if pyproject.exists() else {}
        except (OSError, tomllib.TOMLDecodeError):
            config = {}
        if "ruff" in config.get("tool", {}) or (root / "ruff.toml").exists():
            checks.append(Check("lint", f"{py} -m ruff check ."))
    makefile = next(
        (root / n for n in ("Makefile", "makefile", "GNUmakefile") if (root / n).exists()), None
    )
    if makefile is not None:
        targets = _make_targets(makefile)
        covered = {c.kind for c in checks}
        for kind in ("build", "test", "lint"):
            if kind in targets and kind not in covered:
                checks.append(Check(kind, f"make {kind}"))
    return checks


def parse_checks(args: dict[str, Any]) -> list[Check] | None:
    """The model's checks, or None to detect. Raises ``ArgError`` with what is wrong."""
    raw = args.get("checks")
    if raw in (None, []):
        return None
    if not isinstance(raw, list):
        raise ArgError("'checks' must be an array of {kind, command} objects")
    checks = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("command"), str):
            raise ArgError(f"checks[{i}] must be an object with a string 'command'")
        kind = item.get("kind", "custom")
        if kind not in KINDS:
            raise ArgError(f"checks[{i}].kind must be one of {', '.join(KINDS)}, got {kind!r}")
        if not item["command"].strip():
            raise ArgError(f"checks[{i}].command must not be empty")
        checks.append(Check(kind, item["command"]))
    return checks


class VerifyTool(Tool):
    name = "verify"
    description = (
        "Run the project's build, test and lint checks and report PASS or FAIL for each, with "
        "the end of a failing check's output. Without checks it detects them: Cargo, npm "
        "scripts, Go, pytest and ruff, Makefile build/test/lint targets. Pass checks to run "
        "specific commands (one test file, say). Commands run like bash: sandboxed, needing "
        "approval, at most 600 s each."
    )
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "checks": {
                "type": "array",
                "description": "Checks to run instead of the detected ones.",
                "items": {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "enum": list(KINDS), "description": "What the check is."},
                        "command": {"type": "string", "description": "Shell command to run."},
                    },
                    "required": ["kind", "command"],
                },
            },
        },
    }
    permission = Permission.NEEDS_APPROVAL
    runs_sandboxed: ClassVar[bool] = True
    supports_node = True  # the registry adds ``node`` (an enum of them) when nodes are configured

    def checks_for(self, args: dict[str, Any], ctx: ToolContext) -> list[Check]:
        given = parse_checks(args)
        return given if given is not None else detect_checks(Path(ctx.workspace_root))

    def target_commands(self, args: dict[str, Any], ctx: ToolContext) -> list[str]:
        return [c.command for c in self.checks_for(args, ctx)]

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        from nyzhi.tools.executors import ExecutorError
        from nyzhi.tools.sandbox import SandboxError, network_hint

        try:  # detection reads the project's files: off the trio thread
            checks = await run_blocking(self.checks_for, args, ctx)
        except ArgError as exc:
            return ToolResult(str(exc), is_error=True)
        if not checks:
            return ToolResult(
                "No checks detected (no Cargo.toml, package.json scripts, go.mod, pyproject.toml "
                "or Makefile build/test/lint targets). Pass 'checks' explicitly.",
                is_error=True,
            )
        lines, reports, failed = [], [], 0
        for check in checks:
            started = time.monotonic()
            try:
                res, meta = await run_command(
                    check.command,
                    ctx,
                    limit=CHECK_TIMEOUT,
                    node=args.get("node"),
                    header=f"$ {check.command}\n",
                )
            except (ArgError, SandboxError, ExecutorError) as exc:
                return ToolResult(str(exc), is_error=True)
            elapsed = time.monotonic() - started
            passed = res.exit_code == 0 and not res.timed_out
            failed += not passed
            status = "PASS" if passed else ("TIMEOUT" if res.timed_out else "FAIL")
            lines.append(
                f"{status} {check.kind}: {check.command} (exit {res.exit_code}, {elapsed:.1f} s)"
            )
            if not passed:
                tail = res.output[-TAIL_CHARS:]
                lines.append("  " + tail.rstrip().replace("\n", "\n  "))
                if hint := network_hint(ctx.sandbox, res.output, res.sandboxed):
                    lines.append("  " + hint)
            reports.append(
                {**attrs.asdict(check), **meta, "passed": passed, "elapsed_ms": int(elapsed * 1000)}
            )
        summary = f"{len(checks) - failed}/{len(checks)} checks passed"
        return ToolResult(
            summary + "\n" + "\n".join(lines),
            is_error=failed > 0,
            metadata={"checks": reports, "passed": failed == 0},
        )


TOOLS = (VerifyTool,)
