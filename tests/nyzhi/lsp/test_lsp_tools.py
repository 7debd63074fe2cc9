"""The lsp_* tools and diagnostics after edits, against real language servers (basedpyright,
typescript-language-server): definitions, references, hover, rename through the write path,
new errors after an edit, a server killed mid-request, sharing, and no server at all."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
from pathlib import Path

import attrs
import pytest
import trio
import trio.testing
from _lsp_projects import PY_MAIN

import actors
from nyzhi.config.modes import TrustMode
from nyzhi.config.schema import LspConfig, LspServerConfig
from nyzhi.core.runtime.lsp import LspPool
from nyzhi.tools.base import SandboxLevel, ToolContext
from nyzhi.tools.execution import ToolCallRequest, execute_calls
from nyzhi.tools.gates import Gates, TrustPolicy
from nyzhi.tools.ledger import FileLedger
from nyzhi.tools.registry import default_registry
from nyzhi.tools.sandbox import SandboxPolicy
from nyzhi.tools.undo import undo_last

FULL = Gates(trust=TrustPolicy(mode=TrustMode.FULL))
REGISTRY = default_registry()
# A generous bound for the tests: a loaded CI machine analyses slower than a laptop.
SLOW_OK = LspConfig(diagnostics_wait=30.0)
# typescript-language-server does not say which version it checked, and publishes nothing
# when an edit changes no diagnostic: a clean edit waits out the bound, so it is shorter.
TS_WAIT = LspConfig(diagnostics_wait=8.0)


@contextlib.asynccontextmanager
async def pool_for(ws: Path, env: dict[str, str], config: LspConfig = SLOW_OK):
    async with actors.open_system(name="lsp-test") as system:
        yield await LspPool.open(system, config, workspace=ws, env=env)


def ctx_for(ws: Path, pool: LspPool, agent: str = "/agents/main") -> ToolContext:
    return ToolContext(
        workspace_root=ws, cwd=ws, lsp=pool, agent_path=agent, seen=FileLedger(),
        sandbox=SandboxPolicy(SandboxLevel.WORKSPACE_WRITE, ws, allow_temp=False),
        trust=TrustPolicy(mode=TrustMode.FULL),
    )


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


async def call(ctx: ToolContext, name: str, **args):
    [outcome] = await execute_calls([ToolCallRequest("c1", name, args)], registry=REGISTRY,
                                    gates=FULL, ctx=ctx)
    return outcome.result


async def read(ctx: ToolContext, path: str) -> None:
    """The agent reads a file before editing it (the stale-write guard wants that)."""
    result = await call(ctx, "read", file_path=path)
    assert not result.is_error, result.output


# -- Python ------------------------------------------------------------------------------------

async def test_python_definition_references_hover(py_project, pyright, lsp_env):
    async with pool_for(py_project, lsp_env) as pool:
        ctx = ctx_for(py_project, pool)
        found = await call(ctx, "lsp_goto_definition", file="main.py", line=3, column=7)
        assert not found.is_error, found.output
        assert found.output == "shapes.py:9:5: def total_area(circles: list[Circle]) -> float:"
        # symbol instead of a position
        by_name = await call(ctx, "lsp_goto_definition", file="main.py", symbol="Circle")
        assert by_name.output.startswith("shapes.py:1:7: class Circle:")

        refs = await call(ctx, "lsp_find_references", file="shapes.py", symbol="Circle")
        assert refs.output.splitlines() == [
            "5 references:",
            "main.py:1:20: from shapes import Circle, total_area",
            "main.py:3:19: print(total_area([Circle(1.0), Circle(2.0)]))",
            "main.py:3:32: print(total_area([Circle(1.0), Circle(2.0)]))",
            "shapes.py:1:7: class Circle:",
            "shapes.py:9:30: def total_area(circles: list[Circle]) -> float:",
        ]
        hover = await call(ctx, "lsp_hover", file="shapes.py", symbol="total_area")
        assert "def total_area(circles: list[Circle]) -> float" in hover.output
        outline = await call(ctx, "lsp_symbols", file="shapes.py")
        assert "shapes.py:1: class Circle" in outline.output
        assert "shapes.py:9: function total_area" in outline.output


async def test_python_rename_goes_through_the_write_path(py_project, pyright, lsp_env):
    async with pool_for(py_project, lsp_env) as pool:
        ctx = ctx_for(py_project, pool)
        result = await call(ctx, "lsp_rename", file="shapes.py", symbol="total_area",
                            new_name="sum_of_areas")
        assert not result.is_error, result.output
        assert result.output.startswith("Renamed to sum_of_areas in 2 files")
        assert "def sum_of_areas(circles" in (py_project / "shapes.py").read_text()
        assert (py_project / "main.py").read_text() == PY_MAIN_RENAMED
        # the agent has seen what it wrote: an edit right after passes the stale-write guard
        edited = await call(ctx, "edit", file_path="main.py", old_string="Circle(2.0)",
                            new_string="Circle(3.0)")
        assert not edited.is_error, edited.output
        # one /undo per call: the edit, then the whole rename
        undo_last(ctx.changes)
        undo_last(ctx.changes)
        assert "def total_area(" in (py_project / "shapes.py").read_text()
        assert "total_area([Circle(1.0), Circle(2.0)])" in (py_project / "main.py").read_text()


PY_MAIN_RENAMED = '''\
from shapes import Circle, sum_of_areas

print(sum_of_areas([Circle(1.0), Circle(2.0)]))
'''


async def test_rename_refuses_a_denied_file_and_writes_nothing(py_project, pyright, lsp_env):
    async with pool_for(py_project, lsp_env) as pool:
        ctx = attrs.evolve(ctx_for(py_project, pool), trust=TrustPolicy(
            mode=TrustMode.FULL, deny_paths=("main.py",)))
        before = {p: p.read_bytes() for p in py_project.glob("*.py")}
        result = await call(ctx, "lsp_rename", file="shapes.py", symbol="Circle",
                            new_name="Disc")
        assert result.is_error and "deny_paths" in result.output and "main.py" in result.output
        assert {p: p.read_bytes() for p in py_project.glob("*.py")} == before
        assert ctx.changes.changes == []


async def test_an_edit_that_breaks_a_type_reports_it_and_the_fix_clears_it(
        py_project, pyright, lsp_env):
    async with pool_for(py_project, lsp_env) as pool:
        ctx = ctx_for(py_project, pool)
        await read(ctx, "main.py")
        broken = await call(ctx, "edit", file_path="main.py", old_string="Circle(2.0)",
                            new_string='Circle("two")')
        assert not broken.is_error
        note = broken.output.split("\n\n", 1)[1]
        assert note.startswith("[lsp] 1 new error after this change:")
        assert 'main.py:3:39: error: Argument of type "Literal[\'two\']"' in note
        assert broken.metadata["lsp_new_errors"] is True

        fixed = await call(ctx, "edit", file_path="main.py", old_string='Circle("two")',
                           new_string="Circle(2.0)")
        assert not fixed.is_error and "[lsp]" not in fixed.output
        clean = await call(ctx, "lsp_diagnostics", file="main.py")
        assert clean.output == "main.py: no problems reported"


async def test_only_new_errors_are_reported(py_project, pyright, lsp_env):
    (py_project / "main.py").write_text(PY_MAIN + 'x: int = "old"\n')
    async with pool_for(py_project, lsp_env) as pool:
        ctx = ctx_for(py_project, pool)
        await read(ctx, "main.py")
        old = await call(ctx, "lsp_diagnostics", file="main.py")
        assert 'main.py:4:10: error: Type "Literal[\'old\']"' in old.output
        # an unrelated change: the old error is still there, and is not reported again
        quiet = await call(ctx, "edit", file_path="main.py", old_string="Circle(2.0)",
                           new_string="Circle(4.0)")
        assert "[lsp]" not in quiet.output
        loud = await call(ctx, "write", file_path="main.py",
                          content=PY_MAIN + 'x: int = "old"\ny: str = 5\n')
        assert "[lsp] 1 new error" in loud.output and "main.py:5:10" in loud.output
        everything = await call(ctx, "lsp_diagnostics")
        assert everything.output.startswith("2 problems (2 errors) in the files the servers ")
        assert "main.py:4:10: error" in everything.output
        assert "main.py:5:10: error" in everything.output


async def test_diagnostics_after_edit_can_be_turned_off(py_project, pyright, lsp_env):
    config = attrs.evolve(SLOW_OK, diagnostics_after_edit=False)
    async with pool_for(py_project, lsp_env, config) as pool:
        ctx = ctx_for(py_project, pool)
        await read(ctx, "main.py")
        result = await call(ctx, "edit", file_path="main.py", old_string="Circle(2.0)",
                            new_string='Circle("two")')
        assert not result.is_error and "[lsp]" not in result.output
        assert pool.links == {}  # nothing was started for it


# -- TypeScript --------------------------------------------------------------------------------

async def test_typescript_definition_references_hover_rename(ts_project, ts_server, lsp_env):
    async with pool_for(ts_project, lsp_env, TS_WAIT) as pool:
        ctx = ctx_for(ts_project, pool)
        found = await call(ctx, "lsp_goto_definition", file="main.ts", symbol="totalArea",
                           line=3)
        assert found.output == (
            "shapes.ts:9:17: export function totalArea(circles: Circle[]): number {")
        refs = await call(ctx, "lsp_find_references", file="shapes.ts", symbol="Circle")
        lines = refs.output.splitlines()
        assert lines[0] == "5 references:"
        assert "main.ts:1:10: import { Circle, totalArea } from \"./shapes\";" in lines
        assert "shapes.ts:1:14: export class Circle {" in lines
        hover = await call(ctx, "lsp_hover", file="main.ts", symbol="totalArea", line=3)
        assert "totalArea(circles: Circle[]): number" in hover.output

        renamed = await call(ctx, "lsp_rename", file="shapes.ts", symbol="totalArea",
                             new_name="sumAreas")
        assert not renamed.is_error, renamed.output
        assert "export function sumAreas(" in (ts_project / "shapes.ts").read_text()
        assert "import { Circle, sumAreas }" in (ts_project / "main.ts").read_text()
        assert "sumAreas([new Circle(1)" in (ts_project / "main.ts").read_text()


async def test_typescript_edit_reports_a_type_error(ts_project, ts_server, lsp_env):
    async with pool_for(ts_project, lsp_env, TS_WAIT) as pool:
        ctx = ctx_for(ts_project, pool)
        await read(ctx, "main.ts")
        # the project loaded (seconds on a busy machine): the bound is the edit's alone
        clean = await call(ctx, "lsp_diagnostics", file="main.ts")
        assert clean.output == "main.ts: no problems reported"
        broken = await call(ctx, "edit", file_path="main.ts", old_string="new Circle(2)",
                            new_string='new Circle("2")')
        assert "[lsp] 1 new error" in broken.output
        assert "main.ts:3:60: error: Argument of type 'string'" in broken.output
        fixed = await call(ctx, "edit", file_path="main.ts", old_string='new Circle("2")',
                           new_string="new Circle(2)")
        assert "[lsp]" not in fixed.output
        assert (await call(ctx, "lsp_diagnostics", file="main.ts")).output == (
            "main.ts: no problems reported")


# -- the pool ----------------------------------------------------------------------------------

async def test_two_agents_share_one_server_process(py_project, pyright, lsp_env):
    async with pool_for(py_project, lsp_env) as pool:
        main = ctx_for(py_project, pool)
        worker = attrs.evolve(main, agent_path="/agents/main/worker")
        async with trio.open_nursery() as nursery:
            for ctx in (main, worker):
                nursery.start_soon(functools.partial(
                    call, ctx, "lsp_hover", file="main.py", symbol="total_area"))
        [link] = pool.links.values()
        pid = link.pid
        assert (await call(worker, "lsp_goto_definition", file="main.py", symbol="Circle")
                ).output.startswith("shapes.py:1:7")
        assert [x.pid for x in pool.links.values()] == [pid]
        assert link.restarts == 0


async def test_server_killed_mid_request_is_a_clear_error_then_restarts(
        py_project, pyright, lsp_env):
    async with pool_for(py_project, lsp_env) as pool:
        ctx = ctx_for(py_project, pool)
        assert not (await call(ctx, "lsp_hover", file="main.py", symbol="Circle")).is_error
        [link] = pool.links.values()
        first = link.pid
        os.kill(first, signal.SIGSTOP)  # it cannot answer now: the next request stays pending
        results = []

        async def ask() -> None:
            results.append(await call(ctx, "lsp_goto_definition", file="main.py",
                                      symbol="total_area"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask)
            with trio.fail_after(30):
                # (a task waiting on a worker thread counts as blocked: look again until the
                # request is out; the stopped server cannot answer it)
                while not link.client.rpc._pending:
                    await trio.testing.wait_all_tasks_blocked()
            os.killpg(first, signal.SIGKILL)
        [failed] = results
        assert failed.is_error
        assert failed.output.startswith("the language server went away during "
                                        "lsp_definition")
        assert "it is being restarted, so the call can be retried" in failed.output
        again = await call(ctx, "lsp_goto_definition", file="main.py", symbol="total_area")
        assert not again.is_error, again.output
        assert again.output.startswith("shapes.py:9:5")
        assert link.pid not in (None, first) and link.restarts == 1


async def test_no_server_on_path_says_so_and_suggests_grep(workspace, tmp_path):
    (workspace / "main.go").write_text("package main\n\nfunc main() {}\n")
    (workspace / "notes.txt").write_text("plain text\n")
    env = {"PATH": str(tmp_path / "empty"), "HOME": os.environ["HOME"]}
    async with pool_for(workspace, env) as pool:
        ctx = ctx_for(workspace, pool)
        result = await call(ctx, "lsp_goto_definition", file="main.go", symbol="main")
        assert result.is_error
        assert result.output == (
            "no language server for go files (looked for gopls on PATH); to get one: go "
            "install golang.org/x/tools/gopls@latest, or configure [lsp.NAME]. Use grep to "
            "find definitions and references meanwhile.")
        other = await call(ctx, "lsp_hover", file="notes.txt", line=1, column=1)
        assert other.is_error and "no language server handles '.txt' files" in other.output
        assert "use grep" in other.output
        # an edit of such a file just happens, with nothing appended
        await read(ctx, "main.go")
        edited = await call(ctx, "edit", file_path="main.go", old_string="func main() {}",
                            new_string="func main() { }")
        assert not edited.is_error and "[lsp]" not in edited.output


async def test_a_configured_command_that_is_missing_names_it(py_project, lsp_env):
    config = attrs.evolve(SLOW_OK, servers={"pyright": LspServerConfig(
        command="no-such-langserver", args=("--stdio",))})
    async with pool_for(py_project, lsp_env, config) as pool:
        ctx = ctx_for(py_project, pool)
        result = await call(ctx, "lsp_diagnostics", file="main.py")
        assert result.is_error
        assert "looked for no-such-langserver on PATH" in result.output


async def test_without_a_pool_the_tools_say_so(py_project):
    ctx = ToolContext(workspace_root=py_project, cwd=py_project)
    result = await call(ctx, "lsp_find_references", file="main.py", symbol="Circle")
    assert result.is_error and "use grep" in result.output


@pytest.mark.parametrize("args, message", [
    ({"file": "main.py"}, "give line and column (1-based), or symbol"),
    ({"file": "main.py", "symbol": "nowhere"}, "`nowhere` does not occur in main.py"),
    ({"file": "missing.py", "line": 1}, "missing.py: no such file"),
    ({"file": "main.py", "line": 99, "column": 1}, "main.py has no line 99"),
])
async def test_bad_positions_are_plain_errors(py_project, pyright, lsp_env, args, message):
    async with pool_for(py_project, lsp_env) as pool:
        result = await call(ctx_for(py_project, pool), "lsp_goto_definition", **args)
        assert result.is_error and message in result.output, result.output


async def test_an_idle_server_stops_and_starts_again_on_next_use(py_project, pyright, lsp_env):
    config = attrs.evolve(SLOW_OK, idle_timeout=0.5)
    async with pool_for(py_project, lsp_env, config) as pool:
        ctx = ctx_for(py_project, pool)
        assert not (await call(ctx, "lsp_hover", file="main.py", symbol="Circle")).is_error
        [link] = pool.links.values()
        first = link.pid
        with trio.fail_after(60):
            while link.status != "stopped":
                await link._changed.wait()
        assert link.reason == "stopped after 0.5 s unused"
        assert not alive(first)
        again = await call(ctx, "lsp_goto_definition", file="main.py", symbol="Circle")
        assert again.output.startswith("shapes.py:1:7")
        [fresh] = pool.links.values()
        assert fresh is not link and fresh.pid not in (None, first)


async def test_files_changed_outside_nyz_are_synced_before_a_question(
        py_project, pyright, lsp_env):
    async with pool_for(py_project, lsp_env) as pool:
        ctx = ctx_for(py_project, pool)
        assert not (await call(ctx, "lsp_hover", file="shapes.py", symbol="Circle")).is_error
        # a command (not our tools) renames the function in both files, and adds a line
        for name in ("shapes.py", "main.py"):
            path = py_project / name
            path.write_text("# moved\n" + path.read_text().replace("total_area", "grand_total"))
        found = await call(ctx, "lsp_goto_definition", file="main.py", symbol="grand_total")
        assert found.output == "shapes.py:10:5: def grand_total(circles: list[Circle]) -> float:"


async def test_a_server_that_keeps_crashing_is_marked_failed(py_project, lsp_env):
    from nyzhi.core.runtime.server_supervision import Intensity

    script = "echo 'cannot find my runtime' >&2; exit 3"
    config = attrs.evolve(SLOW_OK, servers={"pyright": LspServerConfig(
        command="/bin/sh", args=("-c", script))})
    quick = Intensity(max_restarts=2, within=60.0,
                      backoff=actors.Backoff(initial=0.01, maximum=0.01, factor=1.0))
    async with actors.open_system(name="lsp-test") as system:
        pool = await LspPool.open(system, config, workspace=py_project, env=lsp_env,
                                  intensity=quick)
        text, failed = await pool.ask("hover", path=py_project / "main.py", symbol="Circle")
        assert failed
        assert text.startswith("language server pyright (") and " is failed: gave up after 2 " \
            "restarts in 60 s; last error: " in text
        assert "its last stderr line: cannot find my runtime" in text
        assert text.endswith("Use grep meanwhile.")
        [link] = pool.links.values()
        assert link.status == "failed"
        again, _ = await pool.ask("hover", path=py_project / "main.py", symbol="Circle")
        assert again == text  # not started again: failed for the rest of the session


async def test_a_deleted_file_is_closed_and_its_errors_forgotten(py_project, pyright, lsp_env):
    (py_project / "broken.py").write_text('x: int = "no"\n')
    async with pool_for(py_project, lsp_env) as pool:
        ctx = ctx_for(py_project, pool)
        assert "broken.py:1:10: error" in (
            await call(ctx, "lsp_diagnostics", file="broken.py")).output
        await read(ctx, "broken.py")
        assert not (await call(ctx, "delete_file", path="broken.py")).is_error
        await call(ctx, "lsp_hover", file="main.py", symbol="Circle")  # a question syncs
        assert "broken.py" not in (await call(ctx, "lsp_diagnostics")).output
