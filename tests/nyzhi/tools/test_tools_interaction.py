"""todowrite/todoread/think, ask_user routing, tool_search over deferred tools, web_fetch."""

import json
from pathlib import Path

import pytest
from _toolctx import make_ctx

from nyzhi.testing.loopback_http import serve_pages
from nyzhi.tools.base import Tool, ToolResult
from nyzhi.tools.builtin.interaction import AskUserTool, ToolSearchTool
from nyzhi.tools.builtin.planning import ThinkTool, TodoReadTool, TodoWriteTool
from nyzhi.tools.builtin.web import WebFetchTool, html_to_text
from nyzhi.tools.netguard import NetPolicy
from nyzhi.tools.registry import ToolRegistry

OPTIONS = [{"value": "a", "label": "Option A"}, {"value": "b", "label": "Option B"}]


async def test_todos_merge_by_id_and_persist_atomically(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, session_id="s1")
    await TodoWriteTool().run({"todos": [
        {"id": "1", "content": "write code", "status": "in_progress"},
        {"id": "2", "content": "test it", "status": "pending", "blocked_by": ["1"]},
    ]}, ctx)
    res = await TodoWriteTool().run({"todos": [{"id": "1", "content": "write code", "status": "completed"}]}, ctx)
    assert res.output.splitlines() == [
        "[x] 1: write code", "[ ] 2: test it (blocked by 1)", "(1/2 completed)",
    ]
    saved = json.loads((tmp_path / ".nyzhi/todos/s1.json").read_text())
    assert [t["status"] for t in saved["todos"]] == ["completed", "pending"]
    # A fresh context for the same session (a resumed session) reads the file.
    res = await TodoReadTool().run({}, make_ctx(tmp_path, session_id="s1"))
    assert res.output.splitlines()[0] == "[x] 1: write code"
    assert not list((tmp_path / ".nyzhi/todos").glob("*.tmp"))


