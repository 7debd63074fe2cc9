"""Subagent roles: what a child agent is told, how long it may run, which tools it may touch.

A role comes from one of four places, first match wins (``RoleCatalog.resolve``):

1. ``[agent.agents.roles.NAME]`` in the config. A config table only *overrides* the fields it
   sets, on top of the role file it names (``config_file``) or else the role of that name found
   further down this list, so ``[agent.agents.roles.explorer] model = "…"`` keeps the built-in
   explorer's prompt and fence.
2. ``.nyzhi/agents/NAME.md``: front matter (``name``, ``description``, ``model``,
   ``max_steps``, ``read_only``, ``allowed_tools``, ``disallowed_tools``, ``mcp_servers``,
   ``thinking``) and
   the body as the system prompt. A file is a whole definition: it inherits nothing.
3. Claude Code's ``.claude/agents/NAME.md``: the same, plus Claude Code's ``tools`` (a comma
   list, its tool names mapped to ours by the one table, ``nyzhi.tools.claude_names``:
   ``Read`` → ``read``, ``Agent`` → ``spawn_agent``) and ``model: inherit``.
4. The 14 built-in roles (``BUILTIN_ROLES``).

A role file is found by its front-matter ``name`` first and by its file name second, as Claude
Code does (``django-pro.md`` declaring ``name: python-development-django-pro`` answers to
both). A name nothing defines is an error that lists the close matches: a subagent never runs
without the role it was asked for (``synthesized_role`` is only for config tables that name no
file and for display).

The ``spawn_agent`` description lists the roles within ``[agent] listing_budget_chars``
(``render_list``): each entry cut to a short description, and the number left out named with
the way to see them (``list_roles``).

A role's tool fence is enforced twice: the fenced registry view hides tools from the model
(``schemas()``), and the gates refuse them if the model calls them anyway (``fence_tools``).
A read-only role gets no tool that changes files; its shell tools run in the read-only sandbox.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from nyzhi import records
from nyzhi.config.prompt_files import (
    PromptFileRefused,
    prompt_roots,
    read_prompt_file,
    resolve_roots,
)
from nyzhi.config.schema_agent import BudgetConfig, RoleConfig
from nyzhi.config.thinking import parse_level
from nyzhi.core.runtime import role_prompts as rp
from nyzhi.knowledge import frontmatter as fm
from nyzhi.knowledge.listing import ENTRY_CHARS, fit_listing
from nyzhi.textcut import cut
from nyzhi.tools import claude_names
from nyzhi.tools.fence import ToolFence

DEFAULT_ROLE = "default"
DEFAULT_MAX_STEPS = 50  # a subagent's step limit when its role does not set one

# Tool names of the built-in fences (our registry's names). The explorer set is every read-only
# tool that looks at the code or its history.
EXPLORER_TOOLS: tuple[str, ...] = (
    "read", "tail_file", "list_dir", "directory_tree", "file_info", "grep", "glob", "fuzzy_find",
    "git_status", "git_diff", "git_log", "git_show", "git_branch", "think",
    "lsp_goto_definition", "lsp_find_references", "lsp_hover", "lsp_symbols", "lsp_diagnostics",
)
EXPLORER_WITH_SHELL = (*EXPLORER_TOOLS, "bash")
PLANNER_TOOLS = (*EXPLORER_TOOLS, "todowrite", "todoread")


# Front matter keys a role file may set (Claude Code's ``tools`` and ``color`` included). The
# name and description reach the ``spawn_agent`` description, so they are capped.
ROLE_FILE_KEYS: dict[str, fm.Key] = {
    "name": fm.Key(fm.NAME), "description": fm.Key(fm.TEXT), "model": fm.Key(fm.NAME, 128),
    "max_steps": fm.Key(fm.COUNT, what="a whole number of steps"), "read_only": fm.Key(fm.FLAG),
    "allowed_tools": fm.Key(fm.NAMES), "tools": fm.Key(fm.NAMES),
    "disallowed_tools": fm.Key(fm.NAMES), "mcp_servers": fm.Key(fm.NAMES),
    "color": fm.Key(fm.ANY),
    "thinking": fm.Key(fm.ANY),  # a level or a number of tokens: checked by parse_level
}


class RoleError(ValueError):
    """A role file or table that cannot be used; the message names the file or key."""


@records.frozen
class Role:
    """One role. ``allowed_tools`` None means every tool; ``mcp_servers`` None means every
    configured MCP server's tools; ``model`` None means "as resolved by ``RoleModels``";
    ``source`` says where it came from ("built-in", "config", a file path, "synthesized")."""

    name: str
    description: str
    system_prompt: str
    max_steps: int = DEFAULT_MAX_STEPS
    read_only: bool = False
    allowed_tools: tuple[str, ...] | None = None
    disallowed_tools: tuple[str, ...] = ()
    model: str | None = None
    mcp_servers: tuple[str, ...] | None = None
    budget: BudgetConfig | None = None
    source: str = "built-in"
    thinking: str | int | None = None  # a thinking level (nyzhi.config.thinking); None: inherit

    @property
    def tool_fence(self) -> ToolFence:
        """The name-level fence (``nyzhi.tools.fence``): allowed minus disallowed, MCP tools
        by server. (Read-only is decided per tool by the gates, which know whether a tool
        changes things.)"""
        return ToolFence.of(self.allowed_tools, self.disallowed_tools, self.mcp_servers)

    def allows(self, tool_name: str) -> bool:
        return self.tool_fence.allows(tool_name)

    def unknown_tools(self, known: Iterable[str]) -> list[str]:
        """Names in the fence that no tool has (MCP names excepted: servers come and go)."""
        known = set(known)
        named = (*(self.allowed_tools or ()), *self.disallowed_tools)
        return sorted({n for n in named if n not in known and not n.startswith("mcp__")})


def _role(name, description, prompt, steps, tools=None, *, read_only=False) -> Role:
    return Role(name, description, prompt, steps, read_only, tools)


BUILTIN_ROLES: dict[str, Role] = {r.name: r for r in (
    _role("default", "General-purpose subagent with every tool.", rp.DEFAULT, DEFAULT_MAX_STEPS),
    _role("explorer", "Read-only codebase search; run several in parallel for separate "
          "questions.", rp.EXPLORER, 30, EXPLORER_TOOLS, read_only=True),
    _role("worker", "Implements one well-defined change, surgically.", rp.WORKER, 50),
    _role("reviewer", "Reviews changes for correctness, then quality; findings by severity.",
          rp.REVIEWER, 40, (*EXPLORER_WITH_SHELL, "review_pr"), read_only=True),
    _role("planner", "Turns a goal into an ordered, verifiable plan; never implements.",
          rp.PLANNER, 40, PLANNER_TOOLS, read_only=True),
    _role("architect", "Read-only design advisor: trade-offs and a recommendation.",
          rp.ARCHITECT, 40, EXPLORER_WITH_SHELL, read_only=True),
    _role("debugger", "Reproduces a failure, finds the root cause, fixes and verifies it.",
          rp.DEBUGGER, 60),
    _role("security-reviewer", "Looks for vulnerabilities, leaked secrets and risky "
          "dependencies.", rp.SECURITY_REVIEWER, 40, EXPLORER_WITH_SHELL, read_only=True),
    _role("quality-reviewer", "Judges logic and design: fragile code, duplication, unclear "
          "structure.", rp.QUALITY_REVIEWER, 40, EXPLORER_TOOLS, read_only=True),
    _role("test-engineer", "Writes and runs tests that pin down behaviour.", rp.TEST_ENGINEER, 50),
    _role("build-fixer", "Makes a failing build, type check or lint pass without cheating.",
          rp.BUILD_FIXER, 40),
    _role("deep-executor", "Takes a larger task from start to finish autonomously.",
          rp.DEEP_EXECUTOR, 80),
    _role("document-specialist", "Writes and corrects documentation against the code.",
          rp.DOCUMENT_SPECIALIST, 40),
    _role("code-simplifier", "Simplifies code without changing its behaviour.",
          rp.CODE_SIMPLIFIER, 40),
)}


def subagent_prompt(role: Role, briefing: str = "") -> str:
    """The text for a subagent's ``PromptParts.role_prompt``: its role's prompt, the rules every
    subagent follows, and the parent's briefing (``nyzhi.core.runtime.briefing``), if any."""
    return "\n\n".join(p for p in (role.system_prompt.strip(), rp.SHARED_RULES,
                                     briefing.strip()) if p)


