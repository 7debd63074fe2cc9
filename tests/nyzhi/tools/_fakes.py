"""Small fake tools shared by the gate and execution tests."""

from typing import Any

import trio

from nyzhi.tools.base import Permission, Tool, ToolContext, ToolResult


class Reader(Tool):
    name = "reader"
    description = "reads"
    permission = Permission.READ_ONLY

    def target_paths(self, args):
        return [args["path"]] if "path" in args else []

    async def run(self, args, ctx):
        return ToolResult(f"read {args.get('path')}")


class Writer(Tool):
    name = "writer"
    description = "writes"
    permission = Permission.NEEDS_APPROVAL
    writes_files = True

    def target_paths(self, args):
        return [args["path"]] if "path" in args else []

    def preview(self, args, ctx):
        return f"--- a/{args.get('path')}\n+++ b/{args.get('path')}\n+new"

    async def run(self, args, ctx):
        return ToolResult(f"wrote {args.get('path')}")


class Fetch(Tool):
    name = "fetch"
    description = "needs approval, touches no paths"
    permission = Permission.NEEDS_APPROVAL

    async def run(self, args, ctx):
        return ToolResult("fetched")


class Registry:
    """A minimal registry: ``get`` by name (the real one is nyzhi.tools.registry)."""

    def __init__(self, *tools: Tool) -> None:
        self.tools = {t.name: t for t in tools}

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)


class Recorder:
    """An approver that records requests and answers from a script."""

    def __init__(self, *answers) -> None:
        self.answers = list(answers)
        self.requests = []

    async def __call__(self, request):
        self.requests.append(request)
        await trio.lowlevel.checkpoint()
        return self.answers.pop(0)


def make_tool(name: str, permission: Permission, run) -> Tool:
    cls = type(name.title(), (Tool,), {"name": name, "description": name, "permission": permission})
    tool = cls()

    async def _run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return await run(args, ctx)

    tool.run = _run  # type: ignore[method-assign]
    return tool
