"""Runtime events as ACP ``session/update`` payloads, through the one event dispatch.

``UpdateRenderer`` is an ``EventRenderer`` like every other front end's: a live session's
events and a loaded session's recorded ones go through the same handlers. It only collects
updates (``take()``); the session sends them, in order, and answers approvals. Events reach
it already redacted by the bus.

* the main agent's text and thinking deltas are agent message and thought chunks;
* every tool call (a subagent's too, its title naming the agent) is a ``tool_call`` (kind,
  title, locations, input), then ``tool_call_update``s: output as it streams, then
  ``completed`` or ``failed`` with the result;
* a ``spawn_agent`` call stays ``in_progress`` while the subagent works, its content the
  subagent's progress (each tool it calls, its answer), ``completed`` when its turn ends;
* a successful ``todowrite`` is also a ``plan``: the whole merged list each time, as the spec
  asks;
* a replayed session (``replaying``) has no deltas: its prompts become user message chunks
  and each turn's answer one agent message chunk.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nyzhi.acp import schema as s
from nyzhi.core.protocol import events as ev
from nyzhi.core.protocol.renderer import EventRenderer

# Our tools by the ACP kind an editor shows them as (anything else is ``other``).
TOOL_KINDS: dict[str, str] = {
    "read": "read", "tail_file": "read", "list_dir": "read", "file_info": "read",
    "directory_tree": "read", "git_status": "read", "git_diff": "read", "git_log": "read",
    "grep": "search", "glob": "search", "fuzzy_find": "search", "tool_search": "search",
    "ast_search": "search",
    "write": "edit", "edit": "edit", "multi_edit": "edit", "apply_patch": "edit",
    "batch_apply": "edit", "instrument": "edit", "remove_instrumentation": "edit",
    "create_dir": "edit", "copy_file": "edit", "notebook_edit": "edit",
    "delete_file": "delete", "move_file": "move",
    "bash": "execute", "verify": "execute",
    "web_fetch": "fetch", "web_search": "fetch", "browser_open": "fetch",
    "think": "think", "todowrite": "think", "todoread": "think",
}
PATH_ARGS = ("file_path", "path", "source", "destination")
TITLE_ARGS = ("command", "file_path", "path", "pattern", "query", "url", "source")
MAX_OUTPUT = 20_000  # characters of a tool's result shown in the editor
MAX_DIFF = 1_000_000  # characters of a file shown as a diff in a permission request
PLAN_STATUSES = {"pending": "pending", "in_progress": "in_progress", "completed": "completed"}
PRIORITIES = ("high", "medium", "low")


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _spawned_agent(event: ev.ToolDone) -> str | None:
    """The path of the subagent a successful ``spawn_agent`` call started."""
    if event.name != "spawn_agent" or event.is_error:
        return None
    found = _arguments(event.output).get("agent_id")
    return found if isinstance(found, str) and found.startswith(ev.MAIN_AGENT + "/") else None


def proposed_diffs(name: str, args: dict[str, Any], cwd: Path,
                   redact: Callable[[str], str]) -> tuple[s.ToolCallContent, ...]:
    """A ``write`` or ``edit`` call as the ACP diff of its file, before and after (what a
    permission request shows); empty when it cannot be worked out. Blocking (reads the file).
    The texts are redacted: they are shown, not written."""
    raw = args.get("file_path")
    if name not in ("write", "edit") or not isinstance(raw, str) or not raw:
        return ()
    path = Path(raw) if Path(raw).is_absolute() else cwd / raw
    try:
        old: str | None = path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError):
        return ()
    if old is not None and len(old) > MAX_DIFF:
        return ()
    if name == "write":
        new = args.get("content")
    else:
        before, after = args.get("old_string"), args.get("new_string")
        if old is None or not isinstance(before, str) or not isinstance(after, str) \
                or not before or before not in old:
            return ()
        new = old.replace(before, after) if args.get("replace_all") is True else \
            old.replace(before, after, 1)
    if not isinstance(new, str):
        return ()
    return (s.ToolCallContent(type="diff", path=str(path),
                              old_text=redact(old) if old is not None else None,
                              new_text=redact(new)),)


def _text(text: str) -> tuple[s.ToolCallContent, ...]:
    if len(text) > MAX_OUTPUT:
        text = text[:MAX_OUTPUT] + f"\n... ({len(text) - MAX_OUTPUT} more characters)"
    return (s.ToolCallContent(content=s.TextContent(text)),) if text else ()


class UpdateRenderer(EventRenderer):
    def __init__(self, cwd: Path, *, replaying: bool = False) -> None:
        self.cwd = cwd
        self.replaying = replaying
        self.updates: list[s.Update] = []
        self.started: set[str] = set()  # tool call ids whose tool_call was sent
        self.running: set[str] = set()  # tool call ids already marked in_progress
        self.titles: dict[str, s.ToolCallFields] = {}  # tool call id -> what a permission shows
        self.inputs: dict[str, tuple[str, dict[str, Any]]] = {}  # tool call id -> (tool, args)
        self.latest: dict[tuple[str, str], str] = {}  # (agent, tool) -> its latest call's id
        # (agent, the model's call id) -> the session-unique tool call id: a model's ids repeat
        # across turns and agents (``call_0``), and ACP's must not
        self.ids: dict[tuple[str, str], str] = {}
        self.calls = 0
        # A subagent's progress, shown in the spawn_agent call that started it: the agent's
        # path -> that call's id, and the call's lines so far.
        self.spawned: dict[str, str] = {}
        self.progress: dict[str, list[str]] = {}
        # tool call id -> the client terminal its command runs in (kept in the call's content)
        self.terminals: dict[str, str] = {}
        # approvals and questions waiting for the session to ask the client (not on replay)
        self.asks: list[ev.ApprovalRequest | ev.UserQuestion] = []

    def take(self) -> list[s.Update]:
        out, self.updates = self.updates, []
        return out

    # ---- text ---------------------------------------------------------------------------

    def on_text_delta(self, event: ev.TextDelta) -> None:
        if event.agent == ev.MAIN_AGENT and event.text:
            self.updates.append(s.AgentMessageChunk(s.TextContent(event.text)))

    def on_thinking_delta(self, event: ev.ThinkingDelta) -> None:
        if event.agent == ev.MAIN_AGENT and event.text:
            self.updates.append(s.AgentThoughtChunk(s.TextContent(event.text)))

    def on_turn_start(self, event: ev.TurnStart) -> None:
        if self.replaying and event.agent == ev.MAIN_AGENT and event.prompt:
            self.updates.append(s.UserMessageChunk(s.TextContent(event.prompt)))

    def on_turn_complete(self, event: ev.TurnComplete) -> None:
        if self.replaying and event.agent == ev.MAIN_AGENT and event.text:
            self.updates.append(s.AgentMessageChunk(s.TextContent(event.text)))
        if event.agent != ev.MAIN_AGENT:
            answer = " ".join(event.text.split())
            self._child(event.agent, f"{event.stop_reason}: {answer[:300]}", done=True)

    def on_approval_request(self, event: ev.ApprovalRequest) -> None:
        self.asks.append(event)

    def on_user_question(self, event: ev.UserQuestion) -> None:
        self.asks.append(event)

    def on_error(self, event: ev.Error) -> None:
        if event.agent != ev.MAIN_AGENT:
            self._child(event.agent, f"error: {event.message}")
        if event.agent == ev.MAIN_AGENT and not self.replaying:
            self.updates.append(s.AgentMessageChunk(s.TextContent(f"\n[error] {event.message}\n")))

    # ---- tools --------------------------------------------------------------------------

    def tool_call_id(self, agent: str, call_id: str, *, new: bool = False) -> str:
        key = (agent, call_id)
        if new or key not in self.ids:
            self.calls += 1
            self.ids[key] = f"{call_id}.{self.calls}"
        return self.ids[key]

    def question_call(self, event: ev.UserQuestion) -> str:
        """The tool call an ``ask_user`` question belongs to (its event may not name it):
        the asking agent's running ``ask_user`` call, else the question's own id."""
        if event.call_id:
            return self.tool_call_id(event.agent, event.call_id)
        running = self.latest.get((event.agent, "ask_user"))
        return running if running in self.started else event.request_id

    def fields(self, call_id: str, name: str, arguments: str, agent: str) -> s.ToolCallFields:
        """The title, kind and locations of a call (also what a permission request shows)."""
        args = _arguments(arguments)
        detail = next((str(args[k]) for k in TITLE_ARGS if isinstance(args.get(k), str)), "")
        title = f"{name} {detail}".strip()
        if len(title) > 200:
            title = title[:197] + "..."
        if agent != ev.MAIN_AGENT:
            title = f"[{agent.rsplit('/', 1)[-1]}] {title}"
        locations = tuple(
            s.ToolCallLocation(str(self.cwd / args[k])) for k in PATH_ARGS
            if isinstance(args.get(k), str) and args[k])
        return s.ToolCallFields(tool_call_id=call_id, title=title,
                                kind=TOOL_KINDS.get(name, "other"), locations=locations)

    def on_tool_start(self, event: ev.ToolStart) -> None:
        call_id = self.tool_call_id(event.agent, event.call_id, new=True)
        fields = self.fields(call_id, event.name, event.arguments, event.agent)
        self.titles[call_id] = fields
        self.inputs[call_id] = (event.name, _arguments(event.arguments))
        self.latest[(event.agent, event.name)] = call_id
        self.started.add(call_id)
        self.updates.append(s.ToolCall(
            tool_call_id=call_id, title=fields.title or event.name,
            kind=fields.kind or "other", status="pending", locations=fields.locations or (),
            raw_input=_arguments(event.arguments)))
        if event.agent != ev.MAIN_AGENT:
            self._child(event.agent, fields.title or event.name)

    def on_tool_output_delta(self, event: ev.ToolOutputDelta) -> None:
        call_id = self.tool_call_id(event.agent, event.call_id)
        if call_id in self.started and call_id not in self.running:
            self.running.add(call_id)
            self.updates.append(s.ToolCallUpdate(tool_call_id=call_id, status="in_progress"))

    def on_tool_done(self, event: ev.ToolDone) -> None:
        call_id = self.tool_call_id(event.agent, event.call_id)
        if call_id not in self.started:  # a call whose start was not recorded
            self.on_tool_start(ev.ToolStart(event.call_id, event.name, agent=event.agent))
            call_id = self.tool_call_id(event.agent, event.call_id)
        child = _spawned_agent(event) if not self.replaying else None
        if child is not None:  # the call stays open while the subagent works
            self.spawned[child] = call_id
            self.progress[call_id] = [event.output]
        terminal = self.terminals.pop(call_id, None)
        shown = (s.ToolCallContent(type="terminal", terminal_id=terminal),) if terminal else ()
        self.updates.append(s.ToolCallUpdate(
            tool_call_id=call_id,
            status="failed" if event.is_error else "in_progress" if child else "completed",
            content=shown + _text(event.output)))
        self.started.discard(call_id)
        self.running.discard(call_id)
        self.inputs.pop(call_id, None)
        if event.name == "todowrite" and not event.is_error:
            self._plan(event.metadata.get("todos"))  # the whole list, merged

    def _child(self, agent: str, line: str, *, done: bool = False) -> None:
        """A line of a subagent's progress into the spawn_agent call that started it (or
        started its nearest spawned ancestor): an editor without subagents still sees them."""
        path = agent
        while path and path not in self.spawned:
            path = path.rpartition("/")[0]
        if not path:
            return
        call_id = self.spawned[path]
        lines = self.progress[call_id]
        name = agent.rsplit("/", 1)[-1]
        lines.append(f"[{name}] {line}")
        finished = done and agent == path
        self.updates.append(s.ToolCallUpdate(
            tool_call_id=call_id, status="completed" if finished else "in_progress",
            content=_text("\n".join(lines))))

    def _plan(self, todos: Any) -> None:
        if not isinstance(todos, list):
            return
        entries = []
        for todo in todos:
            if not isinstance(todo, dict) or not isinstance(todo.get("content"), str):
                continue
            status = PLAN_STATUSES.get(str(todo.get("status", "pending")))
            if status is None:  # cancelled: no longer part of the plan
                continue
            priority = todo.get("priority")
            entries.append(s.PlanEntry(todo["content"], status=status,
                                       priority=priority if priority in PRIORITIES else "medium"))
        self.updates.append(s.Plan(tuple(entries)))