def synthesized_role(name: str) -> Role:
    """The role for a name nothing defines: the default role under that name."""
    return attrs.evolve(BUILTIN_ROLES[DEFAULT_ROLE], name=name, source="synthesized")


# ---- tool names -----------------------------------------------------------------------------


def normalize_tool_name(name: str) -> str:
    """Our name for ``name``: Claude Code's names (``Read``, ``MultiEdit``, ``Agent``) mapped by
    ``nyzhi.tools.claude_names``, MCP names and our own names kept as written. A Claude Code
    name nyz has no tool for stays as written (it then matches no tool)."""
    return claude_names.ours(name) or name.strip()


def _tool_list(value: Any, where: str,
               dropped: list[str] | None = None) -> tuple[str, ...]:
    """A list of tool names from a comma string or a list of strings. Claude Code's names with
    no equivalent here are left out (and appended to ``dropped``)."""
    if isinstance(value, str):
        items = [v for v in value.split(",") if v.strip()]
    elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        items = list(value)
    else:
        raise RoleError(f"{where}: expected a list of tool names (or a comma list), got {value!r}")
    out = []
    for item in items:
        mapped = claude_names.ours(item)
        if mapped is None:
            if dropped is not None:
                dropped.append(item.strip())
            continue
        out.append(mapped)
    return tuple(dict.fromkeys(out))


