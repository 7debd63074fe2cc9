"""Claude Code's tool names and permission rules in nyz's terms (issue 31): one table of tool
names, used by role files and hook matchers alike; permission rules mapped onto the trust
rules the gates enforce, and what cannot be expressed said once per file."""

from __future__ import annotations

from nyzhi.core.runtime.hooks.spec import HookSpec
from nyzhi.core.runtime.roles import load_role_file
from nyzhi.testing.claude_project import write_settings
from nyzhi.tools import claude_names as cn
from nyzhi.tools.claude_permissions import claude_permission_rules, map_rules
from nyzhi.tools.gates import TrustPolicy, command_denied
from nyzhi.tools.registry import default_registry

# The names the issue lists as reported unknown on every run before.
NAMED_IN_ISSUE = ("Agent", "Task", "SendMessage", "TaskCreate", "TaskGet", "TaskList",
                  "TaskUpdate", "TeamCreate", "TeamDelete", "ExitPlanMode")


def test_every_mapped_name_is_a_real_tool():
    ours = set(default_registry().names()) | {"web_search"}  # with a [web_search] backend
    mapped = {v for v in cn.CLAUDE_TOOLS.values() if v is not None}
    assert mapped <= ours, mapped - ours
    for name in NAMED_IN_ISSUE:
        assert cn.ours(name) in ours, name


def test_lookup_ignores_case_and_separators_and_keeps_other_names():
    assert cn.ours("multi_edit") == "multi_edit" and cn.ours("MultiEdit") == "multi_edit"
    assert cn.ours("LS") == "list_dir" and cn.ours("todowrite") == "todowrite"
    assert cn.ours("mcp__github__create_issue") == "mcp__github__create_issue"
    assert cn.ours("semantic_search") == "semantic_search"  # ours, kept
    assert cn.ours("CronCreate") is None and cn.is_documented("CronCreate")
    assert cn.ours("NotebookEdit") == "notebook_edit"
    assert set(cn.claude_names_for("spawn_agent")) == {"Agent", "Task"}
    # issue 51 (and 56's TaskOutput): background shells
    assert cn.ours("BashOutput") == cn.ours("TaskOutput") == "bash_output"
    assert cn.ours("KillShell") == cn.ours("KillBash") == cn.ours("TaskStop") == "kill_shell"
    assert cn.ours("bash_output") == "bash_output" and cn.ours("kill_shell") == "kill_shell"


def test_hook_matchers_use_the_same_table():
    spec = HookSpec("pre_tool_use", "true", tool_pattern="Agent|TaskCreate|LS",
                    claude_event="PreToolUse")
    assert spec.matches("spawn_agent", []) and spec.matches("task_create", [])
    assert spec.matches("list_dir", []) and not spec.matches("bash", [])
    shells = HookSpec("pre_tool_use", "true", tool_pattern="BashOutput|KillShell",
                      claude_event="PreToolUse")
    assert shells.matches("bash_output", []) and shells.matches("kill_shell", [])
    assert not shells.matches("bash", [])


def test_a_role_file_with_claude_names_gets_our_tools_and_one_notice_per_content(
        tmp_path, home):
    path = tmp_path / ".claude" / "agents" / "lead.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\nname: lead\ntools: Agent, TaskCreate, SendMessage, Read, "
                    "CronCreate, Monitor\n---\nLead the team.\n")
    role, notes = load_role_file(path, tmp_path)
    assert role.allowed_tools == ("spawn_agent", "task_create", "send_team_message", "read")
    assert len(notes) == 1 and "CronCreate, Monitor" in notes[0]
    assert load_role_file(path, tmp_path)[1] == []  # the same content: said already
    path.write_text(path.read_text() + "\nChanged.\n")
    assert len(load_role_file(path, tmp_path)[1]) == 1  # changed: said again


def test_deny_rules_map_onto_the_trust_rules(tmp_path):
    home = tmp_path / "home"
    mapped = map_rules("deny", ["Bash(npm run deploy:*)", "Bash(curl *)", "Read(./.env)",
                                "Edit(//etc/hosts)", "Read(~/.aws/**)", "Write(**/*.pem)",
                                "WebFetch", "Edit", "NotebookEdit", "mcp__github",
                                "WebFetch(domain:example.com)"], home=home)
    assert mapped.deny_commands == ("npm run deploy", "npm run deploy *", "curl *")
    assert mapped.deny_paths == (".env", "/etc/hosts", f"{home}/.aws/**", "*.pem")
    assert mapped.deny_tools == ("web_fetch", "edit", "multi_edit", "apply_patch",
                                 "batch_apply", "instrument", "remove_instrumentation",
                                 "notebook_edit", "mcp__github__*")
    assert mapped.unexpressed == ("WebFetch(domain:example.com)",)
    cmds = mapped.deny_commands
    assert command_denied("npm run deploy", cmds) and command_denied("npm run deploy --prod", cmds)
    assert command_denied("ls && curl https://x", cmds)
    assert not command_denied("npm run deployer", cmds) and not command_denied("npm test", cmds)


def test_allow_and_ask_rules_name_tools_or_are_reported(tmp_path):
    allow = map_rules("allow", ["Bash", "Read", "mcp__fs", "Bash(npm test:*)"], home=tmp_path)
    assert allow.auto_approve == ("bash", "read", "mcp__fs__*")
    assert allow.unexpressed == ("Bash(npm test:*)",)
    ask = map_rules("ask", ["Write", "Edit(src/**)", "not a rule("], home=tmp_path)
    assert ask.always_ask == ("write",)
    assert ask.unexpressed == ("Edit(src/**)", "not a rule(")


def test_both_settings_files_join_and_unexpressed_rules_are_said_once(tmp_path, home):
    ws = tmp_path / "ws"
    write_settings(ws, {"deny": ["Bash(rm:*)"], "allow": ["Bash(make:*)"]})
    write_settings(ws, {"deny": ["Read(secrets/**)"], "ask": ["Bash"]}, local=True)
    added, notes = claude_permission_rules(ws)
    sources = dict(added.pop("rule_sources"))
    assert added == {"deny_commands": ("rm", "rm *"), "deny_paths": ("secrets/**",),
                     "always_ask": ("bash",)}
    assert sources["deny_commands:rm *"] == ".claude/settings.json permissions.deny Bash(rm:*)"
    assert sources["deny_paths:secrets/**"] == (
        ".claude/settings.local.json permissions.deny Read(secrets/**)")
    assert len(notes) == 1 and "settings.json" in notes[0] and "allow: Bash(make:*)" in notes[0]
    assert claude_permission_rules(ws)[1] == []  # once per file content
    policy = TrustPolicy(deny_commands=("git push*",))
    from nyzhi.tools.claude_permissions import with_claude_permissions

    merged, _ = with_claude_permissions(policy, ws)
    assert merged.deny_commands == ("git push*", "rm", "rm *")  # the config's rules kept
    # a refusal names where its rule came from
    assert merged.source_of("deny_commands", "rm *").endswith("permissions.deny Bash(rm:*)")
    assert merged.source_of("deny_commands", "git push*") == "agent.trust.deny_commands"


def test_malformed_settings_are_notes_not_failures(tmp_path, home):
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".claude" / "settings.json").write_text("{not json")
    (ws / ".claude" / "settings.local.json").write_text('{"permissions": {"deny": "Bash"}}')
    added, notes = claude_permission_rules(ws)
    assert added == {}
    assert any("settings.json: not valid JSON" in n for n in notes)
    assert any("permissions.deny should be a list of strings" in n for n in notes)
