"""Code intelligence from real language servers: lsp_diagnostics, lsp_goto_definition,
lsp_find_references, lsp_hover, lsp_rename and lsp_symbols (issue 36).

The servers run in the runtime's pool (``ctx.lsp``, ``nyzhi.core.runtime.lsp.LspPool``); these tools
check their arguments, ask the pool and hand back its short ``path:line`` lines. A file whose
language has no server gets a plain sentence saying so, and to use grep.

``lsp_rename`` writes through the same path as ``edit``: the sandbox, deny rules, protected
paths and approval for every file the rename touches, write leases on all of them, one undo
batch, and a compare-and-swap against the text the server computed the rename on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nyzhi.config.paths import display_path
from nyzhi.tools.base import Permission, ToolContext, ToolResult
from nyzhi.tools.builtin.common import ArgError, BuiltinTool, error, opt_int, opt_str, req_str
from nyzhi.tools.builtin.files_write import Step, _PlanningTool, diff_steps
from nyzhi.tools.paths import check_read, resolve_arg

NO_POOL = ("language servers are not available in this run; use grep to find definitions "
           "and references")

_FILE = {"type": "string", "description": "source file"}
_LINE = {"type": "integer", "description": "1-based"}
_COLUMN = {"type": "integer", "description": "1-based"}
_SYMBOL = {"type": "string", "description": "identifier, instead of line/column"}
POSITION = {"file": _FILE, "line": _LINE, "column": _COLUMN, "symbol": _SYMBOL}


def _path(ctx: ToolContext, args: dict[str, Any], *, required: bool = True) -> Path | None:
    raw = args.get("file")
    if raw in (None, "") and not required:
        return None
    path = resolve_arg(ctx, raw, arg="file")
    real = check_read(ctx, path)
    if not real.is_file():
        raise ArgError(f"{display_path(path, ctx.cwd)}: no such file; check the path with glob")
    return real


def _position(args: dict[str, Any]) -> dict[str, Any]:
    line = opt_int(args, "line", 0, minimum=1) or None
    column = opt_int(args, "column", 0, minimum=1) or None
    symbol = opt_str(args, "symbol")
    if symbol is None and line is None:
        raise ArgError("give line and column (1-based), or symbol")
    return {"line": line, "column": column, "symbol": symbol}


class _LspTool(BuiltinTool):
    op: str

    async def ask(self, ctx: ToolContext, **kw: Any) -> ToolResult:
        if ctx.lsp is None:
            return error(NO_POOL)
        text, failed = await ctx.lsp.ask(self.op, **kw)
        return ToolResult(text, is_error=failed)

    def target_paths(self, args: dict[str, Any]) -> list[str]:
        return [args["file"]] if isinstance(args.get("file"), str) and args["file"] else []


class LspGotoDefinition(_LspTool):
    name = "lsp_goto_definition"
    op = "definition"
    description = (
        "Where a symbol is defined, from the language server (exact, unlike grep). Give file "
        "and line/column, or file and symbol."
    )
    parameters = {"type": "object", "properties": POSITION, "required": ["file"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self.ask(ctx, path=_path(ctx, args), **_position(args))


class LspFindReferences(_LspTool):
    name = "lsp_find_references"
    op = "references"
    description = (
        "Every use of a symbol in the project, from the language server. Give file and "
        "line/column, or file and symbol."
    )
    parameters = {"type": "object", "properties": POSITION, "required": ["file"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self.ask(ctx, path=_path(ctx, args), **_position(args))


class LspHover(_LspTool):
    name = "lsp_hover"
    op = "hover"
    deferred = True
    description = (
        "The type and documentation of a symbol, from the language server. Give file plus line "
        "and column (1-based), or file plus symbol."
    )
    parameters = {"type": "object", "properties": POSITION, "required": ["file"]}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self.ask(ctx, path=_path(ctx, args), **_position(args))


class LspDiagnostics(_LspTool):
    name = "lsp_diagnostics"
    op = "diagnostics"
    deferred = True
    description = (
        "Errors and warnings the language server reports for a file (or, without file, for "
        "every file the servers have seen): path:line: severity: message lines."
    )
    parameters = {"type": "object", "properties": {
        "file": {"type": "string", "description": "The file to check; omit for the workspace."},
    }}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await self.ask(ctx, path=_path(ctx, args, required=False))


class LspSymbols(_LspTool):
    name = "lsp_symbols"
    op = "symbols"
    deferred = True
    description = (
        "Symbols from the language server: a file's outline (classes, functions, methods, "
        "with lines), or with query the workspace's symbols matching it."
    )
    parameters = {"type": "object", "properties": {
        "file": {"type": "string", "description": "File to outline (or whose server to ask)."},
        "query": {"type": "string", "description": "Search the workspace's symbols instead."},
    }}

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = _path(ctx, args, required=False)
        query = opt_str(args, "query")
        if path is None and query is None:
            raise ArgError("give file (its outline) or query (workspace symbols)")
        return await self.ask(ctx, path=path, query=query)


class LspRename(_PlanningTool, _LspTool):
    name = "lsp_rename"
    op = "rename"
    deferred = True
    permission = Permission.NEEDS_APPROVAL
    writes_files = True
    description = (
        "Rename a symbol everywhere it is used, as the language server resolves it (not a text "
        "replace): every file changes in one step, undone by one /undo. Give file plus line "
        "and column (1-based), or file plus symbol, and new_name."
    )
    parameters = {"type": "object", "properties": {
        **POSITION, "new_name": {"type": "string", "description": "The new identifier."},
    }, "required": ["file", "new_name"]}

    async def _texts(self, args: dict[str, Any], ctx: ToolContext) -> dict[Path, tuple[str, str]]:
        if ctx.lsp is None:
            raise ArgError(NO_POOL)
        new_name = req_str(args, "new_name")
        texts, failed = await ctx.lsp.ask(self.op, path=_path(ctx, args), new_name=new_name,
                                          **_position(args))
        if failed:
            raise ArgError(texts)
        return texts

    def plan(self, args: dict[str, Any], ctx: ToolContext) -> list[Step]:
        from nyzhi.tools.builtin.files_write import read_existing

        steps = []
        for path, (base, new) in args["_texts"].items():
            before = read_existing(ctx, path)
            if before is None or before.decode("utf-8", "replace") != base:
                raise ArgError(f"{display_path(path, ctx.cwd)} changed while the rename was worked out; "
                               "nothing was written: run lsp_rename again")
            steps.append(Step(path=path, before=before, after=new.encode("utf-8")))
        return steps

    def summary(self, ctx: ToolContext, steps: list[Step], args: dict[str, Any]) -> str:
        names = ", ".join(display_path(s.path, ctx.cwd) for s in steps)
        n = len(steps)
        return f"Renamed to {args.get('new_name')} in {n} file{'s' if n != 1 else ''}: {names}"

    def _refusal(self, ctx: ToolContext, paths: list[Path]) -> str | None:
        """The gates' path checks for the files the server added to the call's own file."""
        from nyzhi.config.modes import TrustMode
        from nyzhi.tools.gates import path_denied

        ws = Path(os.path.realpath(ctx.workspace_root))
        for path in paths:
            if ctx.sandbox is not None and hasattr(ctx.sandbox, "check_write"):
                try:
                    ctx.sandbox.check_write(path)
                except Exception as exc:
                    return str(exc)
            if ctx.trust is not None:
                hit = path_denied(path, ctx.trust.deny_paths, ws)
                if hit:
                    return f"path {path} matches deny_paths pattern {hit!r}"
            protect = getattr(ctx.sandbox, "protected_refusal", None)
            hit = protect(path) if callable(protect) else None
            if hit and not (ctx.trust is not None and ctx.trust.mode is TrustMode.FULL):
                return f"the rename would change {path} ({hit}); edit it yourself instead"
        return None

    async def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        texts = await self._texts(args, ctx)
        paths = list(texts)  # real paths: the pool resolves the server's URIs
        refusal = self._refusal(ctx, paths)
        if refusal:
            return error(f"lsp_rename refused, nothing was written: {refusal}")
        planned = {**args, "_texts": texts}
        if ctx.leases is None:
            return await super().execute(planned, ctx)
        # The gates leased the call's own file; the other files the rename touches are leased
        # here, all at once, before anything is written.
        async with ctx.leases.hold(paths, ctx.agent_path, root=Path(ctx.workspace_root),
                                   resolved=True):
            return await super().execute(planned, ctx)

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> str:
        try:
            texts = await self._texts(args, ctx)
            steps = [Step(path=p, before=b.encode(), after=n.encode())
                     for p, (b, n) in texts.items()]
        except Exception as exc:
            return f"(no preview: {exc})"
        from nyzhi.tools.builtin._diff import PREVIEW_DIFF_LINES

        return diff_steps(ctx, steps, PREVIEW_DIFF_LINES)


TOOLS = (LspDiagnostics, LspGotoDefinition, LspFindReferences, LspHover, LspRename, LspSymbols)