# ---- role files -----------------------------------------------------------------------------


def load_role_file(path: Path, workspace_root: Path | None = None, *,
                   roots: Iterable[Path] | None = None) -> tuple[Role, list[str]]:
    """The role a ``.nyzhi/agents`` or ``.claude/agents`` file defines, and warnings (unknown
    keys). RoleError, naming the file, for anything unusable. The body becomes a system
    prompt, so the file must resolve inside the workspace or nyz's config folders
    (``config.prompt_files``; without ``workspace_root``, the file's own folder). ``roots``:
    those folders already resolved (``resolve_roots``), for a caller reading many files."""
    text = _read_role_text(path, workspace_root, roots)
    try:
        fields, body = fm.split_front_matter(text, path)
        values, warnings = fm.check_fields(fields, ROLE_FILE_KEYS, path)
    except fm.FrontMatterError as exc:
        raise RoleError(str(exc)) from None
    name = values.get("name") or path.stem
    if len(name) > fm.NAME_CAP or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise RoleError(f"{path}: name: expected letters, digits, '-', '_' or '.' (at most "
                        f"{fm.NAME_CAP}), found {cut(name, 80, one_line=False, rstrip=True)!r}")
    steps = values.get("max_steps")
    if steps is not None and steps < 1:
        raise RoleError(f"{path}: max_steps: expected at least 1, found {steps}")
    allowed_tools, disallowed_tools = _role_tools(values, path, text, warnings)
    model = values.get("model")
    if model is not None and model.lower() == "inherit":
        model = None
    thinking = values.get("thinking")
    if thinking is not None:
        try:
            thinking = parse_level(thinking, f"{path}: thinking")
        except ValueError as exc:
            raise RoleError(str(exc)) from None
    if not body:
        raise RoleError(f"{path}: the file has no body; the body is the role's system prompt")
    role = Role(
        name=name,
        description=values.get("description", ""),
        system_prompt=body,
        max_steps=steps or DEFAULT_MAX_STEPS,
        read_only=bool(values.get("read_only")),
        allowed_tools=allowed_tools,
        disallowed_tools=disallowed_tools,
        model=model,
        mcp_servers=values.get("mcp_servers"),
        source=str(path),
        thinking=thinking,
    )
    return role, warnings


def _read_role_text(path: Path, workspace_root: Path | None,
                    roots: Iterable[Path] | None) -> str:
    """The role file's text, read only inside the allowed folders (see ``load_role_file``)."""
    root = workspace_root if workspace_root is not None else Path(os.path.abspath(path)).parent
    try:
        return read_prompt_file(path, roots if roots is not None else prompt_roots(root),
                                errors="strict")
    except PromptFileRefused as exc:
        raise RoleError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RoleError(f"{path}: cannot read role file: {exc}") from None