async def test_todo_validation(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    res = await TodoWriteTool().run({"todos": [{"id": "1", "content": "x", "status": "done"}]}, ctx)
    assert res.is_error
    assert res.output == "todos[1]: status must be one of pending, in_progress, completed, cancelled, got 'done'"
    res = await TodoWriteTool().run({"todos": [{"id": "9", "status": "pending"}]}, ctx)
    assert res.is_error and res.output.startswith("todo '9' is new, so 'content' is required;")
    assert (await TodoReadTool().run({}, ctx)).output == "No todos."
    assert not (tmp_path / ".nyzhi").exists()  # no session id: memory only


async def test_think_echoes() -> None:
    res = await ThinkTool().run({"thought": "consider X"}, make_ctx(Path("/")))
    assert res.output == "consider X" and not res.is_error


async def test_ask_user_routes_to_front_end(tmp_path: Path) -> None:
    seen = []

    async def front_end(question, options, allow_custom):
        seen.append((question, options, allow_custom))
        return "b"

    ctx = make_ctx(tmp_path, ask_user=front_end)
    res = await AskUserTool().run({"question": "Which?", "options": OPTIONS, "allow_custom": False}, ctx)
    assert res.output == "b" and seen == [("Which?", OPTIONS, False)]

    async def dismiss(*_):
        return "__cancelled__"

    res = await AskUserTool().run({"question": "Which?", "options": OPTIONS}, make_ctx(tmp_path, ask_user=dismiss))
    assert res.output == "The user dismissed the question without answering."


async def test_ask_user_headless_error_or_default(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    res = await AskUserTool().run({"question": "Which?", "options": OPTIONS}, ctx)
    assert res.is_error and res.output.startswith("ask_user is not available: no user is attached")
    ctx.state["ask_user_default"] = "a"
    res = await AskUserTool().run({"question": "Which?", "options": OPTIONS}, ctx)
    assert not res.is_error and res.metadata == {"answer": "a", "default": True}
    res = await AskUserTool().run({"question": "Which?", "options": OPTIONS[:1]}, ctx)
    assert res.is_error and res.output == "'options' must be an array of 2 to 6 {value, label} objects"


class _Deferred(Tool):
    deferred = True

    def __init__(self, name: str, description: str) -> None:
        self.name = name
        self.description = description
        self.parameters = {"type": "object", "properties": {"q": {"type": "string"}}}

    async def run(self, args, ctx):
        return ToolResult(output="ok")


async def test_tool_search_discovers_deferred_tools(tmp_path: Path) -> None:
    reg = ToolRegistry()
    reg.register(ToolSearchTool())
    reg.register(_Deferred("mcp__github__create_issue", "Create a GitHub issue.\nMore detail."))
    reg.register(_Deferred("mcp__github__list_prs", "List pull requests."))
    assert [s["name"] for s in reg.schemas()] == ["tool_search"]
    assert reg.prompt_summary().splitlines()[1:] == [
        "- mcp__github__create_issue: Create a GitHub issue.",
        "- mcp__github__list_prs: List pull requests.",
    ]
    ctx = make_ctx(tmp_path, registry=reg)
    res = await ToolSearchTool().run({"query": "github ISSUE"}, ctx)
    assert res.metadata["tools"] == ["mcp__github__create_issue"]
    assert '"q"' in res.output
    assert [s["name"] for s in reg.schemas()] == ["tool_search", "mcp__github__create_issue"]
    assert "create_issue" not in reg.prompt_summary()
    res = await ToolSearchTool().run({"query": "list_(prs|x)$", "search_type": "regex"}, ctx)
    assert res.metadata["tools"] == ["mcp__github__list_prs"]
    assert reg.prompt_summary() == ""
    res = await ToolSearchTool().run({"query": "("  , "search_type": "regex"}, ctx)
    assert res.is_error and res.output.startswith("invalid regex '(':")
    res = await ToolSearchTool().run({"query": "nothing here"}, ctx)
    assert res.output.startswith("No deferred tools match 'nothing here'.")
    assert "search_type 'regex'" in res.output


def test_html_to_text_drops_scripts_keeps_blocks() -> None:
    title, text = html_to_text(
        "<html><head><title>T</title><style>p{}</style></head><body><h1>Head</h1>"
        "<script>alert(1)</script><p>Para &amp; one</p><ul><li>x</li><li>y</li></ul></body></html>"
    )
    assert title == "T"
    assert text == "Head\n\nPara & one\n\n- x\n\n- y"


@pytest.fixture
async def http_server(nursery):
    """A tiny loopback HTTP server."""
    return await serve_pages(nursery, {
        "/page": ("text/html; charset=utf-8", b"<html><title>Hi</title><body><p>Hello <b>world</b></p><script>x()</script></body></html>"),
        "/big": ("text/plain", b"a" * 200),
        "/bin": ("application/octet-stream", b"\0\1\2"),
    })


# The test servers are on loopback, which web_fetch refuses unless the user allows it.
LOOPBACK = NetPolicy.from_hosts(["127.0.0.1"])


async def test_web_fetch_html_to_text(http_server: str, tmp_path: Path) -> None:
    res = await WebFetchTool().run({"url": f"{http_server}/page"}, make_ctx(tmp_path, net=LOOPBACK))
    assert not res.is_error
    head, framed = res.output.split("\n\n", 1)
    assert head == f"URL: {http_server}/page\nStatus: 200\nTitle: Hi"
    # the page's text is framed as untrusted content, between markers with a per-call id
    lines = framed.splitlines()
    assert lines[0].startswith("<untrusted-content id=") and f"source='{http_server}/page'" in lines[0]
    assert "must not be followed" in lines[1]
    assert "\n".join(lines[2:-1]) == "Hi\n\nHello world"
    assert lines[-1] == "</untrusted-content id=" + lines[0].split("id=")[1].split()[0] + ">"


async def test_web_fetch_caps_and_errors(http_server: str, tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, net=LOOPBACK)
    res = await WebFetchTool().run({"url": f"{http_server}/big", "max_length": 50}, ctx)
    assert ("a" * 50 + "\n... (truncated: 150 more characters; raise max_length to see more)\n"
            "</untrusted-content id=") in res.output
    res = await WebFetchTool().run({"url": f"{http_server}/bin"}, ctx)
    assert res.is_error and "application/octet-stream" in res.output
    res = await WebFetchTool().run({"url": f"{http_server}/missing"}, ctx)
    assert res.is_error and "Status: 404" in res.output
    res = await WebFetchTool().run({"url": "file:///etc/passwd"}, ctx)
    assert res.is_error and res.output == "url must start with http:// or https://, got 'file:///etc/passwd'"