def _role_tools(values: dict[str, Any], path: Path, text: str,
                warnings: list[str]) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """A role file's allowed and disallowed tools in nyz's names. Claude Code's names nyz
    has no tool for are left out, with a warning (in ``warnings``) once per file content."""
    allowed = values.get("allowed_tools")
    if allowed is None:  # Claude Code's spelling, accepted in both folders
        allowed = values.get("tools")
    dropped: list[str] = []
    allowed_tools = None if allowed is None else _tool_list(
        allowed, f"{path}: allowed_tools", dropped)
    disallowed_tools = _tool_list(values.get("disallowed_tools", ()),
                                  f"{path}: disallowed_tools", dropped)
    if dropped:
        from nyzhi.config.notices_seen import unseen

        warnings += unseen(path, text, [
            f"{path}: Claude Code tools with no nyz equivalent left out of the role's tools: "
            + ", ".join(dict.fromkeys(dropped))])
    return allowed_tools, disallowed_tools


def _apply_config(base: Role, table: RoleConfig, name: str) -> Role:
    """``base`` with the fields ``table`` sets."""
    changes: dict[str, Any] = {"name": name, "source": "config"}
    where = f"agent.agents.roles.{name}"
    if table.description is not None:
        changes["description"] = table.description
    if table.system_prompt is not None:
        changes["system_prompt"] = table.system_prompt
    if table.model is not None:
        changes["model"] = table.model
    if table.max_steps is not None:
        if table.max_steps < 1:
            raise RoleError(f"{where}.max_steps: expected at least 1, found {table.max_steps}")
        changes["max_steps"] = table.max_steps
    if table.read_only is not None:
        changes["read_only"] = table.read_only
    if table.allowed_tools is not None:
        changes["allowed_tools"] = _tool_list(list(table.allowed_tools), f"{where}.allowed_tools")
    if table.disallowed_tools is not None:
        changes["disallowed_tools"] = _tool_list(
            list(table.disallowed_tools), f"{where}.disallowed_tools"
        )
    if table.mcp_servers is not None:
        changes["mcp_servers"] = tuple(table.mcp_servers)
    if table.budget is not None:
        changes["budget"] = table.budget
    if table.thinking is not None:
        changes["thinking"] = table.thinking.level
    return attrs.evolve(base, **changes)


# ---- the catalog ----------------------------------------------------------------------------


@records.define
class RoleCatalog:
    """Every role a runtime knows, resolved once (``load``). ``errors`` are role files that
    could not be read (resolving that name raises their error); ``warnings`` are notices for
    the user (unknown keys, tools no registry has)."""

    roles: dict[str, Role] = attrs.field(factory=dict)
    errors: dict[str, str] = attrs.field(factory=dict)  # role name -> error text
    warnings: list[str] = attrs.field(factory=list)
    # a role file's name -> the front-matter name it declares (``django-pro`` ->
    # ``python-development-django-pro``): the second way to find a role
    aliases: dict[str, str] = attrs.field(factory=dict)

    @classmethod
    def load(
        cls, config_roles: Mapping[str, RoleConfig] | None = None,
        workspace_root: Path | None = None,
    ) -> RoleCatalog:
        """Roles from config, ``<root>/.nyzhi/agents``, ``<root>/.claude/agents`` and the
        built-ins, in that order of precedence."""
        catalog = cls()
        files: dict[str, Role] = {}
        if workspace_root is not None:
            roots = resolve_roots(prompt_roots(workspace_root))  # once for every folder
            # .claude first so that .nyzhi files of the same name replace them.
            for folder in (".claude", ".nyzhi"):
                for role in catalog._load_dir(Path(workspace_root) / folder / "agents",
                                              Path(workspace_root), roots):
                    files[role.name] = role
            # active plugins' agents, named plugin:agent as Claude Code names them
            from nyzhi.config.plugins import plugin_dirs

            for plugin, folder in plugin_dirs(workspace_root, "agents"):
                for role in catalog._load_dir(folder, Path(workspace_root), roots):
                    named = attrs.evolve(role, name=f"{plugin}:{role.name}")
                    files[named.name] = named
        roles = dict(BUILTIN_ROLES)
        roles.update(files)
        for name, table in (config_roles or {}).items():
            try:
                if table.config_file:
                    path = Path(os.path.expanduser(table.config_file))
                    if not path.is_absolute() and workspace_root is not None:
                        path = Path(workspace_root) / path
                    base, notes = load_role_file(path, workspace_root)
                    catalog.warnings.extend(notes)
                else:
                    base = roles.get(name) or synthesized_role(name)
                roles[name] = _apply_config(base, table, name)
                catalog.errors.pop(name, None)
            except RoleError as exc:
                catalog.errors[name] = f"agent.agents.roles.{name}: {exc}"
                roles.pop(name, None)
        catalog.roles = roles
        return catalog

    def _load_dir(self, folder: Path, workspace_root: Path,
                  roots: Iterable[Path]) -> list[Role]:
        if not folder.is_dir():
            return []
        found = []
        for path in sorted(folder.glob("*.md")):
            try:
                role, notes = load_role_file(path, workspace_root, roots=roots)
            except RoleError as exc:
                self.errors[path.stem] = str(exc)
                continue
            self.warnings.extend(notes)
            self.errors.pop(role.name, None)
            if path.stem != role.name:
                self.aliases[path.stem] = role.name
            found.append(role)
        return found

    def resolve(self, name: str | None, *, strict: bool = True) -> Role:
        """The role called ``name`` (None or "": ``default``): by its declared name, then by
        its file's name, then either ignoring case. RoleError if the name's file or table is
        broken, or (``strict``) if nothing defines it: the message lists the close matches.
        ``strict=False`` gives the synthesized default instead (for display only)."""
        name = (name or DEFAULT_ROLE).strip() or DEFAULT_ROLE
        if name in self.roles:
            return self.roles[name]
        if self.aliases.get(name) in self.roles:
            return self.roles[self.aliases[name]]
        if name in self.errors:
            raise RoleError(self.errors[name])
        folded = name.lower()
        for known in (*self.roles, *self.aliases):
            if known.lower() == folded:
                return self.resolve(known)
        if not strict:
            return synthesized_role(name)
        raise RoleError(self.unknown_message(name))

    def unknown_message(self, name: str) -> str:
        """The error for a role nothing defines, naming the close matches (``difflib``, and
        names that contain the one asked for)."""
        known = [*self.names(), *sorted(self.aliases)]
        folded = {k.lower(): k for k in known}
        import difflib  # only for a name that is wrong (~0.7 ms of start-up)

        close = [folded[m] for m in difflib.get_close_matches(name.lower(), list(folded), 5, 0.6)]
        close += [k for k in known if name.lower() in k.lower() and k not in close]
        shown = [f"{k} (file of {self.aliases[k]})" if k in self.aliases else k
                 for k in close[:8]]
        hint = f"close matches: {', '.join(shown)}" if shown else "no close match"
        return (f"no role named {name!r} ({hint}); list_roles lists every role. The subagent "
                "was not started.")

    def matching(self, query: str = "") -> list[dict[str, Any]]:
        """Every role (or those whose name, file name or description holds each word of
        ``query``) with its whole description: what ``list_roles`` returns."""
        files = {}
        for stem, name in self.aliases.items():
            files.setdefault(name, []).append(stem)
        words = query.lower().split()
        out = []
        for name in self.names():
            role = self.roles[name]
            also = files.get(name, [])
            text = " ".join((name, *also, role.description)).lower()
            if all(w in text for w in words):
                entry: dict[str, Any] = {"name": name, "description": role.description,
                                         "max_steps": role.max_steps}
                if also:
                    entry["file_name"] = also[0]
                if role.read_only:
                    entry["read_only"] = True
                out.append(entry)
        return out

    def names(self) -> list[str]:
        """Built-ins in their order, then the others alphabetically."""
        builtin = [n for n in BUILTIN_ROLES if n in self.roles]
        return builtin + sorted(n for n in self.roles if n not in BUILTIN_ROLES)

    def check_tools(self, known: Iterable[str]) -> list[str]:
        """Warnings for fences naming tools that do not exist (a typo fences a tool out)."""
        known = set(known)
        notes = []
        for name in self.names():
            missing = self.roles[name].unknown_tools(known)
            if missing:
                notes.append(f"role {name!r} ({self.roles[name].source}) names unknown tools: "
                             + ", ".join(missing))
        return notes

    def render_list(self, budget: int | None = None) -> str:
        """The roles for the ``spawn_agent`` tool's description: one line each, the description
        cut to ``ENTRY_CHARS``, within ``budget`` characters (None: all). When roles are
        left out, the last line says how many and how to see them."""
        lines = []
        for name in self.names():
            role = self.roles[name]
            traits = [f"{role.max_steps} steps"]
            if role.read_only:
                traits.append("read only")
            text = cut(role.description, ENTRY_CHARS, rstrip=True)
            lines.append(f"- {name}: {text or '(no description)'} ({', '.join(traits)})")
        return fit_listing(lines, budget, "roles", "list_roles")


# ---- models ---------------------------------------------------------------------------------


@records.frozen
class ModelChoice:
    model: str
    source: str  # "override", "requested", "role", "agent.subagent_model", "parent"


@records.define
class RoleModels:
    """Which model a subagent runs on. First set wins: a runtime override for its role
    (``Runtime.set_role_model``, the console's ``/subagent-config``), the ``model`` the spawning
    call asked for, the role's ``model``, ``agent.subagent_model``, the parent's model."""

    subagent_model: str | None = None
    overrides: dict[str, str] = attrs.field(factory=dict)

    def set(self, role: str, model: str | None) -> None:
        """Override ``role``'s model for this runtime; None (or "") removes the override."""
        if model:
            self.overrides[role] = model
        else:
            self.overrides.pop(role, None)

    def resolve(self, role: Role, parent_model: str, requested: str | None = None) -> ModelChoice:
        for model, source in (
            (self.overrides.get(role.name), "override"),
            (requested, "requested"),
            (role.model, "role"),
            (self.subagent_model, "agent.subagent_model"),
        ):
            if model:
                return ModelChoice(model, source)
        return ModelChoice(parent_model, "parent")


# ---- applying a role to an agent's tools -------------------------------------------------------


@records.frozen
class FencedTools:
    """An agent's tools under its role: the registry view the model sees, the gates that
    enforce the fence, and the tool context (read-only roles: the read-only sandbox)."""

    registry: Any
    gates: Any
    context: Any


def fence_tools(role: Role, registry: Any, gates: Any, context: Any) -> FencedTools:
    """``registry`` (a ``ToolRegistry``), ``gates`` (``Gates``) and ``context``
    (``ToolContext``) narrowed to ``role``. Narrowing only: a fence already on the gates or the
    view stays."""
    from nyzhi.config.modes import SandboxLevel
    from nyzhi.tools.base import Permission
    from nyzhi.tools.sandbox import SandboxPolicy

    fence = role.tool_fence
    hidden = [n for n in registry.names() if not fence.allows(n)]
    if role.read_only:
        hidden += [
            t.name for t in registry.tools()
            if t.permission is not Permission.READ_ONLY and not getattr(t, "runs_sandboxed", False)
        ]
    view = registry.fenced(role.allowed_tools, hidden)
    previous = gates.fence
    both = ToolFence(gates.allowed_tools, gates.disallowed_tools).narrowed(fence)
    fenced_gates = attrs.evolve(
        gates,
        allowed_tools=both.allowed,
        disallowed_tools=both.disallowed,
        fence=(lambda n: fence.allows(n) and previous(n)) if previous else fence.allows,
        read_only_role=role.name if role.read_only else gates.read_only_role,
    )
    sandbox = context.sandbox
    if role.read_only and isinstance(sandbox, SandboxPolicy):
        sandbox = attrs.evolve(sandbox, level=SandboxLevel.READ_ONLY)
    fenced_context = attrs.evolve(context, sandbox=sandbox, registry=view)
    return FencedTools(view, fenced_gates, fenced_context)
